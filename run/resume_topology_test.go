package run

import (
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// A resumed run keeps the topology it was started with: --resume alone
// brings it back, and another one is refused, as another clock is.
func TestResumeKeepsTheRunsTopology(t *testing.T) {
	m := store.Manifest{Seed: 7, Topology: arms.TopologySharded}
	cfg, err := resumeConditions(Config{Dir: "r", Resume: true}, m)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Topology != arms.TopologySharded {
		t.Errorf("resumed topology %q, want %q from the manifest", cfg.Topology, arms.TopologySharded)
	}
	if _, err := resumeConditions(Config{Dir: "r", Resume: true, Topology: arms.TopologyReplicaSet}, m); err == nil ||
		!strings.Contains(err.Error(), "Config.Topology replset: r was started with Config.Topology sharded") {
		t.Errorf("resuming a sharded run as a replica set: %v; want a refusal naming both", err)
	}
	if _, err := resumeConditions(Config{Dir: "r", Resume: true, Topology: arms.TopologySharded}, store.Manifest{Seed: 7}); err == nil {
		t.Error("resuming a run of each arm's own topology with --topology sharded was accepted")
	}
}
