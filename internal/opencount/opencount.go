//go:build linux

// Package opencount counts how often files are opened, through the
// kernel's inotify, so that a test can prove how many times code reads a
// file (a run's manifest, say) without a hook in the code it tests.
package opencount

import (
	"bytes"
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watch counts the opens of the files directly in some folders.
type Watch struct {
	fd   int
	dirs map[int]string // watch descriptor → folder
}

// New watches the files directly in each folder (not in their
// subfolders) from now on.
func New(dirs ...string) (*Watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &Watch{fd: fd, dirs: map[int]string{}}
	for _, d := range dirs {
		// The closes are watched too: the kernel folds an event into an
		// identical one not yet read, so two opens in a row would count
		// as one without the close between them.
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN|unix.IN_CLOSE)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("watching %s: %w", d, err)
		}
		w.dirs[wd] = d
	}
	return w, nil
}

// Opens are the opens counted since New, by file path, and closes the
// watch: call it once the code under test has returned (the kernel has
// queued every event of its opens by then).
func (w *Watch) Opens() (map[string]int, error) {
	defer unix.Close(w.fd)
	out := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("inotify: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				return out, fmt.Errorf("inotify: events lost (queue overflow)")
			}
			if ev.Mask&unix.IN_OPEN != 0 {
				out[filepath.Join(w.dirs[int(ev.Wd)], string(bytes.TrimRight(name, "\x00")))]++
			}
		}
	}
}
