package mongosim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the lock a process holds on its dbpath, as mongod's.
const LockFileName = "mongod.lock"

// ErrDBPathInUse is the refusal of a dbpath another process holds;
// its text begins with mongod's error name for it.
var ErrDBPathInUse = errors.New("DBPathInUse")

// DBPathLock is a process's hold on its dbpath: <dbpath>/mongod.lock,
// exclusively flock'ed for as long as the process runs and holding its
// pid, as mongod holds it. The kernel drops the lock when the process
// dies however it dies, so a SIGKILLed member leaves no stale lock (the
// file stays, with the dead pid in it, as mongod's does).
type DBPathLock struct {
	f *os.File
}

// LockDBPath takes dbpath (creating it) for this process, or refuses
// with an error wrapping ErrDBPathInUse, naming the lock file and the
// holder's pid, when another process holds it: two members on one dbpath
// would interleave their diagnostic.data and their oplog file.
func LockDBPath(dbpath string) (*DBPathLock, error) {
	if err := os.MkdirAll(dbpath, 0o755); err != nil {
		return nil, fmt.Errorf("--dbpath %s: %w", dbpath, err)
	}
	path := filepath.Join(dbpath, LockFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--dbpath %s: %w", dbpath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: cannot lock %s (%v): another mongod or mongosim%s is already running on the %s directory",
				ErrDBPathInUse, path, err, holder, dbpath)
		}
		return nil, fmt.Errorf("%w: cannot lock %s: %v", ErrDBPathInUse, path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &DBPathLock{f: f}, nil
}

// Release empties the lock file (a clean shutdown, as mongod leaves it)
// and gives the dbpath up.
func (l *DBPathLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
