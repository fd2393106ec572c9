package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/stormtest"
)

func TestOpenReadOnlyNeverCreates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nowhere", "history.db")
	st, err := OpenReadOnly(ctx, path)
	if !errors.Is(err, ErrNoHistory) || !strings.Contains(fmt.Sprint(err), path) {
		t.Fatalf("OpenReadOnly of a missing file = %v, %v; want ErrNoHistory naming %s", st, err, path)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reader created the folder %s: %v", filepath.Dir(path), err)
	}
}

// A reader of a closed history, in a folder it may not write, reads it
// and leaves no file behind, and cannot add. As root, permissions do not
// bite: then what is asserted is that no file appears and Add is refused
// by the store itself.
func TestReadOnlyLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	path := makeHistory(t, 3)
	dir := filepath.Dir(path)
	before, snap := stormtest.DirEntries(t, dir), fileSnapshot(t, path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	st, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly in a read-only folder: %v", err)
	}
	l, err := st.List(ctx, Filter{})
	if err != nil || len(l) != 3 {
		t.Fatalf("List = %v, %v; want 3 nights", l, err)
	}
	pts, err := st.Series(ctx, "ops/s", "shed", Filter{})
	if err != nil || len(pts) != 3 {
		t.Fatalf("Series = %v, %v; want 3 nights", pts, err)
	}
	if _, err := st.Add(ctx, sampleRun("new", 9, "master", "find")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Add on a read-only store = %v; want ErrReadOnly", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if after := stormtest.DirEntries(t, dir); !slices.Equal(after, before) {
		t.Fatalf("the folder held %v before the reader and %v after", before, after)
	}
	if after := fileSnapshot(t, path); after != snap {
		t.Fatalf("the reader changed the history: %s, then %s", snap, after)
	}
}

// While a writer has the history open, a reader sees its committed runs
// through the writer's WAL and adds no file of its own.
func TestReadOnlyBesideAWriter(t *testing.T) {
	ctx := context.Background()
	path := makeHistory(t, 2)
	w := mustOpen(t, path)
	defer w.Close()
	mustAdd(t, w, sampleRun("live", 5, "master", "find"))
	before := stormtest.DirEntries(t, filepath.Dir(path))
	if !slices.Contains(before, "history.db-wal") {
		t.Fatalf("a writer's folder holds %v; want its -wal file", before)
	}
	st, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.List(ctx, Filter{})
	st.Close()
	if err != nil || len(l) != 3 || l[2].ID != "live" {
		t.Fatalf("List beside a writer = %v, %v; want r0, r1, live", ids(l, summaryID), err)
	}
	if after := stormtest.DirEntries(t, filepath.Dir(path)); !slices.Equal(after, before) {
		t.Fatalf("the folder held %v before the reader and %v after", before, after)
	}
}

func TestPartialRunsAreMarked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s := mustOpen(t, path)
	p := sampleRun("p", 1, "master", "find")
	p.Partial = true
	mustAdd(t, s, p)
	mustAdd(t, s, sampleRun("whole", 2, "master", "find"))
	l, err := s.List(ctx, Filter{})
	if err != nil || len(l) != 2 || !l[0].Partial || l[1].Partial {
		t.Fatalf("List = %+v, %v; want p partial, whole not", l, err)
	}
	if r, err := s.Get(ctx, "p"); err != nil || !r.Partial {
		t.Fatalf("Get(p) = %+v, %v; want partial", r.Partial, err)
	}
	if added, err := s.Add(ctx, p); added || err != nil {
		t.Fatalf("re-adding the partial run = %v, %v; want a no-op", added, err)
	}
	s.Close()
}

func TestCheckedRefusesWhatMatchesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	w := mustOpen(t, path)
	mustAdd(t, w, sampleRun("a", 1, "master", "find"))
	mustAdd(t, w, sampleRun("b", 2, "feat", "agg"))
	w.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	st := Checked(ro, []string{"ops/s", "known_but_unstored"})
	for _, c := range []struct {
		name string
		read func() error
		want []string
	}{
		{"label value", func() error {
			_, err := st.List(ctx, Filter{Labels: map[string]string{"branch": "mster"}})
			return err
		}, []string{"branch=mster", "branch=master", "branch=feat", "ci.job=nightly"}},
		{"label key", func() error {
			_, err := st.Runs(ctx, Filter{Labels: map[string]string{"brnch": "master"}})
			return err
		}, []string{"brnch=master", "branch=master"}},
		{"workload", func() error {
			_, err := st.List(ctx, Filter{Workload: "fnd"})
			return err
		}, []string{`"fnd"`, "agg, find"}},
		{"combination", func() error {
			_, err := st.List(ctx, Filter{Workload: "agg", Labels: map[string]string{"branch": "master"}})
			return err
		}, []string{"workload agg and label branch=master"}},
		{"arm", func() error {
			_, err := st.Series(ctx, "ops/s", "Q", Filter{})
			return err
		}, []string{`"Q"`, "base, shed"}},
		{"arm of other nights", func() error {
			_, err := st.Effects(ctx, "ops/s", "shed", Filter{Workload: "nope"})
			return err
		}, []string{`"nope"`}},
		{"metric", func() error {
			_, err := st.Series(ctx, "foo", "shed", Filter{})
			return err
		}, []string{`"foo"`, "ops/s, known_but_unstored"}},
		{"effect metric", func() error {
			_, err := st.Effects(ctx, "foo", "shed", Filter{})
			return err
		}, []string{`"foo"`}},
	} {
		err := c.read()
		if !errors.Is(err, ErrUnknown) {
			t.Errorf("%s: err = %v; want ErrUnknown", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
	// What exists passes: a stored metric, a known one not stored yet, a
	// stored label and workload.
	if pts, err := st.Series(ctx, "latency.p99_ms", "shed", Filter{Labels: map[string]string{"branch": "feat"}}); err != nil || len(pts) != 1 {
		t.Errorf("Series of a stored metric = %v, %v", pts, err)
	}
	if pts, err := st.Series(ctx, "known_but_unstored", "shed", Filter{}); err != nil || len(pts) != 0 {
		t.Errorf("Series of a known metric not stored = %v, %v; want none, no error", pts, err)
	}
	if l, err := st.List(ctx, Filter{Workload: "find", Last: 1}); err != nil || len(l) != 1 {
		t.Errorf("List of a stored workload = %v, %v", l, err)
	}
	runs, err := st.Runs(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckNames(runs, []string{"shed"}, []string{"$oom", "ops/s"}, nil); err != nil {
		t.Errorf("CheckNames of stored names: %v", err)
	}
	if err := CheckNames(runs, []string{"Q"}, nil, nil); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `"Q"`) {
		t.Errorf("CheckNames of arm Q = %v", err)
	}
	if err := CheckNames(runs, nil, []string{"foo"}, []string{"bar"}); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "bar") {
		t.Errorf("CheckNames of metric foo = %v", err)
	}
}
