package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// markUnfinished sets trials of a finished run back to interrupted and
// removes their folders, as a run killed before them leaves it.
func markUnfinished(t *testing.T, dir string, arm string, index int) {
	t.Helper()
	m, err := store.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range m.Trials {
		if ts.Arm == arm && ts.Index == index {
			m.Trials[i].Status, m.Trials[i].Reason, m.Trials[i].Host = store.Interrupted, "", ""
		}
	}
	if err := os.RemoveAll(store.TrialDir(dir, arm, index)); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// Issue 35: a run started with an arms file that redefines D (no killOp
// actor) and resumed without the file ran D#2–3 as the built-in D, and
// report pooled both as one D. A resume runs the arms the manifest
// records: without the file every D trial is the file's D; naming the
// built-in D (--arms D,E without the file) is refused naming the arm and
// its actors; a custom arm resumes without its file (no "unknown arm").
func TestResumeWithoutTheArmsFileRunsTheRecordedArms(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "arms.yaml")
	doc := "arms:\n  - name: D\n    description: D without its actor\n    build: 472d159296b6\n  - name: X\n    build: mine\n    setParameters: {queryMemoryLoadSheddingLowMarkPercent: 30, queryMemoryLoadSheddingHighMarkPercent: 70}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	if out, code := qmlsab(t, "run", "--arms-file", file, "--arms", "D,X,E", "--n", "3", "--clock", "virtual", "--profile", "quick", "--seed", "5", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	for _, arm := range []string{"D", "X", "E"} {
		markUnfinished(t, dir, arm, 2)
		markUnfinished(t, dir, arm, 3)
	}
	before, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile))

	out, code := qmlsab(t, "run", "--resume", dir, "--arms", "D,X,E")
	if code != 1 || !strings.Contains(out, "unknown arm \"X\"") || !strings.Contains(out, "leave --arms out") {
		t.Errorf("resume naming X without its file: exit %d, want 1 and the way out:\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "only-x.yaml"), []byte("arms:\n  - name: X\n    build: mine\n    setParameters: {queryMemoryLoadSheddingLowMarkPercent: 30, queryMemoryLoadSheddingHighMarkPercent: 70}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = qmlsab(t, "run", "--resume", dir, "--arms-file", filepath.Join(tmp, "only-x.yaml"), "--arms", "D,X,E")
	if code != 1 || !strings.Contains(out, "--arms: arm D is not the arm") || !strings.Contains(out, "actors: recorded (none), given killop{") {
		t.Errorf("resume with the built-in D: exit %d, want 1 naming arm D and its actors:\n%s", code, out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile)); string(after) != string(before) {
		t.Error("a refused resume changed the manifest")
	}

	out, code = qmlsab(t, "run", "--resume", dir)
	if code != 0 {
		t.Fatalf("resume without the arms file: exit %d\n%s", code, out)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "X", "E"} {
		if n := len(r.Valid(arm)); n != 3 {
			t.Errorf("%s: %d valid trials, want 3", arm, n)
		}
	}
	for _, tr := range r.Trials["D"] {
		if killed := tr.Metrics["storm_killed"]; killed != 0 {
			t.Errorf("D#%d killed %v ops: it ran the built-in D's actor, not the D the run started with", tr.Index, killed)
		}
	}
	// The file given again resumes too (nothing left to run).
	if out, code := qmlsab(t, "run", "--resume", dir, "--arms-file", file); code != 0 {
		t.Errorf("resume with the run's own arms file: exit %d\n%s", code, out)
	}
}
