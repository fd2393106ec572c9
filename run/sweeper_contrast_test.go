package run

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// The sweeper investigation's contrast on the wall clock, over the wire,
// in under a minute: members of 12 GiB (a 2 GiB baseline) under a short
// storm at 150 queries/s. The inline shedder alone (E) lets the
// low-priority queue's memory grow until the primary is OOM-killed; the
// killOp actor (D) and the sweeper (F) keep the primary alive.
func TestWallClockShowsTheSweeperContrast(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 8 * time.Second, Recovery: 2 * time.Second}
	w.StormRate = 150
	spec.SpillToDisk = &w
	var list []arms.Arm
	for _, n := range []string{"D", "E", "F"} {
		a, _ := arms.Lookup(n)
		list = append(list, a)
	}
	dir := filepath.Join(t.TempDir(), "wall")
	start := time.Now()
	sim := EmbeddedSim()
	sim.BaselineMB = 2 << 10
	if _, err := Execute(context.Background(), Config{Arms: list, N: 1, Workload: spec, Dir: dir, Seed: 1, Clock: Wall, Parallel: 1,
		Sim: sim, SimMemLimitMB: 12 << 10, ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range r.Manifest.Trials {
		if ts.Status != store.Valid {
			t.Fatalf("%s#%d: %s (%s)", ts.Arm, ts.Index, ts.Status, ts.Reason)
		}
	}
	m := func(arm, name string) float64 { return r.Trials[arm][0].Metrics[name] }
	if m("E", metric.Restarts) < 1 {
		t.Errorf("E: %v restarts, peak RSS %.1f GiB; the inline shedder alone should let the queue's memory OOM-kill the primary", m("E", metric.Restarts), m("E", metric.RSSPeakBytes)/(1<<30))
	}
	for _, arm := range []string{"D", "F"} {
		if m(arm, metric.Restarts) != 0 || m(arm, metric.Failovers) != 0 {
			t.Errorf("%s: %v restarts, %v failovers; the actor and the sweeper keep the primary alive", arm, m(arm, metric.Restarts), m(arm, metric.Failovers))
		}
	}
	t.Logf("E restarts %v; D and F peak RSS %.1f and %.1f GiB; %v wall", m("E", metric.Restarts), m("D", metric.RSSPeakBytes)/(1<<30), m("F", metric.RSSPeakBytes)/(1<<30), time.Since(start).Round(time.Second))
}
