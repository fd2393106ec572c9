package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

func quickConfig(t *testing.T, dir string, n int) trialRun {
	sel, err := arms.Select([]string{"D", "E"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: time.Second, Storm: 3 * time.Second, Recovery: time.Second}
	w.StormRate, w.CanaryRate = 15, 10
	w.ServerSelectionTimeout = 10 * time.Second
	return trialRun{Spec: Spec{Arms: sel, N: n, Workload: spec, Seed: 1, Clock: store.ClockWall,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 100}, SimMemLimitMB: 4096},
		Exec: Exec{SampleInterval: 250 * time.Millisecond, ToolVersion: "test", CommandLine: []string{"qmlsab", "run", "--arms", "D,E"}}, Dir: dir}
}

func TestRunWritesInterleavedValidTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	onlyUnderRace(t)
	dir := filepath.Join(t.TempDir(), "run")
	var buf stormtest.SyncBuffer
	cfg := quickConfig(t, dir, 2)
	cfg.Progress = progress.Lines(&buf)
	if _, err := cfg.run(t, context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ts := range r.Manifest.Trials {
		order = append(order, ts.Arm+string(rune('0'+ts.Index)))
		if ts.Status != store.Valid {
			t.Errorf("trial %s#%d: %s %s", ts.Arm, ts.Index, ts.Status, ts.Reason)
		}
	}
	// Repetition blocks: each arm once per block, in the plan's order.
	if len(order) != 4 || order[0][1:] != "1" || order[1][1:] != "1" || order[0] == order[1] || order[2][1:] != "2" || order[3][1:] != "2" || order[2] == order[3] {
		t.Errorf("trial order %v, want blocks of D and E: trial 1 of each, then trial 2 of each", order)
	}
	if r.Manifest.Plan == nil || len(r.Manifest.Hosts) != 1 || r.Manifest.Trials[0].Host != r.Manifest.Hosts[0].ID {
		t.Errorf("manifest plan %+v hosts %+v trial %+v: want the plan and the host that ran each trial", r.Manifest.Plan, r.Manifest.Hosts, r.Manifest.Trials[0])
	}
	if !r.Manifest.Simulated {
		t.Error("a run on the embedded target must say it is simulated")
	}
	for _, arm := range []string{"D", "E"} {
		if len(r.Trials[arm]) != 2 {
			t.Fatalf("%s: %d trials read back", arm, len(r.Trials[arm]))
		}
		for _, tr := range r.Trials[arm] {
			for _, k := range []string{"availability", "failovers", "restarts", "read_tickets_median", "rss_peak_bytes", "storm_completed", "canary_p99_ms"} {
				if _, ok := tr.Metrics[k]; !ok {
					t.Errorf("%s#%d lacks metric %s: %v", arm, tr.Index, k, tr.Metrics)
				}
			}
			if !tr.Simulated {
				t.Errorf("%s#%d not marked simulated", arm, tr.Index)
			}
			for _, f := range []string{"samples.jsonl.gz", "storm.jsonl.gz", "canaries.jsonl.gz", "events.jsonl.gz"} {
				if _, err := os.Stat(filepath.Join(store.TrialDir(dir, arm, tr.Index), f)); err != nil {
					t.Errorf("%s#%d: %v", arm, tr.Index, err)
				}
			}
		}
	}
	// The $currentOp census saw the storm on the primary.
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(store.TrialDir(dir, "E", 1), "samples.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var sawStorm bool
	for _, smp := range samples {
		if smp.Up && smp.Primary && smp.Values[collect.CensusStagePrefix+"$setWindowFields"] > 0 && smp.Values[collect.CensusRunning] > 0 {
			sawStorm = true
		}
	}
	if !sawStorm {
		t.Error("no primary sample's census shows a running $setWindowFields")
	}
	if strings.Count(buf.String(), "valid") != 4 {
		t.Errorf("progress lines:\n%s", buf.String())
	}
	if _, err := quickConfig(t, dir, 2).run(t, context.Background()); err == nil || !strings.Contains(err.Error(), "already holds a run") || !isField(err, FieldDir) {
		t.Errorf("a second run into the same folder: %v", err)
	}
}

func TestInterruptedRunResumesToExactlyNTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := quickConfig(t, dir, 2)
	cfg.Parallel = 1
	ctx, cancel := context.WithCancel(context.Background())
	var buf stormtest.SyncBuffer
	cfg.Progress = progress.Lines(&buf)
	go func() { // Ctrl-C once the first trial has finished
		for !strings.Contains(buf.String(), "D#1: valid") {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	_, err := cfg.run(t, ctx)
	var stopped *Stopped
	if !errors.As(err, &stopped) || !stopped.Interrupted || stopped.Dir != dir {
		t.Fatalf("interrupted run: %v", err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	valid := stormtest.ValidTrials(r)
	if valid < 1 || valid > 2 {
		t.Fatalf("%d valid trials after the interrupt, want the finished ones (1 or 2)", valid)
	}
	before, err := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	// Another clock, profile, n or parallelism than the run's is refused,
	// naming the field, before anything is written.
	virtual, quick, three, nine := store.ClockVirtual, "quick", 3, uint64(9)
	for f, change := range map[string]func(*Exec, *Given){
		FieldClock:    func(_ *Exec, g *Given) { g.Clock = &virtual },
		FieldProfile:  func(_ *Exec, g *Given) { g.Profile = &quick },
		FieldN:        func(_ *Exec, g *Given) { g.N = &three },
		FieldParallel: func(x *Exec, _ *Given) { x.Parallel = 2 },
		FieldSeed:     func(_ *Exec, g *Given) { g.Seed = &nine },
	} {
		x, g := quickConfig(t, dir, 2).Exec, Given{}
		change(&x, &g)
		if _, err := Resume(context.Background(), dir, x, g); err == nil || !strings.HasPrefix(err.Error(), f+" ") || !isField(err, f) {
			t.Errorf("resume with another %s: %v, want a refusal naming it", f, err)
		}
	}
	if _, err := Resume(context.Background(), dir, Exec{Parallel: -1}, Given{}); !isField(err, FieldParallel) {
		t.Errorf("resume with a negative parallelism: %v, want a refusal naming it", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile)); string(after) != string(before) {
		t.Error("a refused resume changed the manifest")
	}
	// No clock, profile or n stated: the run's own (the wall clock here,
	// while the default clock is virtual).
	if _, err := quickConfig(t, dir, 2).resume(context.Background(), Given{}); err != nil {
		t.Fatal(err)
	}
	r, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		if n := stormtest.TrialsOnce(t, r, arm); n != 2 {
			t.Fatalf("%s: %d valid trials after resume, want exactly 2", arm, n)
		}
		for _, tr := range r.Trials[arm] {
			if tr.Clock != store.ClockWall {
				t.Errorf("%s#%d ran on the %s clock after the resume of a wall-clock run", arm, tr.Index, tr.Clock)
			}
		}
	}
}

// The command line a manifest records keeps no password, whether a URI is
// an argument of its own or a flag's value, in any case, malformed or not.
func TestRecordedCommandLineHidesPasswords(t *testing.T) {
	args := []string{"qmlsab", "run", "mongodb://bob:S3cretPW@h:1/", "--history-db=MONGODB://bob:S3cretPW@h:1/",
		"--x=mongodb:bob:S3cretPW@h", "mongodb+srv://bob:S3cretPW@h/", "--arms", "D"}
	got := strings.Join(redactArgs(args), " ")
	if strings.Contains(got, "S3cretPW") {
		t.Errorf("recorded command line %q holds the password", got)
	}
	if !strings.Contains(got, "--arms D") || !strings.Contains(got, "--history-db=") {
		t.Errorf("recorded command line %q lost what is not secret", got)
	}
}
