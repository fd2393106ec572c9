package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// A new run goes into a new or empty folder: a folder holding other files
// and no run is refused before any trial, naming it, and left as it was.
func TestNewRunRefusesAFolderThatHoldsOtherFiles(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := trialRun{Spec: Spec{Arms: planArms(t, "D", "E"), N: 1, Workload: spec, Profile: "quick", Seed: 9, Clock: store.ClockVirtual},
		Exec: Exec{ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}, Dir: dir}
	_, err := cfg.run(t, context.Background())
	if err == nil || !isField(err, FieldDir) || !strings.Contains(err.Error(), FieldDir+" "+dir+" exists and is not empty (it holds notes.txt)") || !strings.Contains(err.Error(), "not a run") {
		t.Fatalf("a run into a folder of other files: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"notes.txt"}) {
		t.Errorf("the refused run changed the folder: %v", names)
	}
}

// The digest a new run records is the one its manifest's plan gives when
// recomputed (store.CheckPlan), also once written and read back; an edit
// of the seed keeping the digest is caught, and such a run is not resumed.
func TestARunsPlanDigestRecomputesFromItsManifest(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	cfg := trialRun{Spec: Spec{Arms: planArms(t, "A", "D", "E"), N: 3, Workload: spec, Profile: "quick", Seed: 9, Clock: store.ClockVirtual},
		Exec: Exec{ToolVersion: "test", Shard: plan.Shard{Index: 1, Count: 2}}, Dir: t.TempDir()}
	m, err := newManifest(cfg.experiment(t), cfg.Exec)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckPlan(cfg.Dir); err != nil {
		t.Fatalf("a new run's plan: %v", err)
	}
	// As written to manifest.json and read back (re-indented workload).
	if err := store.WriteJSON(filepath.Join(cfg.Dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	back, err := store.ReadManifest(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.CheckPlan(cfg.Dir); err != nil {
		t.Fatalf("a new run's plan read back: %v", err)
	}
	m.Seed++
	if err := m.CheckPlan(cfg.Dir); err == nil || !strings.Contains(err.Error(), filepath.Join(cfg.Dir, store.ManifestFile)) {
		t.Errorf("a reseeded manifest with the old digest: %v", err)
	}

	// Resuming the reseeded run is refused, naming its manifest, before
	// any trial.
	if err := store.WriteJSON(filepath.Join(cfg.Dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	x := Exec{ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}
	if _, err := Resume(context.Background(), cfg.Dir, x, Given{Arms: cfg.Arms}); err == nil || !strings.Contains(err.Error(), filepath.Join(cfg.Dir, store.ManifestFile)+": its plan digest") {
		t.Errorf("resuming a reseeded run: %v", err)
	}
}

// A writer SIGKILLed mid-write leaves its temporaries (.manifest.json.tmp*
// and a trial file's); the next writer of the folder (run --resume)
// removes them, and leaves a report's, which no lock guards.
func TestResumeRemovesWhatAKilledWriterLeft(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	cfg := trialRun{Spec: Spec{Arms: planArms(t, "D"), N: 1, Workload: spec, Profile: "quick", Seed: 9, Clock: store.ClockVirtual},
		Exec: Exec{ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}, Dir: t.TempDir()}
	if _, err := cfg.run(t, context.Background()); err != nil {
		t.Fatal(err)
	}
	stale := []string{filepath.Join(cfg.Dir, ".manifest.json.tmp2718281828"), filepath.Join(store.TrialDir(cfg.Dir, "D", 1), ".samples.jsonl.gz.tmp31415")}
	report := filepath.Join(cfg.Dir, ".report.html.tmp1618")
	for _, p := range append(slices.Clone(stale), report) {
		if err := os.WriteFile(p, []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cfg.resume(context.Background(), Given{Arms: cfg.Arms}); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after the resume: %v; want it removed", p, err)
		}
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("a report's temporary after the resume: %v; want it left", err)
	}
}

// Experiment.RunID is the id the run's manifest records: under a stamp,
// the stamp and the plan's digest (what a caller names the folder after);
// an Exec.RunID given is kept as it is. A stamp's seed is the stamp's own.
func TestNewRunIDIsTheManifestsRunID(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	cfg := trialRun{Spec: Spec{Arms: planArms(t, "D", "E"), N: 2, Workload: spec, Profile: "quick", Seed: StampSeed("night-3"), Clock: store.ClockVirtual},
		Exec: Exec{ToolVersion: "test", RunStamp: "night-3"}, Dir: t.TempDir()}
	e := cfg.experiment(t)
	id, err := e.RunID("night-3", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m, err := newManifest(e, cfg.Exec)
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != id || !store.RunIDOf(id, "night-3") {
		t.Errorf("RunID %s, the manifest's run id %s; want one id of stamp night-3", id, m.RunID)
	}
	cfg.RunID = "mine-1"
	if m, err = newManifest(e, cfg.Exec); err != nil || m.RunID != "mine-1" {
		t.Errorf("Exec.RunID mine-1: the manifest records %q (%v)", m.RunID, err)
	}
	if StampSeed("night-3") != StampSeed("night-3") || StampSeed("night-3") == StampSeed("night-4") || StampSeed("night-3") == 0 {
		t.Error("a stamp's seed is not its own")
	}
}
