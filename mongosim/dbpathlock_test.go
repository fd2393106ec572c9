package mongosim

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A dbpath is held by one lock at a time (flock conflicts between open
// files even in one process): a second is refused with ErrDBPathInUse,
// naming the file and the holder's pid; after Release it can be taken.
func TestLockDBPathIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	l, err := LockDBPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LockFileName)
	pid := strconv.Itoa(os.Getpid())
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != pid {
		t.Errorf("%s holds %q, want pid %s", path, b, pid)
	}
	_, err = LockDBPath(dir)
	if !errors.Is(err, ErrDBPathInUse) || !strings.HasPrefix(err.Error(), "DBPathInUse: ") || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "pid "+pid) {
		t.Errorf("a second lock: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("released, %s holds %q", path, b)
	}
	again, err := LockDBPath(dir)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	again.Release()
}
