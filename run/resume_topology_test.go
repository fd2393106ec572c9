package run

import (
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// A resumed run keeps the topology it was started with: a resume that
// states none brings it back, and another one is refused, as another
// clock is.
func TestResumeKeepsTheRunsTopology(t *testing.T) {
	m := store.Manifest{Seed: 7, Topology: arms.TopologySharded}
	e := Experiment{topology: m.Topology}
	if err := checkStated("r", e, m, Exec{}, Given{}); err != nil {
		t.Fatal(err)
	}
	replset, sharded := arms.TopologyReplicaSet, arms.TopologySharded
	if err := checkStated("r", e, m, Exec{}, Given{Topology: &replset}); !isField(err, FieldTopology) ||
		!strings.Contains(err.Error(), FieldTopology+" replset: r was started with "+FieldTopology+" sharded") {
		t.Errorf("resuming a sharded run as a replica set: %v; want a refusal naming both", err)
	}
	if err := checkStated("r", Experiment{}, store.Manifest{Seed: 7}, Exec{}, Given{Topology: &sharded}); err == nil {
		t.Error("resuming a run of each arm's own topology with the sharded topology was accepted")
	}
}
