//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/opencount"
	"github.com/qmlsab/qmlsab/store"
)

// qmlsab run --resume reads the run folder once: the manifest is opened
// once (for the arms, the conditions, the summary, the trial table and
// the verdict alike), each finished trial.json at most once.
func TestResumeOpensTheManifestOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "-n", "2", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	markUnfinished(t, dir, "E", 2)
	finished := []string{store.TrialDir(dir, "D", 1), store.TrialDir(dir, "E", 1), store.TrialDir(dir, "D", 2)}
	w, err := opencount.New(append([]string{dir}, finished...)...)
	if err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	out, code := qmlsab(t, "run", "--resume", dir)
	opens, werr := w.Opens()
	if code != 0 || werr != nil {
		t.Fatalf("resume: exit %d (%v)\n%s", code, werr, out)
	}
	if !strings.Contains(out, "1 of 4 trials left") || !strings.Contains(out, "E#2") {
		t.Errorf("the resume's output:\n%s", out)
	}
	if n := opens[filepath.Join(dir, store.ManifestFile)]; n != 1 {
		t.Errorf("qmlsab run --resume opened the manifest %d times, want once", n)
	}
	for _, d := range finished {
		if n := opens[filepath.Join(d, store.TrialFile)]; n > 1 {
			t.Errorf("qmlsab run --resume opened %s %d times, want at most once", filepath.Join(d, store.TrialFile), n)
		}
	}
}
