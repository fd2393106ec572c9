//go:build linux

package run

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/qmlsab/qmlsab/internal/opencount"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// A resume reads its folder once: it opens the manifest once (it takes
// the experiment, the conditions, the arms and the plan from that one
// read) and each finished trial's trial.json at most once, and what it
// hands back (the outcome) is what it read and wrote, not a second read.
func TestResumeReadsItsManifestOnce(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := trialRun{Spec: Spec{Arms: planArms(t, "D", "E"), N: 2, Workload: spec, Profile: "quick", Seed: 3, Clock: store.ClockVirtual},
		Exec: Exec{Parallel: 1, ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}, Dir: dir}
	if _, err := cfg.run(t, context.Background()); err != nil {
		t.Fatal(err)
	}
	unfinish(t, dir, "D#2", "E#2")
	finished := []string{store.TrialDir(dir, "D", 1), store.TrialDir(dir, "E", 1)}
	w, err := opencount.New(append([]string{dir}, finished...)...)
	if err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	out, err := cfg.resume(context.Background(), Given{})
	opens, werr := w.Opens()
	if err != nil || werr != nil {
		t.Fatal(err, werr)
	}
	if n := opens[filepath.Join(dir, store.ManifestFile)]; n != 1 {
		t.Errorf("the resume opened its manifest %d times, want once", n)
	}
	for _, d := range finished {
		if n := opens[filepath.Join(d, store.TrialFile)]; n > 1 {
			t.Errorf("the resume opened %s %d times, want at most once", filepath.Join(d, store.TrialFile), n)
		}
	}
	for _, arm := range []string{"D", "E"} {
		if got := out.Run.Valid(arm); len(got) != 2 || got[0].Index != 1 || got[1].Index != 2 {
			t.Errorf("the outcome's valid %s trials: %+v; want #1 (read) and #2 (written)", arm, got)
		}
	}
	back, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		for i, tr := range back.Trials[arm] {
			if got := out.Run.Trials[arm][i]; got.Index != tr.Index || got.Metrics[metric.Availability] != tr.Metrics[metric.Availability] {
				t.Errorf("%s#%d: the outcome's trial differs from the folder's", arm, tr.Index)
			}
		}
	}
}
