package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
)

// The qmlsab binary, built once for the package's tests that run it as
// a process (qmlsabBinary), and removed after them.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

// blockedCleanUpEnv makes the test binary, started by
// TestSecondSignalExitsAtOnceWhileCleanUpIsBlocked, act as a command whose
// clean-up never ends (blockedCleanUp) instead of running the tests.
const blockedCleanUpEnv = "QMLSAB_TEST_BLOCKED_CLEANUP"

func TestMain(m *testing.M) {
	if os.Getenv(blockedCleanUpEnv) == "1" {
		blockedCleanUp()
	}
	// A signal ignored here (SIGHUP under nohup or a CI runner) would be
	// ignored in every qmlsab the tests start, which keeps it ignored as
	// nohup asks; the signal tests need the default disposition, which a
	// handler in this process gives its children.
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// qmlsabBinary is this command built into a temporary folder, once.
func qmlsabBinary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "qmlsab-bin"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "qmlsab")
		if out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// slowVirtualWorkload is a virtual trial that lasts a few wall seconds
// in little memory (a light storm over 30 min of model time, then as
// long a recovery), so a signal sent when its storm starts lands in it.
func slowVirtualWorkload(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "slow.yaml")
	doc := "name: slow\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 5\n  phases: {warmup: 2s, storm: 30m, recovery: 30m}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signalled is a started qmlsab process whose output the test reads
// line by line.
type signalled struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	lines  *bufio.Scanner
	out    strings.Builder // stdout as read
	stderr strings.Builder
}

func startQmlsab(t *testing.T, bin string, args ...string) *signalled {
	t.Helper()
	p := &signalled{cmd: exec.Command(bin, args...)}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill() })
	p.lines = bufio.NewScanner(p.stdout)
	return p
}

// waitFor reads stdout until a line holds s.
func (p *signalled) waitFor(t *testing.T, s string) {
	t.Helper()
	for p.lines.Scan() {
		p.out.WriteString(p.lines.Text() + "\n")
		if strings.Contains(p.lines.Text(), s) {
			return
		}
	}
	p.cmd.Wait()
	t.Fatalf("the output ended before a line with %q:\n%s%s", s, p.out.String(), p.stderr.String())
}

// finish reads the rest of stdout (unless it was closed) and returns the
// exit code.
func (p *signalled) finish(closed bool) int {
	if !closed {
		for p.lines.Scan() {
			p.out.WriteString(p.lines.Text() + "\n")
		}
	}
	return exitCode(p.cmd.Wait())
}

// checkInterrupted holds a run folder to what an interrupted run leaves:
// no lock, the trial that was running marked interrupted, the command
// that completes the run named; and --resume then completes it.
func checkInterrupted(t *testing.T, bin, dir string, p *signalled, trial string, resumeArgs ...string) {
	t.Helper()
	if !strings.Contains(p.stderr.String(), "qmlsab run --resume "+dir) {
		t.Errorf("the message does not name the resume command:\n%s", p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "run.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run.lock after the interrupt: %v; want it released", err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]store.Status{}
	for _, ts := range r.Manifest.Trials {
		status[plan.Key(ts.Arm, ts.Index)] = ts.Status
	}
	if status[trial] != store.Interrupted {
		t.Errorf("trials %v; want %s marked %s", status, trial, store.Interrupted)
	}
	out, err := exec.Command(bin, append([]string{"run", "--resume", dir}, resumeArgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if r, err = store.Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, ts := range r.Manifest.Trials {
		if ts.Status != store.Valid {
			t.Errorf("after the resume %s#%d is %s, want valid\n%s", ts.Arm, ts.Index, ts.Status, out)
		}
	}
}

// SIGHUP (the terminal closed), SIGTERM, and SIGPIPE from a closed
// standard output (qmlsab run … | head) each stop a virtual-clock run
// the same way: exit 130, lock released, the running trial marked
// interrupted, and --resume completes the run.
func TestRunStopsCleanlyOnEverySignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := qmlsabBinary(t)
	wl := slowVirtualWorkload(t)
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal // 0: close the run's standard output
		cause string
	}{
		{"SIGHUP", syscall.SIGHUP, "interrupted by SIGHUP"},
		{"SIGTERM", syscall.SIGTERM, "interrupted by SIGTERM"},
		{"SIGPIPE", 0, "standard output or error closed (SIGPIPE)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			p := startQmlsab(t, bin, "run", "--workload", wl, "--arms", "E", "--n", "1", "--parallel", "1", "--out", dir)
			p.waitFor(t, "trial E#1: storm")
			if tc.sig != 0 {
				p.cmd.Process.Signal(tc.sig)
			} else {
				// The reader goes, as head does after its line: the
				// next progress line (the recovery's) meets a closed pipe.
				p.stdout.Close()
			}
			if code := p.finish(tc.sig == 0); code != exitInterrupted {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), tc.cause) {
				t.Errorf("the message does not say why it stopped (%q):\n%s", tc.cause, p.stderr.String())
			}
			checkInterrupted(t, bin, dir, p, "E#1")
		})
	}
}

// A sweep stopped by SIGHUP leaves no --out folder it made: it writes
// only at its end, so nothing of it is kept.
func TestSweepOnSIGHUPLeavesNoEmptyOutFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := qmlsabBinary(t)
	out := filepath.Join(t.TempDir(), "sweep")
	p := startQmlsab(t, bin, "sweep", "--workload", slowVirtualWorkload(t), "--arms", "E", "--vary", "hw.cpus=4,8",
		"--n", "1", "--parallel", "1", "--out", out)
	p.waitFor(t, "qmlsab sweep")
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("the sweep has not made its folder when it starts: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.finish(false); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out after the interrupted sweep: %v; want it removed", err)
	}
	if !strings.Contains(p.stderr.String(), "interrupted by SIGHUP") || !strings.Contains(p.stderr.String(), "removed") {
		t.Errorf("the message does not say why it stopped and what became of --out:\n%s", p.stderr.String())
	}
}

// membersUnder are the processes whose command line names a path under
// dir: a local target's members (their --dbpath is in the trial folder).
func membersUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		if line := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(line, dir+string(filepath.Separator)) {
			found = append(found, filepath.Base(filepath.Dir(p))+": "+line)
		}
	}
	return found
}

// localArmRun writes an arms file of one arm L on a local target
// (cmd/mongosim member processes) and a workload file of workload, and
// names the run folder a test's run of them writes; no member process
// under it outlives the test, whatever its outcome.
func localArmRun(t *testing.T, workload string) (armsFile, wl, dir string) {
	t.Helper()
	tmp := t.TempDir()
	armsFile, wl, dir = filepath.Join(tmp, "arms.yaml"), filepath.Join(tmp, "workload.yaml"), filepath.Join(tmp, "run")
	for name, doc := range map[string]string{
		armsFile: "arms:\n  - name: L\n    target: local\n    mongod: " + localMongosim(t) + "\n    setParameters: {}\n",
		wl:       workload,
	} {
		if err := os.WriteFile(name, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range membersUnder(t, dir) {
			var pid int
			fmt.Sscanf(m, "%d:", &pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return armsFile, wl, dir
}

// SIGHUP in the storm of a trial on a local target (cmd/mongosim member
// processes): the members are stopped before qmlsab exits 130, the lock
// is released, the trial marked interrupted, and --resume completes it.
func TestRunOnALocalTargetStopsItsMembersOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("a short wall-clock trial on local cmd/mongosim processes")
	}
	bin := qmlsabBinary(t)
	armsFile, wl, dir := localArmRun(t, "name: short\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 20\n  phases: {warmup: 1s, storm: 4s, recovery: 1s}\n")
	p := startQmlsab(t, bin, "run", "--arms", "L", "--arms-file", armsFile, "--workload", wl, "--n", "1",
		"--clock", "wall", "--parallel", "1", "--out", dir)
	p.waitFor(t, "trial L#1: storm")
	if len(membersUnder(t, dir)) == 0 {
		t.Fatalf("no member process found under %s during the storm", dir)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	start := time.Now()
	if code := p.finish(false); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
	}
	// qmlsab waits for its members before it exits: none is left now.
	if left := membersUnder(t, dir); len(left) > 0 {
		t.Errorf("member processes left after qmlsab exited:\n%s", strings.Join(left, "\n"))
	}
	t.Logf("stopped %v after SIGHUP", time.Since(start).Round(time.Millisecond))
	checkInterrupted(t, bin, dir, p, "L#1", "--arms-file", armsFile)
	if left := membersUnder(t, dir); len(left) > 0 {
		t.Errorf("member processes left after the resumed run:\n%s", strings.Join(left, "\n"))
	}
}

// SIGHUP during a trial on a uri target (a server qmlsab did not start)
// restores every server parameter the arm changed, as Ctrl-C does.
func TestRunOnAURITargetRestoresParametersOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("a short wall-clock trial on an in-process mongosim set")
	}
	ctx := context.Background()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	const name = "queryMemoryLoadSheddingHighMarkPercent"
	param := func() string {
		c, err := mongo.Connect(options.Client().ApplyURI(rs.URI()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(ctx)
		raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw.Lookup(name).String()
	}
	before := param()
	bin := qmlsabBinary(t)
	tmp := t.TempDir()
	armsFile := filepath.Join(tmp, "arms.yaml")
	wl := filepath.Join(tmp, "long.yaml")
	for file, doc := range map[string]string{
		armsFile: "arms:\n  - name: U\n    target: uri\n    uri: \"" + rs.URI() + "\"\n    setParameters: {" + name + ": \"93\"}\n",
		wl:       "name: long\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 5\n  phases: {warmup: 1s, storm: 10m, recovery: 1s}\n",
	} {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "run")
	p := startQmlsab(t, bin, "run", "--arms", "U", "--arms-file", armsFile, "--workload", wl, "--n", "1", "--out", dir)
	p.waitFor(t, "trial U#1: storm")
	during := param()
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.finish(false); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
	}
	if during == before {
		t.Fatalf("%s was %s before and during the trial: the arm changed nothing, the test proves nothing", name, before)
	}
	if after := param(); after != before {
		t.Errorf("%s: %s before, %s during, %s after SIGHUP; want it restored", name, before, during, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run.lock after the interrupt: %v; want it released", err)
	}
}

// blockedCleanUp is a command stopped by a signal whose clean-up does not
// end: it says "ready" once it listens for signals, "cleaning up: <why>"
// when the first one arrives, then waits far beyond any test's deadline.
func blockedCleanUp() {
	ctx, stop := interruptContext(context.Background(), os.Stderr)
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cleaning up:", context.Cause(ctx))
	time.Sleep(time.Hour)
	os.Exit(0)
}

// The first signal starts the clean-up; a second one while the clean-up
// still runs exits at once with 130, saying so, instead of being
// swallowed until the clean-up ends.
func TestSecondSignalExitsAtOnceWhileCleanUpIsBlocked(t *testing.T) {
	for _, second := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signalName(second), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), blockedCleanUpEnv+"=1")
			var stderr stormtest.SyncBuffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			lines := bufio.NewScanner(stdout)
			waitLine := func(prefix string) {
				t.Helper()
				for lines.Scan() {
					if strings.HasPrefix(lines.Text(), prefix) {
						return
					}
				}
				t.Fatalf("the output ended before a line starting %q; stderr:\n%s", prefix, stderr.String())
			}
			waitLine("ready")
			cmd.Process.Signal(syscall.SIGHUP)
			waitLine("cleaning up: interrupted by SIGHUP")
			cmd.Process.Signal(second)
			exited := make(chan int, 1)
			go func() { exited <- exitCode(cmd.Wait()) }()
			select {
			case code := <-exited:
				if code != exitInterrupted {
					t.Fatalf("exit %d after the second signal, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("still running 60 s after a second signal (%s) while its clean-up was blocked; stderr:\n%s", signalName(second), stderr.String())
			}
			for _, want := range []string{"interrupted by SIGHUP: stopping and cleaning up; a second signal exits at once", "second signal (" + signalName(second) + "): exiting now"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// A signal during a trial on a local target whose members have died
// stops qmlsab promptly even when the workload's serverSelectionTimeout
// is long: the clients that had the members (the storm's, the
// canaries') disconnect within a bound of their own instead of waiting
// out that timeout for a server to end their sessions on. Here the
// timeout is 10 minutes and the exit must come within 60 s.
func TestRunOnALocalTargetExitsPromptlyOnSIGHUPDespiteALongServerSelectionTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("a wall-clock trial on local cmd/mongosim processes")
	}
	bin := qmlsabBinary(t)
	armsFile, wl, dir := localArmRun(t, "name: patient\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 20\n  serverSelectionTimeout: 10m\n  phases: {warmup: 1s, storm: 10m, recovery: 1s}\n")
	cmd := exec.Command(bin, "run", "--arms", "L", "--arms-file", armsFile, "--workload", wl, "--n", "1",
		"--clock", "wall", "--parallel", "1", "--out", dir)
	var stdout, stderr stormtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	exited := make(chan int, 1)
	go func() { exited <- exitCode(cmd.Wait()) }()
	// waitOutput waits until buf holds want n times, or the deadline.
	waitOutput := func(buf *stormtest.SyncBuffer, want string, n int) {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for strings.Count(buf.String(), want) < n {
			select {
			case code := <-exited:
				t.Fatalf("exit %d before the output held %q %d times:\n%s%s", code, want, n, stdout.String(), stderr.String())
			case <-deadline:
				t.Fatalf("no %q %d times in the output after 3 min:\n%s%s", want, n, stdout.String(), stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitOutput(&stdout, "trial L#1: storm", 1)
	// Every member dies (SIGKILL, as the kernel's OOM killer would under
	// the storm), and qmlsab sees each one go (its supervisor says so,
	// before restarting it after a delay): the clients' servers are gone.
	members := membersUnder(t, dir)
	if len(members) != 3 {
		t.Fatalf("members under %s during the storm: %v, want 3", dir, members)
	}
	for _, m := range members {
		var pid int
		fmt.Sscanf(m, "%d:", &pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing member %s: %v", m, err)
		}
	}
	waitOutput(&stderr, "member exited; restarting it", 3)
	cmd.Process.Signal(syscall.SIGHUP)
	sent := time.Now()
	select {
	case code := <-exited:
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60 s after SIGHUP (serverSelectionTimeout 10m):\n%s%s", stdout.String(), stderr.String())
	}
	t.Logf("exited %v after SIGHUP", time.Since(sent).Round(time.Millisecond))
	if left := membersUnder(t, dir); len(left) > 0 {
		t.Errorf("member processes left after qmlsab exited:\n%s", strings.Join(left, "\n"))
	}
}
