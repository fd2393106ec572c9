package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// Every command that holds something (a run's lock and members, a
// sweep's or an import's new folder, a merge's temporary folder, a
// history transaction) stops the same way on the same signals: its
// context is cancelled, it cleans up, and it exits 130.
//
//   - SIGINT (Ctrl-C) and SIGTERM (kill, a CI job cancelled);
//   - SIGHUP (the terminal closed, ssh dropped); under nohup, which starts
//     the process with SIGHUP ignored, it stays ignored, as nohup asks
//     (and likewise SIGINT for a job a shell started in the background);
//   - SIGPIPE when standard output or standard error is a pipe nobody
//     reads any more (qmlsab run … | head -1). Handling SIGPIPE makes such
//     a write fail with EPIPE instead of killing the process; the signal
//     then ends the command as interrupted. The kernel sends SIGPIPE for
//     a write to any broken pipe or socket, a connection to a member a
//     fault just killed included, so a SIGPIPE ends the command only when
//     one of the two outputs is in fact broken.
//
// The first signal says on standard error that the command is stopping.
// Cleaning up is bounded (a trial's teardown by its own deadlines), but it
// can still take a while: a second SIGINT, SIGTERM or SIGHUP exits at
// once with 130, leaving undone whatever cleanup had not finished. A local
// target's members die with qmlsab all the same on Linux (they are killed
// when their parent dies); a uri target may keep the parameters the arm
// set; the trial that was running stays unfinished in the run folder, and
// run --resume runs it again.

// interruptSignals are the signals that cancel a command's context.
var interruptSignals = func() []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGPIPE}
	// Checked before the first Notify, which would undo the ignoring.
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}()

// errOutputClosed is the cause of a command stopped because its standard
// output or error was closed.
var errOutputClosed = errors.New("interrupted: standard output or error closed (SIGPIPE)")

// interruptContext is parent cancelled on the first of the interrupt
// signals; context.Cause names the signal, and errw hears that the
// command is stopping. A second interrupt signal before stop exits the
// process at once with 130, saying so on errw. stop releases the signals;
// a write to a closed output after it fails with EPIPE rather than killing
// the process before it exits with its code.
func interruptContext(parent context.Context, errw io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, interruptSignals...)
	done := make(chan struct{})
	go func() {
		interrupted := false
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				if s == syscall.SIGPIPE {
					if !interrupted && outputClosed() {
						interrupted = true
						cancel(errOutputClosed)
					}
					continue // else a broken socket: its writer sees the error
				}
				if interrupted {
					fmt.Fprintf(errw, "qmlsab: second signal (%s): exiting now, before the clean-up finished\n", signalName(s))
					os.Exit(exitInterrupted)
				}
				interrupted = true
				cancel(fmt.Errorf("interrupted by %v", signalName(s)))
				fmt.Fprintf(errw, "qmlsab: interrupted by %s: stopping and cleaning up; a second signal exits at once\n", signalName(s))
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		signal.Ignore(syscall.SIGPIPE)
		close(done)
		cancel(context.Canceled)
	}
}

// outputClosed reports whether standard output or standard error is a
// pipe or socket whose reader is gone (poll says POLLERR or POLLHUP).
func outputClosed() bool {
	// The descriptors by number: os.File.Fd would make them blocking.
	fds := []unix.PollFd{{Fd: 1}, {Fd: 2}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		break
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

// signalName is a signal as people write it (SIGHUP).
func signalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return s.String()
}

// interruptedError is an error of a command a signal stopped.
type interruptedError struct{ err error }

func (e interruptedError) Error() string { return e.err.Error() }
func (e interruptedError) Unwrap() error { return e.err }

// interruptedOr marks err as the command's being interrupted when ctx
// was cancelled by a signal (its cause said first), and is err otherwise.
func interruptedOr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return interruptedError{fmt.Errorf("%v: %w", context.Cause(ctx), err)}
}

// exitFor is failed, the command's exit for err, unless err is an
// interruption: then the same message exits 130.
func exitFor(err, failed error) error {
	if errors.As(err, new(interruptedError)) {
		return cli.Exit(failed.Error(), exitInterrupted)
	}
	return failed
}
