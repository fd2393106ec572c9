package store

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Many writers taking over a folder whose writer was SIGKILLed (its
// run.lock names a dead pid) at once: exactly one wins, every time. Each
// used to remove the stale file and try again, so one could remove the
// lock another had just made and both write the folder.
func TestStaleLockHasExactlyOneTakerAmongGoroutines(t *testing.T) {
	const rounds, takers = 400, 8
	dead := strconv.Itoa(deadPID(t)) + "\n"
	for round := range rounds {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, lockFile), []byte(dead), 0o644); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []*Lock
		var refusals []string
		for range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := Acquire(dir)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					refusals = append(refusals, err.Error())
					return
				}
				won = append(won, l)
			}()
		}
		close(start)
		wg.Wait()
		for _, l := range won {
			l.Release()
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d of %d takers hold the lock at once, want exactly 1 (refusals: %q)", round, len(won), takers, refusals)
		}
		for _, r := range refusals {
			if !strings.Contains(r, "refusing to write it too") {
				t.Fatalf("round %d: a taker failed for another reason than the winner's lock: %s", round, r)
			}
		}
	}
}

// lockTakerEnv, set, makes this test binary a lock taker of the folder it
// names (TestStaleLockHasExactlyOneTakerAmongProcesses): it says "ready",
// takes the lock when a line comes on its standard input, says "won" or
// "refused", and holds what it won until its input ends.
const lockTakerEnv = "QMLSAB_STORE_LOCK_TAKER"

// The same takeover among separate processes (as several `run --resume`
// of one folder): this test binary run again as each taker.
func TestStaleLockHasExactlyOneTakerAmongProcesses(t *testing.T) {
	if dir := os.Getenv(lockTakerEnv); dir != "" {
		takeLockAsChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("starts 120 processes")
	}
	const rounds, takers = 20, 6
	dead := strconv.Itoa(deadPID(t)) + "\n"
	for round := range rounds {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, lockFile), []byte(dead), 0o644); err != nil {
			t.Fatal(err)
		}
		type child struct {
			cmd *exec.Cmd
			in  io.WriteCloser
			out *bufio.Reader
		}
		var children []child
		for range takers {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStaleLockHasExactlyOneTakerAmongProcesses$", "-test.count=1")
			// A race-detector build sleeps a second at exit unless told not to.
			cmd.Env = append(os.Environ(), lockTakerEnv+"="+dir, "GORACE=atexit_sleep_ms=0")
			cmd.Stderr = os.Stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c := child{cmd, in, bufio.NewReader(out)}
			children = append(children, c)
			t.Cleanup(func() { c.in.Close(); c.cmd.Wait() })
		}
		line := func(c child) string {
			s, err := c.out.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: a taker said %q and stopped: %v", round, s, err)
			}
			return strings.TrimSpace(s)
		}
		for _, c := range children {
			if s := line(c); s != "ready" {
				t.Fatalf("round %d: a taker said %q, want ready", round, s)
			}
		}
		for _, c := range children { // all at once
			io.WriteString(c.in, "go\n")
		}
		winners := 0
		var said []string
		for _, c := range children {
			s := line(c)
			said = append(said, s)
			if s == "won" {
				winners++
			} else if !strings.HasPrefix(s, "refused: ") || !strings.Contains(s, "refusing to write it too") {
				t.Fatalf("round %d: a taker said %q", round, s)
			}
		}
		for _, c := range children {
			c.in.Close()
		}
		for _, c := range children {
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d: a taker ended with %v", round, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d of %d processes hold the lock at once, want exactly 1: %q", round, winners, takers, said)
		}
	}
}

// takeLockAsChild is a lock taker (lockTakerEnv).
func takeLockAsChild(dir string) {
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return
	}
	l, err := Acquire(dir)
	if err != nil {
		fmt.Println("refused: " + strings.ReplaceAll(err.Error(), "\n", " "))
	} else {
		fmt.Println("won")
	}
	io.Copy(io.Discard, in) // hold it until the parent has heard every taker
	if l != nil {
		l.Release()
	}
}

// A run.lock naming a live pid that holds no lock on it (a SIGKILLed
// qmlsab that was PID 1 in its container, restarted as PID 1 again; a
// reused pid) is free: the folder is taken over, and readers do not take
// it for being written.
func TestLockNamingALivePIDThatHoldsNothingIsFree(t *testing.T) {
	for _, pid := range []int{1, os.Getpid()} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, lockFile), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if w := Writers([]string{dir}); len(w) != 0 {
			t.Errorf("run.lock naming live pid %d, held by no one: Writers = %q, want none", pid, w)
		}
		l, err := Acquire(dir)
		if err != nil {
			t.Fatalf("run.lock naming live pid %d, held by no one: %v; want it taken over", pid, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, lockFile))
		if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
			t.Errorf("run.lock holds %q after the takeover, want this process's pid", b)
		}
		if w := Writers([]string{dir}); len(w) != 1 || !strings.Contains(w[0], fmt.Sprintf("pid %d holds its run.lock", os.Getpid())) {
			t.Errorf("Writers of a held folder = %q, want it, naming pid %d", w, os.Getpid())
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, lockFile)); !os.IsNotExist(err) {
			t.Errorf("run.lock after Release: %v, want it gone", err)
		}
	}
}

// A writer that holds the lock but has not written its pid yet (or whose
// file names none) is refused as "another process", never "(pid )".
func TestRefusalWithoutAPIDSaysAnotherProcessHoldsTheLock(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if err == nil {
		t.Fatal("Acquire of a folder whose lock another holds succeeded")
	}
	if strings.Contains(err.Error(), "(pid )") || strings.Contains(err.Error(), "pid 0") || !strings.Contains(err.Error(), "another process holds its run.lock") {
		t.Errorf("refusal %q: want it to say another process holds the lock, and no empty pid", err)
	}
	if w := Writers([]string{dir}); len(w) != 1 || !strings.Contains(w[0], "another process holds its run.lock") {
		t.Errorf("Writers = %q, want the folder, held by another process", w)
	}
}

// A run.lock that is a named pipe or a symbolic link is refused at once,
// named, and never blocks.
func TestLockRefusesALockFileThatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, lockFile)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(dir); err == nil || !strings.Contains(err.Error(), p+" is a named pipe (FIFO)") {
		t.Errorf("Acquire with a FIFO as run.lock: %v; want it named as a named pipe", err)
	}
	if w := Writers([]string{dir}); len(w) != 0 {
		t.Errorf("Writers with a FIFO as run.lock = %q, want none", w)
	}
	os.Remove(p)
	if err := os.Symlink("elsewhere", p); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(dir); err == nil || !strings.Contains(err.Error(), p+" is a symbolic link") {
		t.Errorf("Acquire with a symbolic link as run.lock: %v; want it named as a link", err)
	}
}
