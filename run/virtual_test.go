package run

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// A virtual trial's files must say what the model did: the counts and
// availability computed from the recorded files equal the model's own
// accounting for the same seed, and the samples carry the storm's
// signature (D's queue departures include kills, E's are all admissions).
func TestVirtualTrialRecordsWhatTheModelDid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	sel, err := arms.Select([]string{"D", "E"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 10 * time.Second, Storm: 60 * time.Second, Recovery: 20 * time.Second}
	spec.SpillToDisk = &w
	cfg := trialRun{Spec: Spec{Arms: sel, N: 1, Workload: spec, Seed: 7, Clock: store.ClockVirtual, Sim: mongosim.SimOptions{CPUs: 8}, SimMemLimitMB: 32 << 10},
		Exec: Exec{ToolVersion: "test"}, Dir: dir}
	exp := cfg.experiment(t)
	out, err := Run(context.Background(), exp, dir, cfg.Exec)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Run
	if !r.Manifest.Simulated || r.Manifest.Clock != store.ClockVirtual {
		t.Errorf("manifest simulated=%v clock=%q, want true and virtual", r.Manifest.Simulated, r.Manifest.Clock)
	}
	for i, a := range sel {
		tr := r.Trials[a.Name][0]
		if !tr.Simulated || tr.Clock != store.ClockVirtual {
			t.Errorf("%s: simulated=%v clock=%q", a.Name, tr.Simulated, tr.Clock)
		}
		vt, err := virtual.Run(context.Background(), exp.virtualConfig(cfg.Seed+uint64(i), time.Second), a)
		if err != nil {
			t.Fatal(err)
		}
		want := vt.Tally
		avail := 0.0
		if want.Canaries > 0 {
			avail = float64(want.CanaryOK) / float64(want.Canaries)
		}
		m := tr.Metrics
		for _, c := range []struct {
			name string
			got  float64
			want float64
		}{
			{"availability", m["availability"], avail},
			{"storm_completed", m["storm_completed"], float64(want.StormCompleted)},
			{"storm_shed", m["storm_shed"], float64(want.StormShed)},
			{"storm_killed", m["storm_killed"], float64(want.StormKilled)},
			{"storm_failed", m["storm_failed"], float64(want.StormFailed)},
			{"restarts", m["restarts"], float64(want.Restarts)},
			{"failovers", m["failovers"], float64(want.Failovers)},
		} {
			if c.got != c.want {
				t.Errorf("%s %s: files say %v, the model counted %v", a.Name, c.name, c.got, c.want)
			}
		}
		if tr.Phases["recovery"]-tr.Phases["storm"] != 60 {
			t.Errorf("%s: storm phase %v s, want 60 model seconds", a.Name, tr.Phases["recovery"]-tr.Phases["storm"])
		}
		if m["read_tickets_min"] >= 128 || m["admissions_per_s"] <= 0 {
			t.Errorf("%s: the storm left no mark on the samples: %v", a.Name, m)
		}
	}
	// The model's census: in E's storm, queued ops hold tracked memory.
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(store.TrialDir(dir, "E", 1), store.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	var maxQueued, maxTracked float64
	for _, smp := range samples {
		if smp.Primary {
			maxQueued = max(maxQueued, smp.Values[collect.CensusQueued])
			maxTracked = max(maxTracked, smp.Values[collect.CensusTrackedBytes])
		}
	}
	if maxQueued == 0 || maxTracked < 1<<30 {
		t.Errorf("E's census: max queued %v, max tracked %v bytes; want a queue holding GiBs", maxQueued, maxTracked)
	}
	// Events: the three phases in order, and D's kills.
	dDir := store.TrialDir(dir, "D", 1)
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(dDir, store.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var phases []store.Phase
	kills := 0
	for _, ev := range events {
		switch ev.Kind {
		case store.EventPhase:
			phases = append(phases, ev.Phase)
		case store.EventKill:
			kills++
		}
	}
	if !slices.Equal(phases, store.Phases) || kills == 0 {
		t.Errorf("D's events: phases %v, %d kills", phases, kills)
	}
	// Per-second outcomes add up to the trial's ops, histograms included.
	secs, err := store.ReadJSONLinesGz[store.OutcomeSecond](filepath.Join(dDir, store.OutcomesFile))
	if err != nil {
		t.Fatal(err)
	}
	var ops, hist int
	for _, s := range secs {
		for _, n := range s.Storm {
			ops += n
		}
		for _, n := range s.StormLatency {
			hist += n
		}
	}
	dm := r.Trials["D"][0].Metrics
	if total := int(dm["storm_completed"] + dm["storm_shed"] + dm["storm_killed"] + dm["storm_failed"] + dm["storm_unsupported"] + dm["storm_unfinished"]); ops != total || hist != total {
		t.Errorf("outcomes per second count %d ops (histograms %d), the trial %d", ops, hist, total)
	}
	d, e := r.Trials["D"][0].Metrics, r.Trials["E"][0].Metrics
	if d["storm_killed"] <= 0 || d["server_sheds_per_s"] != 0 {
		t.Errorf("D: the killOp actor killed nothing, or its server shed (queue kills/s %v, killed %v, actor kills/s %v, server sheds/s %v)",
			d["kills_per_s"], d["storm_killed"], d["actor_kills_per_s"], d["server_sheds_per_s"])
	}
	if e["kills_per_s"] != 0 || e["storm_shed"] <= 0 || e["server_sheds_per_s"] <= 0 || e["actor_kills_per_s"] != 0 {
		t.Errorf("E: want departures all admissions and server sheds only; kills/s %v shed %v server sheds/s %v actor kills/s %v",
			e["kills_per_s"], e["storm_shed"], e["server_sheds_per_s"], e["actor_kills_per_s"])
	}
	// The primaries' lives are in trial.json: one that ends in a crash
	// names the queue holding the most memory at its end.
	for _, l := range r.Trials["E"][0].PrimaryLives {
		if l.Cause == store.LifeCrashed && l.HeaviestQueue == "" {
			t.Errorf("E: a life that ended in a crash names no queue: %+v", l)
		}
	}
	for _, arm := range []string{"D", "E"} {
		tr := r.Trials[arm][0]
		if want := 1 + int(tr.Metrics["failovers"]); len(tr.PrimaryLives) != want {
			t.Errorf("%s: %d primary lives, %v failovers; want one life more than failovers", arm, len(tr.PrimaryLives), tr.Metrics["failovers"])
		}
	}
}
