package depcheck_test

import (
	"testing"

	"github.com/qmlsab/qmlsab/internal/depcheck"
)

const module = "github.com/qmlsab/qmlsab/"

// The experiment's client side talks to any server over the wire: the
// workload's driver, the collectors and the arms compile without the
// simulator (only the embedded target and the virtual engine run it).
func TestClientSideDoesNotCompileTheSimulator(t *testing.T) {
	for _, pkg := range []string{module + "workload", module + "collect", module + "arms/..."} {
		depcheck.Forbid(t, pkg, module+"mongosim")
	}
}

// The query shape both sides share is a leaf: importing it pulls in
// neither side nor a database driver.
func TestQueryShapeIsALeaf(t *testing.T) {
	depcheck.Forbid(t, module+"internal/queryshape", module+"mongosim", module+"workload", module+"run",
		module+"store", module+"internal/bsoncheck", "go.mongodb.org")
}

// The plan is the lowest package of the experiment layer: the run layer
// makes plans and the results store checks and merges the folders of
// one, so it depends on neither, nor on anything above them, nor on the
// simulator or a database driver.
func TestPlanIsTheLowestExperimentPackage(t *testing.T) {
	depcheck.Forbid(t, module+"plan", module+"store", module+"run", module+"metric", module+"report", module+"arms", module+"workload",
		module+"target", module+"collect", module+"sweep", module+"mongosim", module+"internal", "go.mongodb.org")
}

// Library errors name their own fields (internal/field), never a
// command's flags: the package that carries them, which libraries of
// every layer import, imports none of them.
func TestFieldErrorsAreALeaf(t *testing.T) {
	depcheck.Forbid(t, module+"internal/field", module+"plan", module+"store", module+"run", module+"metric", module+"report", module+"arms",
		module+"workload", module+"target", module+"collect", module+"sweep", module+"mongosim", module+"ftdcimport", module+"cmd")
}
