package store

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/plan"
)

// mergeWithin runs MergeShards and fails the test if it has not returned
// within a generous deadline (a merge that opened a named pipe would
// wait for a writer forever).
func mergeWithin(t *testing.T, ctx context.Context, o MergeOptions) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := MergeShards(ctx, o)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("merge of %v did not return within 60 s (blocked opening a file?)", o.Dirs)
		return nil
	}
}

// assertNothingWritten fails if out exists or a merge's temporary folder
// is left beside it.
func assertNothingWritten(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (%v)", out, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".merging-*"))
	if len(left) > 0 {
		t.Errorf("temporary folders left beside --out: %v", left)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".building.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the building lock beside --out is left (%v)", err)
	}
}

// Merge copies regular files and folders only: a trial folder, an arm
// folder or a file that is a symbolic link (relative or absolute), a
// named pipe, a socket or a device is refused by name, promptly (never
// opened: a pipe would block), and nothing is written.
func TestMergeRefusesWhatIsNotARegularFile(t *testing.T) {
	cases := []struct {
		name string
		// plant changes shard 1 (dir) and returns the path to be named.
		plant func(t *testing.T, dir string) string
		want  string
	}{
		{"trial folder as a relative symlink", func(t *testing.T, dir string) string {
			trial := TrialDir(dir, "D", 1)
			must(t, os.Rename(trial, filepath.Join(dir, "elsewhere")))
			must(t, os.Symlink(filepath.Join("..", "elsewhere"), trial))
			return trial
		}, "a symbolic link (to ../elsewhere)"},
		{"trial folder as an absolute symlink", func(t *testing.T, dir string) string {
			trial := TrialDir(dir, "E", 3)
			away := filepath.Join(t.TempDir(), "away")
			must(t, os.Rename(trial, away))
			must(t, os.Symlink(away, trial))
			return trial
		}, "a symbolic link (to " + "/"},
		{"arm folder as a symlink", func(t *testing.T, dir string) string {
			arm := filepath.Dir(TrialDir(dir, "D", 1))
			away := filepath.Join(t.TempDir(), "D")
			must(t, os.Rename(arm, away))
			must(t, os.Symlink(away, arm))
			return arm
		}, "a symbolic link"},
		{"trial.json as a symlink", func(t *testing.T, dir string) string {
			f := filepath.Join(TrialDir(dir, "D", 1), TrialFile)
			away := filepath.Join(t.TempDir(), TrialFile)
			must(t, os.Rename(f, away))
			must(t, os.Symlink(away, f))
			return f
		}, "a symbolic link"},
		{"a named pipe beside trial.json", func(t *testing.T, dir string) string {
			p := filepath.Join(TrialDir(dir, "E", 1), "extra.jsonl.gz")
			must(t, syscall.Mkfifo(p, 0o644))
			return p
		}, "a named pipe (FIFO)"},
		{"trial.json as a named pipe", func(t *testing.T, dir string) string {
			p := filepath.Join(TrialDir(dir, "E", 1), TrialFile)
			must(t, os.Remove(p))
			must(t, syscall.Mkfifo(p, 0o644))
			return p
		}, "a named pipe (FIFO)"},
		{"manifest.json as a named pipe", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, ManifestFile)
			must(t, os.Remove(p))
			must(t, syscall.Mkfifo(p, 0o644))
			return p
		}, "a named pipe (FIFO)"},
		{"a socket in a trial", func(t *testing.T, dir string) string {
			p := filepath.Join(TrialDir(dir, "D", 3), "s")
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Skipf("cannot make a unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
			return p
		}, "a socket"},
		{"a device in a trial", func(t *testing.T, dir string) string {
			p := filepath.Join(TrialDir(dir, "D", 3), "null")
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
				t.Skipf("cannot make a device node here (%v)", err)
			}
			return p
		}, "a character device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			s1 := writeShard(t, root, 1, 2, 4, nil)
			s2 := writeShard(t, root, 2, 2, 4, nil)
			bad := c.plant(t, s1)
			out := filepath.Join(root, "merged")
			err := mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out})
			if err == nil || !strings.Contains(err.Error(), bad+" is "+c.want) {
				t.Errorf("merge: %v; want a refusal naming %s as %s", err, bad, c.want)
			}
			assertNothingWritten(t, out)
		})
	}
}

// The copy itself (across file systems, where no hard link can be made)
// refuses a pipe put in a file's place after the check, without waiting
// for a writer.
func TestCopyFileRefusesANamedPipeWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p")
	must(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() { done <- copyFile(context.Background(), fifo, filepath.Join(dir, "copy")) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe") {
			t.Errorf("copyFile of a pipe: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("copyFile blocked on a named pipe")
	}
	link := filepath.Join(dir, "l")
	must(t, os.Symlink(fifo, link))
	if err := copyFile(context.Background(), link, filepath.Join(dir, "copy2")); err == nil {
		t.Error("copyFile followed a symbolic link")
	}
}

// A merge whose context ends mid-copy (the CLI cancels it on SIGINT,
// SIGTERM and SIGHUP) removes the folder it was building.
func TestMergeCancelledMidCopyLeavesNothing(t *testing.T) {
	root := t.TempDir()
	s1 := writeShard(t, root, 1, 2, 4, nil)
	s2 := writeShard(t, root, 2, 2, 4, nil)
	out := filepath.Join(root, "merged")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	copied := 0
	var building string
	mergeCopied = func(path string) {
		copied++
		if copied == 2 {
			building = path
			cancel()
		}
	}
	defer func() { mergeCopied = nil }()
	err := mergeWithin(t, ctx, MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("merge cancelled mid-copy: %v; want context.Canceled", err)
	}
	if building == "" || !strings.Contains(building, ".merged.merging-") {
		t.Fatalf("the hook saw no file copied into a temporary folder (%q)", building)
	}
	if _, err := os.Stat(building); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copied file %s is left (%v)", building, err)
	}
	assertNothingWritten(t, out)

	// The same shards merge whole once nothing stops the merge.
	mergeCopied = nil
	if err := mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out}); err != nil {
		t.Fatalf("merge after the cancelled one: %v", err)
	}
}

// A copy across file systems stops between chunks when its context ends
// and the partial copy goes with the temporary folder.
func TestCopyFileStopsWhenItsContextEnds(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big")
	must(t, os.WriteFile(src, make([]byte, 3*copyChunk), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := copyFile(ctx, src, filepath.Join(dir, "copy")); !errors.Is(err, context.Canceled) {
		t.Errorf("copyFile with an ended context: %v", err)
	}
	if err := copyFile(context.Background(), src, filepath.Join(dir, "copy2")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "copy2")); fi == nil || fi.Size() != 3*copyChunk {
		t.Errorf("copy of %d bytes: %v", 3*copyChunk, fi)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The plan digest is recomputed, not trusted: shards whose seed was
// edited consistently (both manifests, so their trials' seeds and block
// orders follow the new seed) but that keep the old digest are refused,
// naming the manifest; so is a whole plan edited the same way.
func TestMergeRecomputesThePlanDigest(t *testing.T) {
	root := t.TempDir()
	reseed := func(m *Manifest) { m.Seed = 77 }
	s1 := writeShard(t, root, 1, 2, 4, reseed)
	s2 := writeShard(t, root, 2, 2, 4, reseed)
	out := filepath.Join(root, "merged")
	err := mergeWithin(t, context.Background(), MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: out})
	if want := filepath.Join(s1, ManifestFile) + ": its plan digest"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("merge of reseeded shards: %v; want %q", err, want)
	}
	assertNothingWritten(t, out)

	for name, edit := range map[string]func(*Manifest){
		"n":        func(m *Manifest) { m.Plan.Units = 5 },
		"arms":     func(m *Manifest) { m.Plan.Arms = []string{"E", "D"} },
		"clock":    func(m *Manifest) { m.Clock = ClockWall },
		"workload": func(m *Manifest) { m.Workload = []byte(`{"name":"w","kind":"spill_to_disk","x":1}`) },
	} {
		m := Manifest{Workload: []byte(`{"name":"w","kind":"spill_to_disk"}`), Seed: 3, Clock: ClockVirtual, Plan: &Plan{Units: 4, Arms: []string{"D", "E"}}}
		m.Plan.Digest, _ = plan.Digest(plan.Conditions{Workload: m.Workload, Clock: string(m.Clock)}, m.Seed, plan.Units(m.Plan.Arms, 4, m.Seed))
		if err := m.CheckPlan("run"); err != nil {
			t.Fatalf("an unedited plan: %v", err)
		}
		edit(&m)
		if err := m.CheckPlan("run"); err == nil || !strings.Contains(err.Error(), filepath.Join("run", ManifestFile)) {
			t.Errorf("another %s with the old digest: %v; want a refusal naming run/manifest.json", name, err)
		}
	}
}
