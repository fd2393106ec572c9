package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// otherFilesystemDir is a temporary folder on another filesystem than
// dir's when the machine has one (a tmpfs at /dev/shm), so that a merge
// from it copies instead of linking; "" when there is none.
func otherFilesystemDir(t *testing.T, dir string) string {
	t.Helper()
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat("/dev/shm", &b) != nil || a.Dev == b.Dev {
		return ""
	}
	d, err := os.MkdirTemp("/dev/shm", "qmlsab-merge-signal-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// mergingFolders are the merge's temporary folders beside out.
func mergingFolders(out string) []string {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".merging-*"))
	return m
}

// SIGHUP in the middle of a merge's copy (the process is stopped while
// its temporary folder exists and --out does not, then signalled and
// continued): exit 130, and neither --out nor the temporary folder with
// the data copied so far is left.
func TestMergeOnSIGHUPMidCopyLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := qmlsabBinary(t)
	tmp := t.TempDir()
	src := otherFilesystemDir(t, tmp)
	if src == "" {
		src = tmp
	}
	wl := nightlyWorkload(t, tmp, 150)
	var shards []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(src, fmt.Sprintf("shard-%d", i))
		quickRun(t, wl, d, 31, "--shard", fmt.Sprintf("%d/2", i))
		shards = append(shards, d)
	}
	// A large file in a finished trial's folder widens the copy to the
	// tens of milliseconds in which the test can catch it.
	pad := filepath.Join(shards[0], "D", "trial-1", "padding.bin")
	if err := os.WriteFile(pad, make([]byte, 96<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	const attempts = 8
	for attempt := 1; attempt <= attempts; attempt++ {
		out := filepath.Join(tmp, fmt.Sprintf("merged-%d", attempt))
		p := startQmlsab(t, bin, append([]string{"merge", "--expect", "2", "--out", out}, shards...)...)
		caught := false
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if len(mergingFolders(out)) > 0 {
				p.cmd.Process.Signal(syscall.SIGSTOP)
				_, err := os.Stat(out)
				caught = len(mergingFolders(out)) > 0 && errors.Is(err, os.ErrNotExist)
				break
			}
			if _, err := os.Stat(out); err == nil {
				break // finished before the test saw it start
			}
			time.Sleep(time.Millisecond)
		}
		if !caught {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.finish(false)
			continue
		}
		p.cmd.Process.Signal(syscall.SIGHUP)
		p.cmd.Process.Signal(syscall.SIGCONT)
		code := p.finish(false)
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
		}
		if left := mergingFolders(out); len(left) > 0 {
			t.Errorf("the merge's temporary folder is left: %v", left)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--out after the interrupted merge: %v; want none", err)
		}
		if !strings.Contains(p.stderr.String(), "interrupted by SIGHUP") && !strings.Contains(p.stderr.String(), "merge stopped") {
			t.Errorf("the message does not say why the merge stopped:\n%s", p.stderr.String())
		}
		t.Logf("caught mid-copy on attempt %d:\n%s", attempt, p.stderr.String())
		return
	}
	t.Skipf("in %d attempts the merge never was caught mid-copy (this host copies too fast)", attempts)
}
