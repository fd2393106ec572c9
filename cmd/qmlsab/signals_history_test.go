package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// holdsOpen reports whether process pid has path open (one of its
// /proc/pid/fd links points at it).
func holdsOpen(pid int, path string) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true
		}
	}
	return false
}

// SIGHUP while history add waits for another writer (a second pipeline
// job holding the history's write lock): add stops with exit 130 without
// waiting out the lock, and the night it was adding is not in the
// history, not even in part. The other writer holds the lock until add
// has exited, so the signal cannot come after add's commit.
func TestHistoryAddOnSIGHUPWhileWaitingForTheWriterAddsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	tmp := t.TempDir()
	wl := nightlyWorkload(t, tmp, 150)
	first, second := filepath.Join(tmp, "night-1"), filepath.Join(tmp, "night-2")
	quickRun(t, wl, first, 21)
	quickRun(t, wl, second, 22)
	db := filepath.Join(tmp, "hist", "history.db")
	if out, code := qmlsab(t, "history", "add", "--history-db", db, first); code != 0 {
		t.Fatalf("history add: exit %d:\n%s", code, out)
	}
	before, code := qmlsab(t, "history", "list", "--history-db", db)
	if code != 0 {
		t.Fatalf("history list: exit %d:\n%s", code, before)
	}

	// The other writer: an open BEGIN IMMEDIATE transaction.
	other, err := sql.Open("sqlite", "file:"+db+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	release := func() {
		if locked {
			conn.ExecContext(ctx, "ROLLBACK")
			locked = false
		}
	}
	defer release()

	p := startQmlsab(t, qmlsabBinary(t), "history", "add", "--history-db", db, second)
	deadline := time.Now().Add(2 * time.Minute)
	for !holdsOpen(p.cmd.Process.Pid, db) {
		if time.Now().After(deadline) {
			t.Fatalf("history add never opened %s", db)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	exited := make(chan int, 1)
	go func() { exited <- p.finish(false) }()
	var code2 int
	select {
	case code2 = <-exited:
	case <-time.After(20 * time.Second):
		// The history's busy wait is 30 s: an add that exits only after
		// it waited the lock out did not heed the signal.
		release()
		code2 = <-exited
		t.Errorf("history add exited only after the other writer let go (exit %d)", code2)
	}
	release()
	if code2 != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code2, exitInterrupted, p.out.String(), p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "interrupted by SIGHUP") || !strings.Contains(p.stderr.String(), "not added") {
		t.Errorf("the message does not say why it stopped and what was not added:\n%s", p.stderr.String())
	}
	after, code := qmlsab(t, "history", "list", "--history-db", db)
	if code != 0 {
		t.Fatalf("history list after: exit %d:\n%s", code, after)
	}
	if after != before {
		t.Errorf("the history changed although the add was interrupted:\nbefore:\n%safter:\n%s", before, after)
	}
}
