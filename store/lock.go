package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A run folder has one writer at a time: the process holding an
// exclusive flock on the folder's run.lock. The kernel drops a flock when
// its holder dies however it dies, so a folder whose writer was SIGKILLed
// is free again at once, whatever pid its run.lock still names (the pid
// may be alive again: PID 1 in a container, a reused pid), and of many
// processes taking over such a folder at once exactly one wins: the flock
// decides, not a look at the pid. The pid in the file only says who the
// holder is.
//
// A writer removes the file before it lets go (a killed one leaves it,
// free), so a process that opened the old file takes the lock only when
// that file is still the one at the path (lockExclusive), and tries
// again otherwise. The same lock guards a folder being built beside an
// --out (BuildBeside). A reader asking whether a folder is being
// written (Writer) takes a shared flock for an instant; a writer that
// finds only such a reader there tries again.

// lockFile is a run folder's lock (Acquire).
const lockFile = "run.lock"

// readerWait bounds how long lockExclusive keeps trying while only
// readers hold the lock (each for the instant of a look): far longer
// than any look takes, so it is met only by a reader stopped mid-look.
const readerWait = 10 * time.Second

// Holder is who holds a lock, as its file says: the pid written there,
// or 0 when the file names none (the holder has not written it yet, or
// the file was emptied).
type Holder struct{ PID int }

// holds is "pid N holds NAME", or, when the file names no pid, "another
// process holds NAME (the file names no pid)".
func (h Holder) holds(name string) string {
	if h.PID > 0 {
		return fmt.Sprintf("pid %d holds %s", h.PID, name)
	}
	return "another process holds " + name + " (the file names no pid)"
}

// Lock is a process's hold on a run folder (Acquire): an exclusive flock
// on its run.lock, which holds the writer's pid, kept until Release.
type Lock struct {
	f    *os.File
	path string
}

// Acquire locks dir (creating it) for this process's writing, or refuses
// with an error naming who holds it when another process (or another
// Acquire in this one) does.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, lockFile)
	f, holder, err := lockExclusive(p)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if holder != nil {
		return nil, fmt.Errorf("%s is being written by another writer: %s; refusing to write it too", dir, holder.holds("its "+lockFile))
	}
	return &Lock{f: f, path: p}, nil
}

// Release gives the folder back: the lock file is removed while it is
// still held, then let go.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockAndRemove(l.f, l.path)
	l.f = nil
	return err
}

// Writer says whether a process holds dir's lock now (a run is being
// written there), and who.
func Writer(dir string) (Holder, bool) {
	return lockHolder(filepath.Join(dir, lockFile))
}

// Writers are the folders of dirs being written now, as "DIR (pid N holds
// its run.lock)": folders a reader must not take as finished.
func Writers(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if h, held := Writer(d); held {
			out = append(out, fmt.Sprintf("%s (%s)", d, h.holds("its "+lockFile)))
		}
	}
	return out
}

// lockExclusive takes an exclusive flock on the file at path, creating
// it, and writes this process's pid into it. When another holds it, it
// returns who (and no file). The returned file holds the lock until it is
// closed (unlockAndRemove).
func lockExclusive(path string) (*os.File, *Holder, error) {
	readersSince := time.Time{}
	for {
		// Read-only: an fd open for writing for the run's life would keep
		// its file system from being remounted read-only (EBUSY), as a
		// failing disk is; the pid is written through another.
		f, err := openLockFile(path, os.O_RDONLY|os.O_CREATE)
		if err != nil {
			return nil, nil, err
		}
		err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil && isAt(f, path):
			if err := writePID(f, path); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("writing %s: %w", path, err)
			}
			return f, nil, nil
		case err == nil:
			// Its holder removed it as it let go: the lock is the file at
			// path now (if any); try that.
		case errors.Is(err, unix.EWOULDBLOCK):
			if !isAt(f, path) {
				break // a holder letting go of a file no longer the lock
			}
			if flock(f, unix.LOCK_SH|unix.LOCK_NB) != nil {
				h := readHolder(f)
				f.Close()
				return nil, &h, nil
			}
			// No writer holds it: a reader's look (a shared flock for an
			// instant) was in the way. Look again shortly.
			if readersSince.IsZero() {
				readersSince = time.Now()
			} else if time.Since(readersSince) > readerWait {
				f.Close()
				return nil, nil, fmt.Errorf("%s stayed held by readers for %v (a reader stopped mid-look?); try again", path, readerWait)
			}
			time.Sleep(time.Millisecond)
		default:
			f.Close()
			return nil, nil, fmt.Errorf("flock %s: %w", path, err)
		}
		f.Close()
	}
}

// lockHolder says whether a process holds an exclusive flock on the lock
// file at path, and who. It looks by taking a shared flock for an
// instant, which only an exclusive holder refuses. A missing file, or one
// that is no regular file (which no writer can hold: lockExclusive
// refuses it), is held by no one.
func lockHolder(path string) (Holder, bool) {
	for {
		f, err := openLockFile(path, os.O_RDONLY)
		if err != nil {
			return Holder{}, false
		}
		free := flock(f, unix.LOCK_SH|unix.LOCK_NB) == nil
		at := isAt(f, path)
		h := readHolder(f)
		f.Close()
		switch {
		case free:
			return Holder{}, false
		case at:
			return h, true
		}
		// A holder letting go of a file that is no longer the lock: look
		// at the file there now.
	}
}

// unlockAndRemove removes the lock file f holds (when it is still the
// one at path) and lets go of it: removed first, so that no process can
// take a file that is no longer the lock.
func unlockAndRemove(f *os.File, path string) error {
	var err error
	if isAt(f, path) {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openLockFile opens the lock file at path without following a link and
// without waiting (a named pipe put in its place opens at once), and
// refuses anything but a regular file, naming it.
func openLockFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: a lock is a regular file", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s: a lock is a regular file", path, describeMode(path, fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// isAt reports whether f is still the file at path.
func isAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	at, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, at)
}

// writePID makes the lock file f, held at path, say this process holds
// it.
func writePID(f *os.File, path string) error {
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	fi, err := w.Stat()
	held, herr := f.Stat()
	switch {
	case err != nil:
	case herr != nil:
		err = herr
	case !os.SameFile(fi, held):
		err = errors.New("the lock file was replaced as it was taken")
	default:
		if _, err = w.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err == nil {
			err = w.Sync()
		}
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// readHolder is the pid the lock file names (Holder{} when it names
// none: its holder has not written it yet).
func readHolder(f *os.File) Holder {
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return Holder{}
	}
	return Holder{PID: pid}
}
