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
