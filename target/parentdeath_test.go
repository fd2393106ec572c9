package target

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// provisionerEnv makes the test binary, re-executed, a stand-in for
// qmlsab: it provisions a local target in the folder the variable names,
// prints its members' process ids, and waits to be killed.
const (
	provisionerEnv    = "QMLSAB_TEST_PROVISION_LOCAL"
	provisionerBinEnv = "QMLSAB_TEST_MONGOSIM_BIN"
)

// runProvisioner is the re-executed test binary's whole life.
func runProvisioner(dir string) {
	mongosimBin = os.Getenv(provisionerBinEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := Provision(ctx, localArm(), Options{Dir: dir})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	var pids []string
	for _, p := range d.(*local).PIDs() {
		pids = append(pids, strconv.Itoa(p))
	}
	fmt.Println("pids:", strings.Join(pids, " "))
	select {} // until killed
}

// gone reports whether a process has exited: no such process, or a
// zombie not yet reaped by whoever inherited it.
func gone(pid int) bool {
	if !alive(pid) {
		return true
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// A qmlsab killed outright (SIGKILL: nothing of it runs) takes its local
// target's members with it, though they run in their own process groups.
func TestLocalMembersDieWithAKilledQmlsab(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), provisionerEnv+"="+t.TempDir(), provisionerBinEnv+"="+mongosimBin)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	t.Cleanup(func() {
		// Whatever the outcome, nothing is left running.
		cmd.Process.Kill()
		for _, p := range pids {
			syscall.Kill(-p, syscall.SIGKILL)
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if list, ok := strings.CutPrefix(sc.Text(), "pids: "); ok {
			for _, f := range strings.Fields(list) {
				p, _ := strconv.Atoi(f)
				pids = append(pids, p)
			}
			break
		}
		t.Log(sc.Text())
	}
	if len(pids) != 3 {
		cmd.Process.Kill()
		t.Fatalf("the provisioner reported members %v, want 3 (%v)", pids, cmd.Wait())
	}
	for _, p := range pids {
		if gone(p) {
			t.Fatalf("member %d gone before the kill", p)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var left []int
		for _, p := range pids {
			if !gone(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members %v still running 60 s after their qmlsab was SIGKILLed", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The parent-death signal comes when the thread that started a member
// ends, not the process; members asked for from a goroutine whose thread
// the runtime then ends (a locked goroutine returning) keep running.
func TestLocalMembersOutliveTheThreadThatAskedForThem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type provisioned struct {
		d    Deployment
		pids []int
		tid  int
		err  error
	}
	got := make(chan provisioned, 1)
	dir := t.TempDir()
	var ask func()
	ask = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if syscall.Gettid() == os.Getpid() {
			// The runtime never ends the main thread: hold it, and ask
			// from another goroutine, on another thread.
			done := make(chan struct{})
			go func() { ask(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		// No restart hides a killed member while the test looks.
		d, err := Provision(ctx, localArm(), Options{Dir: dir, RestartDelay: time.Hour})
		var pids []int
		if err == nil {
			pids = d.(*local).PIDs()
		}
		got <- provisioned{d, pids, syscall.Gettid(), err}
	}
	go ask()
	p := <-got
	if p.err != nil {
		t.Fatal(p.err)
	}
	defer p.d.Close(context.Background())
	// Wait until the thread is gone: its exit, which would send a parent-
	// death signal, has happened.
	task := fmt.Sprintf("/proc/self/task/%d", p.tid)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d did not end", p.tid)
		}
	}
	// A member sent SIGKILL answers nothing more: each answering now
	// shows none was.
	for _, h := range p.d.Members() {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Err()
		c.Disconnect(context.Background())
		if err != nil {
			t.Errorf("member %s after the thread that started it ended: %v", h, err)
		}
	}
	for _, pid := range p.pids {
		if gone(pid) {
			t.Errorf("member %d gone after the thread that started it ended", pid)
		}
	}
	if r := p.d.(*local).Restarts(); len(r) > 0 {
		t.Errorf("members restarted after the thread that started them ended: %+v", r)
	}
}
