// Package history keeps the history of qmlsab runs, so the nightly pipeline
// can list past nights, chart a metric night by night and spot when an arm's
// effect changed.
//
// A [Run] is one `qmlsab run`: its arms, each valid trial's metrics, and per
// arm the Hodges-Lehmann shift against the baseline arm with its
// Mann-Whitney p-value. A [Store] adds runs and reads them back: [Store.List]
// (one summary per night), [Store.Series] (per night, all trial values of a
// metric for an arm), [Store.Effects] (per night, an arm's effect on a
// metric), [Store.Runs] and [Store.Get]. Every read takes a [Filter] by
// workload, labels (e.g. branch=master), start time and "last N runs", and
// returns runs ordered by start time, then id. Times come back in UTC.
// [ExportOtava] writes runs in Apache Otava's JSON import format for
// change-point detection.
//
// [Open] picks the backend from the location: a mongodb:// or
// mongodb+srv:// URI opens the MongoDB backend, for teams whose nightly jobs
// run on many machines; anything else is the path of an SQLite file (for
// example results/history.db), the embedded default, created with its
// directory on first use. The SQLite driver is pure Go (modernc.org/sqlite):
// no C toolchain is needed.
//
// Readers use [OpenReadOnly], which creates, migrates and writes nothing:
// a missing file is [ErrNoHistory]; an SQLite file no writer has open is
// read as immutable (no locks, no -wal or -shm files), one a writer has
// open through the writer's WAL; an older schema is read as it is. Wrapped
// in [Checked], reads refuse a workload, label, arm or metric that matches
// nothing ([ErrUnknown], naming the value and what the history holds).
//
// # Metric names across definition changes
//
// Trials keep their metrics by name, as the run that measured them named
// them. A metric's name keeps one meaning (package metric retires a name
// whose definition changed, metric.Retired), so a series is one quantity
// from its first night to its last: nights stored before a change hold
// the old name, nights after it the new one, and nothing here compares
// the two.
//
// # Adding is idempotent
//
// A run is identified by its id. Adding an id that is already stored
// changes nothing and reports added=false when the content is the same
// (compared by [Digest], SHA-256 of the [Normalize]d run, so trial order and
// time zone do not matter; a night stored before the history kept
// definitions is the same night when added again with them). Different
// content under a stored id is refused with an error wrapping
// [ErrConflict] that names what differs ([Differences]: the labels, a
// definition key, the trials): stored runs are never replaced, since a
// different run under a reused id is a bug upstream that a history must
// not hide.
//
// # What a night compared
//
// Each night keeps the resolved workload it ran ([Run.WorkloadDefinition],
// the JSON its manifest records, beside [Run.WorkloadDigest]) and each
// arm's definition ([Arm.Definition]: its arms-file entry without name and
// description), so that a reader can segment a history where either
// changed and name the keys that did (package nightly). Nights stored
// before they were kept have neither; readers fall back on the workload
// digest and the arms' parameters. [Validate] lists what Add refuses ([ErrInvalidRun]); non-finite
// numbers among them, so an effect that could not be computed is left out.
//
// # SQLite schema
//
// The version is PRAGMA user_version; PRAGMA application_id is 0x716d6c73
// ("qmls") and marks the file as a history database.
//
//   - Version 1: runs (id primary key, started_ns Unix nanoseconds, workload,
//     workload_digest, baseline, simulated, host_* columns, digest, added_ns);
//     run_labels (run_id, key, value); arms (run_id, name, ord, build,
//     parameters as a JSON object); trials (run_id, arm, idx, host);
//     trial_metrics (run_id, arm, idx, metric, value); effects (run_id, arm,
//     metric, shift, p). Children reference runs(id).
//   - Version 2: indexes on trial_metrics and effects by (metric, arm, run_id)
//     and on runs by (workload, started_ns).
//   - Version 3: runs.partial, set for a run stored before all its planned
//     trials finished ([Run.Partial]).
//   - Version 4: runs.workload_definition and arms.definition (JSON text,
//     empty in nights stored before).
//
// Migrations are a list of steps applied in order in one transaction on
// open. Before SQLite touches a file, Open reads its header: a file that is
// not a history database ([ErrNotHistory]), is damaged or truncated
// ([ErrCorrupt]), or has a schema version newer than this code knows
// ([ErrNewerSchema]) is refused with an error naming the file, and left
// byte for byte as it was. Damage past the first page that the header cannot
// show surfaces as [ErrCorrupt] from the read that meets it. An empty file is
// initialised as a new history.
//
// # MongoDB schema
//
// Database from the URI path ([MongoDefaultDatabase] when it has none).
// Collection "runs" holds one document per run with _id = the run id, so
// the _id index makes ids unique with no further index; maps are stored as
// arrays of {k, v} (labels, parameters) or {name, value} (metrics) so names
// may contain '.' or '$'; startedNs holds the start time in Unix
// nanoseconds (started, a date, is for people); partial is present and
// true for a run stored before all its planned trials finished;
// workloadDefinition and each arm's definition hold the definitions' JSON
// text, absent in documents written before they were kept (a field more
// needs no migration: older documents read without it). Collection "meta"
// holds {_id: "schema", version}.
//
//   - Version 1: indexes on runs by (startedNs, _id) and (workload,
//     startedNs). A server without createIndexes (such as the in-process
//     simulator) is accepted without them: they only speed reads up.
//
// Migration steps are idempotent; the version advances by compare-and-set
// on the meta document, so concurrent openers agree, and a newer version is
// refused with [ErrNewerSchema] without changing anything. Errors never
// contain the URI's password or secret options: see [RedactURI].
//
// # Concurrency
//
// A Store is safe for concurrent use, and any number of Stores, in one
// process or many, may use one location at once: each run lands exactly
// once and exactly one Add reports added=true for it. SQLite runs in WAL
// mode (readers do not block the writer); each Add is one BEGIN IMMEDIATE
// transaction, waiting up to 30 s for another writer, and the primary key
// on the run id decides between concurrent adds of one run. Opening
// migrates in the same kind of transaction, so concurrent first opens of a
// new file create the schema once. WAL needs the file on a local file
// system (not NFS): jobs on several machines share a MongoDB history
// instead. On MongoDB each Add is one insert of the
// whole run document, and the duplicate key error on _id decides. Readers
// see whole runs only: a run and its trials are written atomically.
package history
