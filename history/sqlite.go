package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteAppID is the PRAGMA application_id of a history file ("qmls").
const sqliteAppID = 0x716d6c73

// sqliteBusyTimeout is how long a writer waits for another one to finish.
const sqliteBusyTimeout = 30 * time.Second

// sqliteMigrations are the schema steps: step i takes user_version from i
// to i+1. Append, never edit, once a step has shipped.
var sqliteMigrations = [][]string{
	// 1: the tables.
	{
		`CREATE TABLE runs (
			id TEXT PRIMARY KEY,
			started_ns INTEGER NOT NULL,
			workload TEXT NOT NULL,
			workload_digest TEXT NOT NULL,
			baseline TEXT NOT NULL,
			simulated INTEGER NOT NULL,
			host_name TEXT NOT NULL,
			host_cpu_model TEXT NOT NULL,
			host_cores INTEGER NOT NULL,
			host_memory_bytes INTEGER NOT NULL,
			host_kernel TEXT NOT NULL,
			host_target_kind TEXT NOT NULL,
			digest TEXT NOT NULL,
			added_ns INTEGER NOT NULL
		)`,
		`CREATE INDEX runs_started ON runs(started_ns, id)`,
		`CREATE TABLE run_labels (
			run_id TEXT NOT NULL REFERENCES runs(id),
			key TEXT NOT NULL,
			value TEXT NOT NULL,
			PRIMARY KEY (run_id, key)
		) WITHOUT ROWID`,
		`CREATE TABLE arms (
			run_id TEXT NOT NULL REFERENCES runs(id),
			name TEXT NOT NULL,
			ord INTEGER NOT NULL,
			build TEXT NOT NULL,
			parameters TEXT NOT NULL,
			PRIMARY KEY (run_id, name)
		) WITHOUT ROWID`,
		`CREATE TABLE trials (
			run_id TEXT NOT NULL REFERENCES runs(id),
			arm TEXT NOT NULL,
			idx INTEGER NOT NULL,
			host TEXT NOT NULL,
			PRIMARY KEY (run_id, arm, idx)
		) WITHOUT ROWID`,
		`CREATE TABLE trial_metrics (
			run_id TEXT NOT NULL,
			arm TEXT NOT NULL,
			idx INTEGER NOT NULL,
			metric TEXT NOT NULL,
			value REAL NOT NULL,
			PRIMARY KEY (run_id, arm, idx, metric),
			FOREIGN KEY (run_id, arm, idx) REFERENCES trials(run_id, arm, idx)
		) WITHOUT ROWID`,
		`CREATE TABLE effects (
			run_id TEXT NOT NULL REFERENCES runs(id),
			arm TEXT NOT NULL,
			metric TEXT NOT NULL,
			shift REAL NOT NULL,
			p REAL NOT NULL,
			PRIMARY KEY (run_id, arm, metric)
		) WITHOUT ROWID`,
		fmt.Sprintf(`PRAGMA application_id = %d`, sqliteAppID),
	},
	// 2: indexes for Series and Effects, and for the workload filter.
	{
		`CREATE INDEX trial_metrics_by_metric ON trial_metrics(metric, arm, run_id)`,
		`CREATE INDEX effects_by_metric ON effects(metric, arm, run_id)`,
		`CREATE INDEX runs_workload ON runs(workload, started_ns)`,
	},
	// 3: runs stored before all their planned trials had finished.
	{
		`ALTER TABLE runs ADD COLUMN partial INTEGER NOT NULL DEFAULT 0`,
	},
	// 4: the definitions a night compared (the resolved workload, each
	// arm's entry), so a change between nights can be named; '' in nights
	// stored before.
	{
		`ALTER TABLE runs ADD COLUMN workload_definition TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE arms ADD COLUMN definition TEXT NOT NULL DEFAULT ''`,
	},
}

// sqliteSchemaVersion is the schema version this code writes to SQLite files.
var sqliteSchemaVersion = len(sqliteMigrations)

type sqliteStore struct {
	db   *sql.DB
	path string
	// readOnly stores (OpenReadOnly) read the schema version they found:
	// version 0 is a file without a schema (an empty history), and older
	// versions lack later columns.
	readOnly bool
	version  int
}

// checkedSQLitePath is path made absolute and checked as a history file
// before either opener lets SQLite near it (checkSQLiteFile): whether it
// exists, or why it is not one.
func checkedSQLitePath(path string) (abs string, exists bool, err error) {
	abs, err = filepath.Abs(path)
	if err != nil {
		return "", false, fmt.Errorf("history: %s: %w", path, err)
	}
	exists, err = checkSQLiteFile(abs)
	return abs, exists, err
}

// openSQLite opens (creating on first use) the history file at path. The
// file is checked before SQLite writes anything to it, so a corrupt file,
// one of a newer schema or another application's database is left as it
// was.
func openSQLite(ctx context.Context, path string) (Store, error) {
	abs, exists, err := checkedSQLitePath(path)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("history: creating %s: %w", abs, err)
		}
	}
	dsn := "file:" + sqliteURIPath(abs) + fmt.Sprintf("?_busy_timeout=%d&_txlock=immediate&_fk=1", sqliteBusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", abs, err)
	}
	s := &sqliteStore{db: db, path: abs}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// openSQLiteReadOnly opens an existing history file for reading without
// writing anything: no folder, file, schema, WAL mode or -wal/-shm files.
// SQLite in WAL mode makes a reader create the -shm and -wal files when
// they are missing (and leave them behind), so a file without a -wal
// file, which no writer has open, is read as immutable (no locks, no side
// files); while a writer has it open, its -wal and -shm files exist and
// the reader shares them read-only, seeing only committed runs.
func openSQLiteReadOnly(ctx context.Context, path string) (Store, error) {
	abs, exists, err := checkedSQLitePath(path)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("history: %s: %w (a reader never creates one)", abs, ErrNoHistory)
	}
	mode := "mode=ro&immutable=1"
	if _, err := os.Stat(abs + "-wal"); err == nil {
		mode = "mode=ro"
	}
	dsn := "file:" + sqliteURIPath(abs) + fmt.Sprintf("?%s&_busy_timeout=%d&_pragma=query_only(1)", mode, sqliteBusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", abs, err)
	}
	s := &sqliteStore{db: db, path: abs, readOnly: true}
	var appID, objects int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version),
		(SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master)`).Scan(&s.version, &appID, &objects); err != nil {
		db.Close()
		return nil, s.sqlErr("reading the schema version", err)
	}
	switch {
	case appID != 0 && uint32(appID) != sqliteAppID, appID == 0 && (s.version != 0 || objects != 0):
		db.Close()
		return nil, fmt.Errorf("history: %s: %w (application id %#x, %d schema objects)", abs, ErrNotHistory, uint32(appID), objects)
	case s.version > sqliteSchemaVersion:
		db.Close()
		return nil, newerSQLite(abs, s.version)
	}
	return s, nil
}

// empty is a read-only store of a file without a schema yet.
func (s *sqliteStore) empty() bool { return s.readOnly && s.version == 0 }

// partialColumn reads runs.partial, which schema version 3 added.
func (s *sqliteStore) partialColumn() string {
	if s.readOnly && s.version < 3 {
		return "0"
	}
	return "r.partial"
}

// definitionColumn reads a definition column of table alias t, which
// schema version 4 added (” before).
func (s *sqliteStore) definitionColumn(column string) string {
	if s.readOnly && s.version < 4 {
		return "''"
	}
	return column
}

// sqliteURIPath escapes what a file: URI reserves.
func sqliteURIPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// checkSQLiteFile reads the file's header without SQLite and refuses what
// is not a healthy history file. exists is false for a missing file; an
// empty file counts as existing (SQLite treats it as an empty database).
func checkSQLiteFile(path string) (exists bool, err error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("history: %s: %w: %s; the file was left unchanged", path, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return true, fmt.Errorf("history: %w", err)
	}
	if st.IsDir() {
		return true, fmt.Errorf("history: %s is a directory, not a history database file", path)
	}
	size := st.Size()
	if size == 0 {
		return true, nil
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return true, corrupt("%d bytes is shorter than an SQLite header (truncated?)", size)
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return true, corrupt("not an SQLite database (bad header)")
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return true, corrupt("invalid page size %d", pageSize)
	}
	if size%pageSize != 0 {
		return true, corrupt("size %d is not a whole number of %d-byte pages (truncated?)", size, pageSize)
	}
	changes, pages, validFor := binary.BigEndian.Uint32(h[24:28]), int64(binary.BigEndian.Uint32(h[28:32])), binary.BigEndian.Uint32(h[92:96])
	if _, err := os.Stat(path + "-wal"); errors.Is(err, os.ErrNotExist) && pages > 0 && changes == validFor && size < pages*pageSize {
		return true, corrupt("size %d is less than the %d pages of %d bytes its header records (truncated?)", size, pages, pageSize)
	}
	version := int(int32(binary.BigEndian.Uint32(h[60:64])))
	appID := binary.BigEndian.Uint32(h[68:72])
	if appID != 0 && appID != sqliteAppID {
		return true, fmt.Errorf("history: %s: %w (application id %#x)", path, ErrNotHistory, appID)
	}
	if appID == sqliteAppID && version > sqliteSchemaVersion {
		return true, newerSQLite(path, version)
	}
	return true, nil
}

func newerSQLite(path string, version int) error {
	return fmt.Errorf("history: %s: %w: schema version %d, this qmlsab knows up to %d; upgrade qmlsab (the file was left unchanged)",
		path, ErrNewerSchema, version, sqliteSchemaVersion)
}

// sqlErr names the file in an error and classifies corruption.
func (s *sqliteStore) sqlErr(what string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("history: %s: %w: %s: %v", s.path, ErrCorrupt, what, err)
		}
	}
	return fmt.Errorf("history: %s: %s: %w", s.path, what, err)
}

// init checks the schema, turns on WAL and runs the migrations.
func (s *sqliteStore) init(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.sqlErr("opening", err)
	}
	defer conn.Close()
	// One statement, so one snapshot: another opener may be migrating.
	var version, appID, objects int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version),
		(SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master)`).Scan(&version, &appID, &objects); err != nil {
		return s.sqlErr("reading the schema version", err)
	}
	switch {
	case appID != 0 && uint32(appID) != sqliteAppID, appID == 0 && (version != 0 || objects != 0):
		return fmt.Errorf("history: %s: %w (application id %#x, %d schema objects)", s.path, ErrNotHistory, uint32(appID), objects)
	case version > sqliteSchemaVersion:
		return newerSQLite(s.path, version)
	}
	// WAL lets readers run beside the one writer; the mode is persistent.
	var mode string
	for attempt := 0; ; attempt++ {
		err = conn.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		var se *sqlite.Error
		if err == nil || attempt >= 50 || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return s.sqlErr("turning on WAL", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("history: %s: journal mode is %q, not WAL", s.path, mode)
	}
	if version == sqliteSchemaVersion {
		return nil
	}
	return s.migrate(ctx, conn)
}

// migrate applies the missing schema steps in one immediate transaction, so
// concurrent openers serialise and each step runs once.
func (s *sqliteStore) migrate(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return s.sqlErr("starting the schema migration", err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return s.sqlErr("reading the schema version", err)
	}
	switch {
	case version > sqliteSchemaVersion:
		return newerSQLite(s.path, version)
	case version == sqliteSchemaVersion: // another opener migrated first
		return nil
	}
	for v := version; v < sqliteSchemaVersion; v++ {
		for _, stmt := range sqliteMigrations[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return s.sqlErr(fmt.Sprintf("migrating the schema to version %d", v+1), err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, sqliteSchemaVersion)); err != nil {
		return s.sqlErr("recording the schema version", err)
	}
	if err := tx.Commit(); err != nil {
		return s.sqlErr("committing the schema migration", err)
	}
	return nil
}

func (s *sqliteStore) Close() error { return s.db.Close() }

func (s *sqliteStore) Add(ctx context.Context, r Run) (bool, error) {
	if s.readOnly {
		return false, fmt.Errorf("history: %s: adding run %s: %w", s.path, r.ID, ErrReadOnly)
	}
	r, digest, err := prepare(r)
	if err != nil {
		return false, err
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: waits for other writers
	if err != nil {
		return false, s.sqlErr("adding run "+r.ID, err)
	}
	defer tx.Rollback()
	h := r.Host
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (id, started_ns, workload, workload_digest, baseline, simulated,
		host_name, host_cpu_model, host_cores, host_memory_bytes, host_kernel, host_target_kind, digest, added_ns, partial,
		workload_definition)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		r.ID, nanos(r.Started), r.Workload, r.WorkloadDigest, r.Baseline, r.Simulated,
		h.Name, h.CPUModel, h.Cores, h.MemoryBytes, h.Kernel, h.TargetKind, digest, time.Now().UnixNano(), r.Partial,
		string(r.WorkloadDefinition))
	if err != nil {
		return false, s.sqlErr("adding run "+r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, s.sqlErr("adding run "+r.ID, err)
	} else if n == 0 {
		var stored string
		if err := tx.QueryRowContext(ctx, `SELECT digest FROM runs WHERE id = ?`, r.ID).Scan(&stored); err != nil {
			return false, s.sqlErr("reading run "+r.ID, err)
		}
		if sameContent(stored, r, digest) {
			return false, nil
		}
		tx.Rollback()
		prev, err := s.Get(ctx, r.ID)
		if err != nil {
			return false, err
		}
		return false, conflict(prev, r, stored, digest)
	}
	exec := func(query string, rows func(yield func(args ...any) error) error) error {
		st, err := tx.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		return rows(func(args ...any) error {
			_, err := st.ExecContext(ctx, args...)
			return err
		})
	}
	err = errors.Join(
		exec(`INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`, func(ins func(...any) error) error {
			for _, k := range sortedKeys(r.Labels) {
				if err := ins(r.ID, k, r.Labels[k]); err != nil {
					return err
				}
			}
			return nil
		}),
		exec(`INSERT INTO arms (run_id, name, ord, build, parameters, definition) VALUES (?, ?, ?, ?, ?, ?)`, func(ins func(...any) error) error {
			for i, a := range r.Arms {
				params, err := json.Marshal(a.Parameters)
				if err != nil {
					return err
				}
				if err := ins(r.ID, a.Name, i, a.Build, string(params), string(a.Definition)); err != nil {
					return err
				}
			}
			return nil
		}),
		exec(`INSERT INTO trials (run_id, arm, idx, host) VALUES (?, ?, ?, ?)`, func(ins func(...any) error) error {
			for _, t := range r.Trials {
				if err := ins(r.ID, t.Arm, t.Index, t.Host); err != nil {
					return err
				}
			}
			return nil
		}),
		exec(`INSERT INTO trial_metrics (run_id, arm, idx, metric, value) VALUES (?, ?, ?, ?, ?)`, func(ins func(...any) error) error {
			for _, t := range r.Trials {
				for _, m := range sortedKeys(t.Metrics) {
					if err := ins(r.ID, t.Arm, t.Index, m, t.Metrics[m]); err != nil {
						return err
					}
				}
			}
			return nil
		}),
		exec(`INSERT INTO effects (run_id, arm, metric, shift, p) VALUES (?, ?, ?, ?, ?)`, func(ins func(...any) error) error {
			for _, e := range r.Effects {
				if err := ins(r.ID, e.Arm, e.Metric, e.Shift, e.P); err != nil {
					return err
				}
			}
			return nil
		}),
	)
	if err != nil {
		return false, s.sqlErr("adding run "+r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return false, s.sqlErr("adding run "+r.ID, err)
	}
	return true, nil
}

// sqlWhere turns a filter into a condition on runs aliased r.
func sqlWhere(f Filter) (string, []any) {
	conds := []string{"1 = 1"}
	var args []any
	if f.Workload != "" {
		conds, args = append(conds, "r.workload = ?"), append(args, f.Workload)
	}
	if !f.Since.IsZero() {
		conds, args = append(conds, "r.started_ns >= ?"), append(args, nanos(f.Since))
	}
	if !f.Until.IsZero() {
		conds, args = append(conds, "r.started_ns < ?"), append(args, nanos(f.Until))
	}
	for _, k := range sortedKeys(f.Labels) {
		conds = append(conds, "EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = ? AND l.value = ?)")
		args = append(args, k, f.Labels[k])
	}
	where := strings.Join(conds, " AND ")
	if f.Last > 0 {
		return "r.id IN (SELECT r.id FROM runs r WHERE " + where + " ORDER BY r.started_ns DESC, r.id DESC LIMIT ?)", append(args, f.Last)
	}
	return where, args
}

// load reads the runs matching where, ordered by start time. With full
// false it reads runs, labels and arms only, and counts the trials.
func (s *sqliteStore) load(ctx context.Context, where string, args []any, full bool) ([]Run, []int, error) {
	if s.empty() {
		return nil, nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.started_ns, r.workload, r.workload_digest, r.baseline, r.simulated,
		r.host_name, r.host_cpu_model, r.host_cores, r.host_memory_bytes, r.host_kernel, r.host_target_kind,
		(SELECT count(*) FROM trials t WHERE t.run_id = r.id), `+s.partialColumn()+`, `+s.definitionColumn("r.workload_definition")+`
		FROM runs r WHERE `+where+` ORDER BY r.started_ns, r.id`, args...)
	if err != nil {
		return nil, nil, s.sqlErr("reading runs", err)
	}
	var runs []Run
	var counts []int
	at := map[string]int{}
	for rows.Next() {
		var r Run
		var ns int64
		var n int
		var wdef string
		h := &r.Host
		if err := rows.Scan(&r.ID, &ns, &r.Workload, &r.WorkloadDigest, &r.Baseline, &r.Simulated,
			&h.Name, &h.CPUModel, &h.Cores, &h.MemoryBytes, &h.Kernel, &h.TargetKind, &n, &r.Partial, &wdef); err != nil {
			rows.Close()
			return nil, nil, s.sqlErr("reading runs", err)
		}
		r.Started = fromNanos(ns)
		if wdef != "" {
			r.WorkloadDefinition = json.RawMessage(wdef)
		}
		at[r.ID] = len(runs)
		runs, counts = append(runs, r), append(counts, n)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.sqlErr("reading runs", err)
	}
	if len(runs) == 0 {
		return nil, nil, nil
	}
	// Runs are immutable once committed, so the children of every run read
	// above are all there. They are selected by id, not by the filter again,
	// which could select other runs by now (Last).
	ids, err := json.Marshal(slices.Collect(maps.Keys(at)))
	if err != nil {
		return nil, nil, err
	}
	q := func(query string, dest func() []any, use func(run *Run)) error {
		rows, err := s.db.QueryContext(ctx, strings.ReplaceAll(query, "$SUB", "SELECT value FROM json_each(?)"), string(ids))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(append([]any{&id}, dest()...)...); err != nil {
				return err
			}
			if i, ok := at[id]; ok {
				use(&runs[i])
			}
		}
		return rows.Err()
	}
	var k, v, name, build, params, def, arm, host, metric string
	var idx int
	var value, shift, p float64
	err = errors.Join(
		q(`SELECT run_id, key, value FROM run_labels WHERE run_id IN ($SUB)`,
			func() []any { return []any{&k, &v} },
			func(r *Run) {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[k] = v
			}),
		q(`SELECT run_id, name, build, parameters, `+s.definitionColumn("definition")+` FROM arms WHERE run_id IN ($SUB) ORDER BY run_id, ord`,
			func() []any { return []any{&name, &build, &params, &def} },
			func(r *Run) {
				a := Arm{Name: name, Build: build}
				if err := json.Unmarshal([]byte(params), &a.Parameters); err == nil && len(a.Parameters) == 0 {
					a.Parameters = nil
				}
				if def != "" {
					a.Definition = json.RawMessage(def)
				}
				r.Arms = append(r.Arms, a)
			}),
	)
	if err == nil && full {
		err = errors.Join(
			q(`SELECT run_id, arm, idx, host FROM trials WHERE run_id IN ($SUB) ORDER BY run_id, arm, idx`,
				func() []any { return []any{&arm, &idx, &host} },
				func(r *Run) { r.Trials = append(r.Trials, Trial{Arm: arm, Index: idx, Host: host}) }),
			q(`SELECT run_id, arm, metric, shift, p FROM effects WHERE run_id IN ($SUB) ORDER BY run_id, arm, metric`,
				func() []any { return []any{&arm, &metric, &shift, &p} },
				func(r *Run) { r.Effects = append(r.Effects, Effect{Arm: arm, Metric: metric, Shift: shift, P: p}) }),
		)
		if err == nil {
			err = q(`SELECT run_id, arm, idx, metric, value FROM trial_metrics WHERE run_id IN ($SUB)`,
				func() []any { return []any{&arm, &idx, &metric, &value} },
				func(r *Run) {
					i, ok := slices.BinarySearchFunc(r.Trials, Trial{Arm: arm, Index: idx}, func(a, b Trial) int {
						return cmp.Or(strings.Compare(a.Arm, b.Arm), cmp.Compare(a.Index, b.Index))
					})
					if !ok {
						return
					}
					t := &r.Trials[i]
					if t.Metrics == nil {
						t.Metrics = map[string]float64{}
					}
					t.Metrics[metric] = value
				})
		}
	}
	if err != nil {
		return nil, nil, s.sqlErr("reading runs", err)
	}
	return runs, counts, nil
}

func (s *sqliteStore) Get(ctx context.Context, id string) (Run, error) {
	runs, _, err := s.load(ctx, "r.id = ?", []any{id}, true)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("history: %s: run %q: %w", s.path, id, ErrNotFound)
	}
	return runs[0], nil
}

func (s *sqliteStore) Runs(ctx context.Context, f Filter) ([]Run, error) {
	where, args := sqlWhere(f)
	runs, _, err := s.load(ctx, where, args, true)
	return runs, err
}

func (s *sqliteStore) List(ctx context.Context, f Filter) ([]RunSummary, error) {
	where, args := sqlWhere(f)
	runs, counts, err := s.load(ctx, where, args, false)
	if err != nil {
		return nil, err
	}
	out := make([]RunSummary, len(runs))
	for i, r := range runs {
		out[i] = summarize(r)
		out[i].Trials = counts[i]
	}
	return out, nil
}

func (s *sqliteStore) Series(ctx context.Context, metric, arm string, f Filter) ([]SeriesPoint, error) {
	if s.empty() {
		return nil, nil
	}
	where, args := sqlWhere(f)
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.started_ns, coalesce(a.build, ''), m.value
		FROM trial_metrics m JOIN runs r ON r.id = m.run_id
		LEFT JOIN arms a ON a.run_id = m.run_id AND a.name = m.arm
		WHERE m.metric = ? AND m.arm = ? AND `+where+`
		ORDER BY r.started_ns, r.id, m.idx`, append([]any{metric, arm}, args...)...)
	if err != nil {
		return nil, s.sqlErr("reading series", err)
	}
	defer rows.Close()
	var out []SeriesPoint
	for rows.Next() {
		var id, build string
		var ns int64
		var v float64
		if err := rows.Scan(&id, &ns, &build, &v); err != nil {
			return nil, s.sqlErr("reading series", err)
		}
		if len(out) == 0 || out[len(out)-1].RunID != id {
			out = append(out, SeriesPoint{RunID: id, Started: fromNanos(ns), Build: build})
		}
		last := &out[len(out)-1]
		last.Values = append(last.Values, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.sqlErr("reading series", err)
	}
	return out, nil
}

func (s *sqliteStore) Effects(ctx context.Context, metric, arm string, f Filter) ([]EffectPoint, error) {
	if s.empty() {
		return nil, nil
	}
	where, args := sqlWhere(f)
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.started_ns, r.baseline, coalesce(a.build, ''), e.shift, e.p
		FROM effects e JOIN runs r ON r.id = e.run_id
		LEFT JOIN arms a ON a.run_id = e.run_id AND a.name = e.arm
		WHERE e.metric = ? AND e.arm = ? AND `+where+`
		ORDER BY r.started_ns, r.id`, append([]any{metric, arm}, args...)...)
	if err != nil {
		return nil, s.sqlErr("reading effects", err)
	}
	defer rows.Close()
	var out []EffectPoint
	for rows.Next() {
		var e EffectPoint
		var ns int64
		if err := rows.Scan(&e.RunID, &ns, &e.Baseline, &e.Build, &e.Shift, &e.P); err != nil {
			return nil, s.sqlErr("reading effects", err)
		}
		e.Started = fromNanos(ns)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.sqlErr("reading effects", err)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
