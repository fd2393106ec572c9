package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// files are the paths below root, relative to it, sorted.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// The writer of a run folder, holding its lock, removes what a writer
// killed mid-write left there: the manifest's and the trial files'
// temporaries. Nothing else: not a report's temporaries (qmlsab report
// holds no lock, so one may be alive), not files of other names, not a
// folder of a temporary's name, and nothing in a folder that is no run.
func TestRemoveStaleTemporariesRemovesOnlyAKilledWritersFiles(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir)
	trial := TrialDir(dir, "D", 1)
	stale := []string{".manifest.json.tmp1234567", filepath.Join("D", "trial-1", ".trial.json.tmp42"),
		filepath.Join("D", "trial-1", ".samples.jsonl.gz.tmp9"), filepath.Join("E", "trial-1", ".events.jsonl.gz.tmp3")}
	kept := []string{".report.html.tmp77", ".manifest.json.tmpx", "notes.txt", ".trial.json.tmp5", filepath.Join("D", "trial-1", ".manifest.json.tmp6"),
		filepath.Join("D", "trial-1", "x.trial.json.tmp8")}
	for _, f := range append(slices.Clone(stale), kept...) {
		must(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	must(t, os.Mkdir(filepath.Join(trial, ".trial.json.tmp11"), 0o755))
	kept = append(kept, filepath.Join("D", "trial-1", ".trial.json.tmp11"))
	before := files(t, dir)

	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveStaleTemporaries(); err != nil {
		t.Fatal(err)
	}
	l.Release()
	var want []string
	for _, f := range before {
		if !slices.Contains(stale, f) {
			want = append(want, f)
		}
	}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("after RemoveStaleTemporaries the folder holds %q, want %q", got, want)
	}

	// A folder that is no run (no manifest, other files) is left alone; a
	// new run's folder killed at its first manifest is cleaned.
	notRun := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notRun, "notes.txt"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(notRun, ".manifest.json.tmp1"), nil, 0o644))
	newRun := t.TempDir()
	must(t, os.WriteFile(filepath.Join(newRun, ".manifest.json.tmp2"), nil, 0o644))
	for _, c := range []struct {
		dir  string
		want []string
	}{{notRun, []string{".manifest.json.tmp1", "notes.txt"}}, {newRun, nil}} {
		l, err := Acquire(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.RemoveStaleTemporaries(); err != nil {
			t.Fatal(err)
		}
		l.Release()
		if got := files(t, c.dir); !slices.Equal(got, c.want) {
			t.Errorf("%s holds %q, want %q", c.dir, got, c.want)
		}
	}
}

// A merge killed outright (SIGKILL) leaves the folder it was building
// beside --out; the next merge into --out removes it (and an import's),
// and nothing else beside --out.
func TestMergeRemovesTheFolderAKilledMergeLeft(t *testing.T) {
	root := t.TempDir()
	s1 := writeShard(t, root, 1, 2, 2, nil)
	s2 := writeShard(t, root, 2, 2, 2, nil)
	out := filepath.Join(root, "merged")
	for _, left := range []string{".merged.merging-123456", ".merged.import-99"} {
		must(t, os.MkdirAll(filepath.Join(root, left, "D", "trial-1"), 0o755))
		must(t, os.WriteFile(filepath.Join(root, left, "D", "trial-1", TrialFile), []byte("{}"), 0o644))
	}
	others := []string{".merged.merging-x", ".other.merging-1", ".merged.building"}
	for _, o := range others {
		must(t, os.Mkdir(filepath.Join(root, o), 0o755))
	}
	if err := mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append([]string{"merged", "shard-1", "shard-2"}, others...)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("beside --out after the merge: %q, want %q (the killed merge's and import's folders gone, the lock released)", names, want)
	}
}

// A merge into --out while another process builds --out is refused,
// naming the holder, and the other's folder is left alone: a folder
// being built is never taken for a killed builder's.
func TestMergeLeavesALiveMergesFolderAlone(t *testing.T) {
	root := t.TempDir()
	s1 := writeShard(t, root, 1, 2, 2, nil)
	s2 := writeShard(t, root, 2, 2, 2, nil)
	out := filepath.Join(root, "merged")
	live := filepath.Join(root, ".merged.merging-424242")
	must(t, os.MkdirAll(filepath.Join(live, "D"), 0o755))
	// The other merge: its lock, held (a separate open file, as another
	// process's would be).
	lock := filepath.Join(root, ".merged.building.lock")
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	_, err = f.WriteString("4242\n")
	must(t, err)

	err = mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out})
	if err == nil || !strings.Contains(err.Error(), "is being built by another process: pid 4242 holds .merged.building.lock") {
		t.Errorf("a merge beside a live one: %v; want a refusal naming pid 4242", err)
	}
	if _, err := os.Stat(filepath.Join(live, "D")); err != nil {
		t.Errorf("the live merge's folder: %v; want it untouched", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v)", out, err)
	}

	// Its builder gone (the flock dropped with it), the folder it left is
	// stale: the next merge removes it and merges.
	f.Close()
	if err := mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("the dead merge's folder after the next merge: %v; want it removed", err)
	}
}
