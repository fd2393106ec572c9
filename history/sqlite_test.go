package history

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func sqliteBackend() backend {
	return backend{
		location: func(t *testing.T) string { return filepath.Join(t.TempDir(), "results", "history.db") },
		setVersion: func(t *testing.T, loc string, v int) {
			db := rawSQLite(t, loc)
			if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
				t.Fatal(err)
			}
			db.Close()
		},
		version:  sqliteSchemaVersion,
		snapshot: fileSnapshot,
	}
}

func TestSQLite(t *testing.T) { runSuite(t, sqliteBackend()) }

// rawSQLite opens a file with the driver directly, bypassing the store.
func rawSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+sqliteURIPath(path)+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// fileSnapshot checksums a database file and its WAL, and lists which of
// the companion files exist.
func fileSnapshot(t *testing.T, path string) string {
	t.Helper()
	var out []string
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + suffix)
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, suffix+":none")
		case err != nil:
			t.Fatal(err)
		case suffix == "-shm": // shared-memory index: readers write it
			out = append(out, suffix+":exists")
		default:
			out = append(out, fmt.Sprintf("%s:%x", suffix, sha256.Sum256(b)))
		}
	}
	return strings.Join(out, " ")
}

// makeHistory creates a closed history file holding n runs.
func makeHistory(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.Add(context.Background(), sampleRun(fmt.Sprintf("r%d", i), i, "master", "find")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("WAL left after the last close: %v", err)
	}
	return path
}

func TestSQLiteCorruptFilesAreRefusedAndLeftUnchanged(t *testing.T) {
	good := makeHistory(t, 40)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := 4096
	if len(data) < 4*pageSize {
		t.Fatalf("test history is only %d bytes", len(data))
	}
	random := make([]byte, 3*pageSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	// A valid header over garbage pages: SQLite itself finds the damage.
	garbled := slices.Clone(data)
	for i := pageSize; i < len(garbled); i++ {
		garbled[i] = byte(rng.UintN(256))
	}
	cases := map[string][]byte{
		"random bytes":         random,
		"text":                 []byte("this is not a database\n"),
		"half a header":        data[:50],
		"truncated mid-page":   data[:len(data)/2+100],
		"truncated at a page":  data[:2*pageSize],
		"garbled after page 1": garbled,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.db")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			before := fileSnapshot(t, path)
			s, err := Open(context.Background(), path)
			if err == nil {
				// Only a file whose damage hides past its first page may
				// open; reading it must then fail as corruption.
				_, err = s.Runs(context.Background(), Filter{})
				s.Close()
				if name != "garbled after page 1" {
					t.Fatalf("Open succeeded")
				}
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			if after := fileSnapshot(t, path); after != before {
				t.Fatalf("file changed: %s -> %s", before, after)
			}
		})
	}
}

func TestSQLiteOtherDatabasesAreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawSQLite(t, path)
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := fileSnapshot(t, path)
	if _, err := Open(context.Background(), path); !errors.Is(err, ErrNotHistory) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of another database: %v, want ErrNotHistory naming the file", err)
	}
	if after := fileSnapshot(t, path); after != before {
		t.Fatal("file changed")
	}
	db = rawSQLite(t, path)
	if _, err := db.Exec(`PRAGMA application_id = 42`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(context.Background(), path); !errors.Is(err, ErrNotHistory) {
		t.Fatalf("Open of another application's database: %v, want ErrNotHistory", err)
	}
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Open of a directory: %v", err)
	}
	if _, err := Open(context.Background(), "postgres://db/x"); err == nil || !strings.Contains(err.Error(), "postgres") {
		t.Fatalf("Open of an unknown scheme: %v", err)
	}
}

func TestSQLiteEmptyFileIsInitialised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, path)
	mustAdd(t, s, sampleRun("a", 0, "master", "find"))
}

func TestSQLiteMigratesAnOlderSchema(t *testing.T) {
	path := makeHistory(t, 3)
	// Turn the file back into schema version 1: without step 2's indexes,
	// step 3's column and step 4's.
	db := rawSQLite(t, path)
	for _, stmt := range []string{`DROP INDEX trial_metrics_by_metric`, `DROP INDEX effects_by_metric`, `DROP INDEX runs_workload`,
		`ALTER TABLE runs DROP COLUMN partial`, `ALTER TABLE runs DROP COLUMN workload_definition`, `ALTER TABLE arms DROP COLUMN definition`,
		`PRAGMA user_version = 1`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	// A reader reads the old schema as it is and migrates nothing.
	before := fileSnapshot(t, path)
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatalf("OpenReadOnly of a version 1 file: %v", err)
	}
	if l, err := ro.List(context.Background(), Filter{}); err != nil || len(l) != 3 || l[0].Partial {
		t.Fatalf("read-only List of a version 1 file = %v, %v", l, err)
	}
	ro.Close()
	if after := fileSnapshot(t, path); after != before {
		t.Fatalf("a reader changed the version 1 file: %s, then %s", before, after)
	}
	s := mustOpen(t, path)
	if l, err := s.List(context.Background(), Filter{}); err != nil || len(l) != 3 {
		t.Fatalf("List after migration = %v, %v", l, err)
	}
	// The migrated file keeps definitions (step 4's columns).
	mustAdd(t, s, sampleRun("new", 9, "master", "find"))
	if got, err := s.Get(context.Background(), "new"); err != nil || string(got.WorkloadDefinition) != `{"kind":"find","storm_rate":271.5}` ||
		len(got.Arms[1].Definition) == 0 {
		t.Fatalf("a night added after migration: %+v, %v", got, err)
	}
	s.Close()
	db = rawSQLite(t, path)
	defer db.Close()
	var version, indexes int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('trial_metrics_by_metric', 'effects_by_metric', 'runs_workload')`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if version != sqliteSchemaVersion || indexes != 3 {
		t.Fatalf("after migration: version %d, %d of 3 indexes", version, indexes)
	}
}

// The adder process: the test binary re-executed by
// TestSQLiteConcurrentProcesses.
const (
	adderEnvDB   = "QMLSAB_HISTORY_TEST_ADDER_DB"
	adderEnvRuns = "QMLSAB_HISTORY_TEST_ADDER_RUNS"
)

// adderProcess waits for a line on stdin, opens db and adds the named runs,
// printing "added ID" or "present ID" for each.
func adderProcess(db string, runs []string) int {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "waiting for the start signal:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	for _, id := range runs {
		var day int
		fmt.Sscanf(id, "p%d", &day)
		added, err := s.Add(ctx, sampleRun(id, day, "master", "find"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		word := "present"
		if added {
			word = "added"
		}
		fmt.Println(word, id)
	}
	return 0
}

func TestSQLiteConcurrentProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db") // created by the racing processes
	var all []string
	for i := range 8 {
		all = append(all, fmt.Sprintf("p%d", i))
	}
	const procs = 3
	type result struct {
		out bytes.Buffer
		err error
	}
	results := make([]result, procs)
	var cmds []*exec.Cmd
	var starts []func()
	for p := range procs {
		order := slices.Clone(all)
		if p%2 == 1 {
			slices.Reverse(order)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), adderEnvDB+"="+path, adderEnvRuns+"="+strings.Join(order, ","))
		cmd.Stdout = &results[p].out
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		starts = append(starts, func() { stdin.Write([]byte("go\n")); stdin.Close() })
		defer func() {
			if stderr.Len() > 0 {
				t.Logf("process %d stderr: %s", p, stderr.String())
			}
		}()
	}
	for _, start := range starts { // release them together
		start()
	}
	var wg sync.WaitGroup
	for p, cmd := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); results[p].err = cmd.Wait() }()
	}
	wg.Wait()
	added := map[string]int{}
	for p, r := range results {
		if r.err != nil {
			t.Fatalf("process %d: %v", p, r.err)
		}
		lines := strings.Split(strings.TrimSpace(r.out.String()), "\n")
		if len(lines) != len(all) {
			t.Fatalf("process %d printed %q", p, r.out.String())
		}
		for _, l := range lines {
			if id, ok := strings.CutPrefix(l, "added "); ok {
				added[id]++
			}
		}
	}
	for _, id := range all {
		if added[id] != 1 {
			t.Errorf("run %s added by %d processes, want exactly 1", id, added[id])
		}
	}
	s := mustOpen(t, path)
	runs, err := s.Runs(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(runs, runID); !slices.Equal(got, all) {
		t.Fatalf("stored %v, want %v", got, all)
	}
}
