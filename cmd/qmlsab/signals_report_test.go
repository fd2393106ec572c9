package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// reportFiles are the files report --format html,json,perf,bench,md
// writes, by name.
var reportFiles = []string{"report.html", "summary.json", "perf.json", "bench.txt", "summary.md"}

// reportState is what a report left in dir: the outputs there (name →
// content) and any temporary file of a write.
func reportState(t *testing.T, dir string) (outputs map[string]string, temps []string) {
	t.Helper()
	outputs = map[string]string{}
	for _, name := range reportFiles {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			outputs[name] = string(b)
		}
	}
	temps, _ = filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	return outputs, temps
}

// checkWhole holds a report's outputs to being all there and whole.
func checkWhole(t *testing.T, outputs map[string]string) {
	t.Helper()
	if len(outputs) != len(reportFiles) {
		t.Fatalf("%d of the %d outputs there: %v", len(outputs), len(reportFiles), keys(outputs))
	}
	for _, name := range []string{"summary.json", "perf.json"} {
		if !json.Valid([]byte(outputs[name])) {
			t.Errorf("%s is not whole JSON", name)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(outputs["report.html"]), "</html>") {
		t.Error("report.html is not whole")
	}
}

// cancelOnLine is an output that cancels a context once a line holding
// trigger is written: a signal at that point, as interruptContext turns
// it into the command's context's cancellation (synchronously here, so
// the report sees it at its next step).
type cancelOnLine struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	cancel  context.CancelCauseFunc
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.trigger) {
		w.cancel(errors.New("interrupted by SIGTERM"))
	}
	return len(p), nil
}

// reportInterruptedAt runs report in this process and interrupts it at
// the first line holding trigger.
func reportInterruptedAt(t *testing.T, trigger string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	app := newApp()
	out := &cancelOnLine{trigger: trigger, cancel: cancel}
	app.Writer, app.ErrWriter = out, out
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.RunContext(ctx, append([]string{"qmlsab", "report"}, args...))
	var ec cli.ExitCoder
	if !errors.As(err, &ec) {
		return out.buf.String(), 0
	}
	return out.buf.String() + err.Error(), ec.ExitCode()
}

// Issue 35: report had no interrupt handling (SIGPIPE 141 with only
// report.html written, SIGTERM 143). A report interrupted before its
// outputs are in place exits 130 and leaves nothing of itself: the
// outputs of an earlier report are as they were, no temporary file is
// left. Interrupted once they are in place, it exits 130 with every
// output whole, and adds nothing to the history.
func TestReportInterruptedLeavesNoMixOfOutputs(t *testing.T) {
	tmp := t.TempDir()
	wl := nightlyWorkload(t, tmp, 150)
	run := filepath.Join(tmp, "night")
	quickRun(t, wl, run, 43)
	all := "--format=html,json,perf,bench,md"

	// Before the outputs: a fresh --out stays empty (not even made) …
	fresh := filepath.Join(tmp, "fresh")
	out, code := reportInterruptedAt(t, "qmlsab report: ", all, "--out", fresh, run)
	if code != exitInterrupted || !strings.Contains(out, "interrupted by SIGTERM; nothing written") {
		t.Fatalf("interrupted at the start: exit %d, want %d saying nothing was written:\n%s", code, exitInterrupted, out)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out after a report interrupted before its outputs: %v, want none", err)
	}
	// … and an earlier report's outputs stay as they were.
	if out, code := qmlsab(t, "report", all, run); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	before, _ := reportState(t, run)
	checkWhole(t, before)
	stamp := time.Now().Add(-time.Hour)
	for _, name := range reportFiles {
		os.Chtimes(filepath.Join(run, name), stamp, stamp)
	}
	if _, code := reportInterruptedAt(t, "qmlsab report: ", all, "--baseline", "E", run); code != exitInterrupted {
		t.Fatalf("interrupted at the start: exit %d, want %d", code, exitInterrupted)
	}
	after, temps := reportState(t, run)
	for _, name := range reportFiles {
		fi, err := os.Stat(filepath.Join(run, name))
		if err != nil || after[name] != before[name] || !fi.ModTime().Equal(stamp) {
			t.Errorf("%s changed although the report was interrupted before writing", name)
		}
	}
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}

	// Once the outputs are in place: every one whole, the history not
	// added to.
	placed := filepath.Join(tmp, "placed")
	db := filepath.Join(tmp, "h.db")
	out, code = reportInterruptedAt(t, "wrote ", all, "--out", placed, "--history", "--history-db", db, run)
	if code != exitInterrupted || !strings.Contains(out, "its outputs were written whole") || !strings.Contains(out, "not added to the history") {
		t.Fatalf("interrupted after the outputs: exit %d, want %d saying what was written and not added:\n%s", code, exitInterrupted, out)
	}
	outputs, temps := reportState(t, placed)
	checkWhole(t, outputs)
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the history after an interrupted report --history: %v, want none made", err)
	}
}

// The report binary with its standard output closed (qmlsab report … |
// head -0) exits 130, not 141, and writes nothing: its first line meets
// the closed pipe before any output is written.
func TestReportWithItsOutputClosedExits130WritingNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	tmp := t.TempDir()
	run := filepath.Join(tmp, "night")
	quickRun(t, nightlyWorkload(t, tmp, 150), run, 44)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	out := filepath.Join(tmp, "out")
	cmd := exec.Command(qmlsabBinary(t), "report", "--format", "html,json,perf,bench,md", "--out", out, run)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	if code := exitCode(err); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "standard output or error closed (SIGPIPE)") || !strings.Contains(stderr.String(), "nothing written") {
		t.Errorf("the message does not say why it stopped and what it left:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out after the report met a closed output: %v, want none", err)
	}
}

// blockedOutput is a pipe for a child's standard output, already full, so
// that the child's first line blocks in write(2) until the test reads.
func blockedOutput(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil { // blocking ends
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "read"), os.NewFile(uintptr(fds[1]), "write")
	size, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096)
	if err != nil {
		t.Skipf("cannot size a pipe here: %v", err)
	}
	if _, err := w.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// writingToStdout reports whether a thread of process pid is blocked in
// write(2) on its standard output (/proc/PID/task/*/syscall).
func writingToStdout(pid int) bool {
	calls, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, c := range calls {
		if b, err := os.ReadFile(c); err == nil && strings.HasPrefix(string(b), fmt.Sprintf("%d 0x1 ", unix.SYS_WRITE)) {
			return true
		}
	}
	return false
}

// SIGTERM while the report binary is running (held at its first line,
// after its signal handling is set up, by a full standard output): exit
// 130, not 143, and what it leaves is one of the two states the report
// promises, never a mix: no output and no temporary file, or every
// output whole.
func TestReportOnSIGTERMExits130LeavingNoPartialOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	tmp := t.TempDir()
	run := filepath.Join(tmp, "night")
	quickRun(t, nightlyWorkload(t, tmp, 150), run, 45)
	r, w := blockedOutput(t)
	out := filepath.Join(tmp, "out")
	cmd := exec.Command(qmlsabBinary(t), "report", "--format", "html,json,perf,bench,md", "--out", out, run)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(2 * time.Minute)
	for !writingToStdout(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Skip("the report was never seen blocked writing its first line (no /proc/PID/task/*/syscall here?)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var stdout bytes.Buffer
	done := make(chan struct{})
	go func() { stdout.ReadFrom(r); close(done) }()
	code := exitCode(cmd.Wait())
	<-done
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted by SIGTERM") {
		t.Errorf("the message does not say why it stopped:\n%s", stderr.String())
	}
	outputs, temps := reportState(t, out)
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
	if len(outputs) > 0 {
		checkWhole(t, outputs)
	}
	t.Logf("stopped with %d outputs in place:\n%s", len(outputs), stderr.String())
}
