package mongosim_test

import (
	"testing"

	"github.com/qmlsab/qmlsab/internal/depcheck"
)

// The simulator stands below the experiment: nothing under mongosim
// imports the layer that runs experiments on it.
func TestSimulatorDoesNotDependOnTheExperiment(t *testing.T) {
	const m = "github.com/qmlsab/qmlsab/"
	depcheck.Forbid(t, "github.com/qmlsab/qmlsab/mongosim/...", m+"arms", m+"workload", m+"run", m+"report", m+"store", m+"plan", m+"metric", m+"collect", m+"target")
}
