//go:build linux

package ptytest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal: the program under test writes to TTY as to a
// terminal of the size set, and the test reads what the terminal would
// be shown (Output). It is opened with golang.org/x/sys/unix as pty(7)
// describes: open /dev/ptmx, unlock its peer, open /dev/pts/N.
type PTY struct {
	TTY    *os.File
	master *os.File
	out    bytes.Buffer
	read   chan struct{} // closed when the output has been read to its end
}

// Open is a width×height pseudo-terminal, closed when the test ends; the
// test is skipped where the system has none.
func Open(t *testing.T, width, height int) *PTY {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var tty *os.File
	if cerr := control(m, func(fd int) {
		if err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return
		}
		var n uint32
		if n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN); err != nil {
			return
		}
		tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	p := &PTY{TTY: tty, master: m, read: make(chan struct{})}
	p.Resize(t, width, height)
	go func() {
		defer close(p.read)
		io.Copy(&p.out, m) // ends (EIO) once the terminal side is closed and read
	}()
	t.Cleanup(func() { tty.Close(); m.Close() })
	return p
}

// Resize sets the terminal's size, as a terminal window does when the
// user resizes it (the program learns of it on SIGWINCH when the
// terminal is its controlling terminal; a test sends the signal itself).
func (p *PTY) Resize(t *testing.T, width, height int) {
	t.Helper()
	var err error
	if cerr := control(p.master, func(fd int) {
		err = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(width), Row: uint16(height)})
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("resizing the pseudo-terminal: %v", err)
	}
}

// Output closes the program's side of the terminal and returns all it
// wrote, as the terminal received it (its line discipline turns "\n"
// into "\r\n").
func (p *PTY) Output(t *testing.T) []byte {
	t.Helper()
	p.TTY.Close()
	select {
	case <-p.read:
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal's output did not end")
	}
	return p.out.Bytes()
}

// control runs fn on f's descriptor without taking it out of the
// runtime's poller.
func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}
