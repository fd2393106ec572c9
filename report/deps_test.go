package report

import (
	"testing"

	"github.com/qmlsab/qmlsab/internal/depcheck"
)

// Rendering a report from files needs the results schema and the metric
// registry, not the simulator, the engines or a database driver.
func TestReportDependsOnlyOnResults(t *testing.T) {
	const m = "github.com/qmlsab/qmlsab/"
	depcheck.Forbid(t, m+"report", m+"mongosim", m+"run", m+"target", m+"workload", m+"collect", m+"arms",
		"go.mongodb.org/mongo-driver/v2/mongo", "go.mongodb.org/mongo-driver/v2/x")
}
