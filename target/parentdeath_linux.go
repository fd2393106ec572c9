//go:build linux

package target

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Members die with qmlsab, however it ends. A member's parent-death
// signal (PR_SET_PDEATHSIG) is SIGKILL: a member stopped by a fault
// (SIGSTOP) would never act on a SIGTERM. The kernel sends it when the
// thread that started the member exits, not the process: the Go runtime
// ends a thread when a goroutine locked to it returns, so a member started
// from an ordinary goroutine could be killed mid-trial. Every member is
// therefore started from one goroutine locked to its thread that never
// returns: that thread ends only with the process.

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

// startMember starts cmd (its SysProcAttr set) so that it is killed when
// this process dies, SIGKILL included.
func startMember(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked, and the goroutine never returns
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawns <- spawnRequest{cmd, done}
	return <-done
}
