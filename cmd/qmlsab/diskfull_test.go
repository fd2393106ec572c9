package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// Issue 35: the trial being written when the results disk filled was
// saved invalid, so --resume never ran it again and the resumed run ended
// with 4 of 5 valid trials per arm, exit 0. The run the disk stops exits
// 1 naming --resume; once the disk has room, --resume completes n valid
// trials per arm.
func TestRunStoppedByAFullDiskExits1AndResumesToN(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	os.MkdirAll(mnt, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); run: TestResultsDiskFullLeavesTheTrialToResume covers the same with an injected ENOSPC", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	dir := filepath.Join(mnt, "run")
	out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "5", "--clock", "virtual", "--parallel", "1", "--out", dir)
	if code != 1 || !strings.Contains(out, "no space left on device") || !strings.Contains(out, "qmlsab run --resume "+dir) {
		t.Fatalf("the run the disk stopped: exit %d, want 1 naming the error and --resume:\n%s", code, out)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	if out, code := qmlsab(t, "run", "--resume", dir); code != 0 {
		t.Fatalf("resume once the disk has room: exit %d\n%s", code, out)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		if n := len(r.Valid(arm)); n != 5 {
			t.Errorf("%s: %d valid trials after the resume, want 5", arm, n)
		}
	}
}
