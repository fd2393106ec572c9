package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// buildQmlsab is this command as a binary, built once for the package.
func buildQmlsab(t testing.TB) string {
	t.Helper()
	return qmlsabBinary(t)
}

// qmlsab SIGKILLed in the middle of a trial leaves a run that --resume
// completes with exactly n valid trials per arm and no duplicate; the dead
// writer's lock is taken over.
func TestSIGKILLedRunResumesToExactlyN(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := buildQmlsab(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--arms", "D,E", "--n", "3", "--profile", "long", "--parallel", "1", "--out", dir)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		// The first trial is done and the second has started: kill now.
		if strings.Contains(sc.Text(), "E#1: started") {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			break
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatal("the run ended before it could be killed")
	}
	if _, err := os.Stat(filepath.Join(dir, "run.lock")); err != nil {
		t.Fatalf("a SIGKILLed writer leaves its lock behind: %v", err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatalf("the killed run is unreadable: %v", err)
	}
	valid := stormtest.ValidTrials(r)
	if valid < 1 || valid >= 6 {
		t.Fatalf("%d valid trials after the kill, want the finished ones only", valid)
	}
	// A report of the broken-off run reads only its finished trials.
	if out, err := exec.Command(bin, "report", "--format", "json", dir).CombinedOutput(); err != nil {
		t.Fatalf("report of a killed run: %v\n%s", err, out)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !strings.Contains(string(sum), "unfinished (run interrupted or still writing)") {
		t.Errorf("the report does not say trials are unfinished:\n%.1500s", sum)
	}
	start := time.Now()
	out, err := exec.Command(bin, "run", "--resume", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if strings.Count(string(out), ": started") != 6-valid {
		t.Errorf("resume ran %d trials, want the %d missing:\n%s", strings.Count(string(out), ": started"), 6-valid, out)
	}
	r, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		if n := stormtest.TrialsOnce(t, r, arm); n != 3 {
			t.Errorf("%s: %d valid trials, want 3", arm, n)
		}
	}
	t.Logf("killed after %d valid trials; resume completed the run in %s", valid, time.Since(start).Round(time.Millisecond))
}

// A virtual trial at the largest storm a workload may ask for runs within
// the stated memory bound, and Ctrl-C (SIGINT) or SIGTERM during a trial
// stops the run within a second, keeps the finished trial and names the
// command that completes the run.
func TestLargestVirtualTrialIsBoundedAndInterruptible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the largest accepted trial")
	}
	bin := buildQmlsab(t)
	wl := filepath.Join(t.TempDir(), "largest.yaml")
	if err := os.WriteFile(wl, []byte(fmt.Sprintf("name: largest\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: %d\n  phases: {warmup: 10s, storm: %ds, recovery: 10s}\n",
		workload.MaxStormRate, workload.MaxStormOps/workload.MaxStormRate)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := filepath.Join(t.TempDir(), "run")
		// E's whole trial at the largest storm, then D's (the killOp actor
		// makes it the slowest) is interrupted mid-storm.
		cmd := exec.Command(bin, "run", "--workload", wl, "--arms", "E,D", "--n", "1", "--parallel", "1", "--out", dir)
		var out, stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var sent time.Time
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sent.IsZero() && strings.Contains(sc.Text(), "D#1: storm") {
				cmd.Process.Signal(sig)
				sent = time.Now()
			}
		}
		err := cmd.Wait()
		stopped := time.Since(sent)
		if sent.IsZero() {
			t.Fatalf("%v: the run ended before D's storm:\n%s", sig, out.String())
		}
		// Generous, for a busy machine, yet short of the trial's remaining
		// storm and recovery: the run stopped rather than finishing.
		if err == nil || stopped > 10*time.Second {
			t.Errorf("%v: exit %v %v after the signal; want a non-zero exit, promptly", sig, err, stopped)
		}
		if !strings.Contains(stderr.String(), "qmlsab run --resume "+dir) {
			t.Errorf("%v: the output does not name the resume command:\n%s%s", sig, out.String(), stderr.String())
		}
		r, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		status := map[string]store.Status{}
		for _, ts := range r.Manifest.Trials {
			status[ts.Arm] = ts.Status
		}
		if status["E"] != store.Valid || status["D"] != store.Interrupted {
			t.Errorf("%v: trials %v; want E's kept valid and D's interrupted", sig, status)
		}
		maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		if maxRSS > workload.MaxTrialHeapBytes {
			t.Errorf("%v: peak resident memory %d MiB; the bound is %d MiB", sig, maxRSS>>20, workload.MaxTrialHeapBytes>>20)
		}
		t.Logf("%v: stopped %v after the signal; peak resident memory %d MiB (bound %d MiB)", sig, stopped.Round(time.Millisecond), maxRSS>>20, workload.MaxTrialHeapBytes>>20)
	}
}
