package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/mongosim"
)

// Two processes on one --dbpath: the second is refused at start-up with
// mongod's DBPathInUse and exit status 100, naming the lock file and the
// holder's pid, and writes nothing; once the first has exited, a new one
// starts on the same dbpath. A SIGKILLed holder leaves no lock behind.
func TestSecondProcessOnADBPathIsRefused(t *testing.T) {
	dbpath := filepath.Join(t.TempDir(), "db")
	ports := freePorts(t, 4)
	first := &member{port: ports[0], dbpath: dbpath}
	first.start(t)
	defer first.kill()
	lockPath := filepath.Join(dbpath, mongosim.LockFileName)
	if b, _ := os.ReadFile(lockPath); strings.TrimSpace(string(b)) != strconv.Itoa(first.cmd.Process.Pid) {
		t.Errorf("%s holds %q, want the first member's pid %d", lockPath, b, first.cmd.Process.Pid)
	}

	var stderr bytes.Buffer
	second := exec.Command(binary, "--replSet", "rs0", "--port", fmt.Sprint(ports[1]), "--bind_ip", "127.0.0.1", "--dbpath", dbpath)
	second.Stderr = &stderr
	code := exitWithin(t, second, 60*time.Second)
	msg := stderr.String()
	if code != 100 || !strings.Contains(msg, "DBPathInUse") || !strings.Contains(msg, lockPath) ||
		!strings.Contains(msg, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		t.Errorf("second process on %s: exit %d, stderr %q; want 100 and DBPathInUse naming %s and pid %d",
			dbpath, code, msg, lockPath, first.cmd.Process.Pid)
	}
	if b, _ := os.ReadFile(lockPath); strings.TrimSpace(string(b)) != strconv.Itoa(first.cmd.Process.Pid) {
		t.Errorf("the refused process rewrote %s: %q", lockPath, b)
	}

	// The first member shuts down cleanly (SIGTERM): it empties its lock
	// file, as mongod does, and a new process takes the dbpath.
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	waitExited(t, first.cmd)
	if b, err := os.ReadFile(lockPath); err != nil || len(b) != 0 {
		t.Errorf("after a clean shutdown %s holds %q (%v), want it empty", lockPath, b, err)
	}
	next := &member{port: ports[2], dbpath: dbpath}
	next.start(t)
	defer next.kill()
	if b, _ := os.ReadFile(lockPath); strings.TrimSpace(string(b)) != strconv.Itoa(next.cmd.Process.Pid) {
		t.Errorf("after the first exited, %s holds %q, want the new member's pid %d", lockPath, b, next.cmd.Process.Pid)
	}

	// SIGKILLed, it leaves its pid in the file but no lock: the kernel
	// drops a dead process's flock, so the dbpath is free again.
	next.kill()
	waitExited(t, next.cmd)
	last := &member{port: ports[3], dbpath: dbpath}
	last.start(t)
	defer last.kill()
}

// exitWithin runs cmd and returns its exit status, failing the test if it
// has not exited within d.
func exitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running after %v", cmd.Args, d)
		return -1
	}
}

// waitExited waits (generously) until the process of cmd is gone; the
// member's own goroutine reaps it.
func waitExited(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(cmd.Process.Pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d did not exit", cmd.Process.Pid)
}
