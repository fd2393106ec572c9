// Package store writes and reads run folders (results/<run-id>/): the
// manifest, one folder per arm and trial, and the files in it. Every file
// is written atomically (a temporary file, synced, then renamed), so an
// interrupted run keeps every trial it finished and never leaves a torn
// file; one writer at a time holds the folder's lock (lock.go), and the
// next one removes what a killed one left (temporaries.go). The reader
// checks schema versions, takes regular files only, caps what it reads
// of each file in bytes and in records (capped.go) and names any corrupt,
// truncated or inconsistent file. Files are
// written and read in the v2 format (snake_case keys, durations in
// seconds, encoding.go); a folder of the v1 format before it is refused,
// saying what to do.
package store

import (
	"bufio"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/qmlsab/qmlsab/plan"
)

// Schema versions of the files this package writes and reads. The v2
// format has snake_case keys and durations in seconds; the v1 format (Go
// field names and camelCase keys, durations in nanoseconds) is named only
// to refuse it with what to do. A trial's jsonl files are in the format
// its trial.json names.
const (
	ManifestSchema = "qmlsab/run/v2"
	TrialSchema    = "qmlsab/trial/v2"

	ManifestSchemaV1 = "qmlsab/run/v1"
	TrialSchemaV1    = "qmlsab/trial/v1"
)

// Manifest describes a run.
type Manifest struct {
	Schema      string    `json:"schema"`
	ToolVersion string    `json:"tool_version"`
	Created     time.Time `json:"created"`
	// RunID names the experiment, for the history: made when the run (or
	// each shard of one plan) is created, kept by resume and by merge
	// (NewRunID, GroupRunID); empty in runs written before it existed.
	RunID       string   `json:"run_id,omitempty"`
	Host        string   `json:"host"`
	CommandLine []string `json:"command_line"`
	// WorkloadName names the workload; Workload is its resolved spec.
	WorkloadName string          `json:"workload_name,omitempty"`
	Workload     json.RawMessage `json:"workload,omitempty"`
	Arms         json.RawMessage `json:"arms,omitempty"` // redacted
	// ArmList is each arm's name, build and parameters.
	ArmList   []ArmInfo `json:"arm_list,omitempty"`
	Seed      uint64    `json:"seed"`
	Target    string    `json:"target"`
	Simulated bool      `json:"simulated"`
	// Clock is ClockVirtual when the embedded model ran in model time
	// (faster than the wall clock, no wire), ClockWall otherwise.
	Clock Clock `json:"clock,omitempty"`
	// Profile is the phase profile the workload was scaled by (quick,
	// default, long); empty in runs written before it was recorded.
	Profile string `json:"profile,omitempty"`
	// Topology is the run's --topology (replset or sharded) when it was
	// given; empty when each arm's own topology held.
	Topology string `json:"topology,omitempty"`
	// Sim is the embedded target's simulated machine, as JSON (the run
	// layer's form of it), when the run was given another machine than
	// the default; absent for the default, and in runs written before it
	// was recorded (which ran on the default). The plan's digest covers it.
	Sim json.RawMessage `json:"sim,omitempty"`
	// Parallel is how many trials ran at once on one host: wall-clock
	// trials at once share the host's CPUs, which moves their figures.
	// 0 in runs written before it was recorded.
	Parallel int           `json:"parallel,omitempty"`
	Trials   []TrialStatus `json:"trials"`
	// Plan is the run's deterministic schedule (package plan); runs
	// written before plans existed have none.
	Plan *Plan `json:"plan,omitempty"`
	// Shard says this folder holds one shard of the plan (a run of some
	// of its units); absent for a whole run.
	Shard *plan.Shard `json:"shard,omitempty"`
	// Hosts are the machines that ran this folder's trials; each
	// TrialStatus.Host names one by its ID.
	Hosts []Host `json:"hosts,omitempty"`
	// Shards are a merged run's sources (qmlsab merge), by shard index.
	Shards []ShardSource `json:"shards,omitempty"`
	// Imported says the trials were not run by qmlsab but built from
	// another record (qmlsab import ftdc); absent for a run.
	Imported *Import `json:"imported,omitempty"`
}

// ArmNames are the run's arms, the baseline first: in the order the run
// was given them (ArmList), or, for a manifest without that list, in the
// order of their first trial.
func (m Manifest) ArmNames() []string {
	var names []string
	for _, a := range m.ArmList {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	for _, ts := range m.Trials {
		if !slices.Contains(names, ts.Arm) {
			names = append(names, ts.Arm)
		}
	}
	return names
}

// TrialStatus is one trial's place in the run.
type TrialStatus struct {
	Arm    string `json:"arm"`
	Index  int    `json:"index"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Host is the ID of the host (Manifest.Hosts) that ran the trial;
	// empty in runs written before hosts were recorded.
	Host string `json:"host,omitempty"`
}

// Trial is a trial's metadata and summary metrics.
type Trial struct {
	Schema    string             `json:"schema"`
	Arm       string             `json:"arm"`
	Index     int                `json:"index"`
	Started   time.Time          `json:"started"`
	Phases    map[Phase]float64  `json:"phases,omitempty"` // phase -> start, seconds into the trial
	Metadata  json.RawMessage    `json:"metadata,omitempty"`
	Metrics   map[string]float64 `json:"metrics"`
	Simulated bool               `json:"simulated"`
	Clock     Clock              `json:"clock,omitempty"` // as Manifest.Clock
	// Victims summarizes the storm's shed and killed ops (the raw ops are
	// in storm.jsonl.gz and events.jsonl.gz).
	Victims *Victims `json:"victims,omitempty"`
	// Absent names, by metric, why a metric this trial should have is
	// not in Metrics (the server never reported what it rests on, say):
	// absent, never zero.
	Absent map[string]string `json:"absent,omitempty"`
	// AtLeast are the metrics whose value is only a lower bound (a
	// latency quantile that fell on latencies a client timeout cut
	// short): the value is at least this. Never in Metrics, so nothing
	// averages or compares one as a measurement.
	AtLeast map[string]float64 `json:"at_least,omitempty"`
	// PrimaryLives are the trial's primaries, one per member process's
	// time as primary (metric.PrimaryLives).
	PrimaryLives []PrimaryLife `json:"primary_lives,omitempty"`
}

// VictimBinBytes is the width of Victims.Bins.
const VictimBinBytes = 8 << 20

// VictimBins is the most bins a Victims holds: the last one, bin
// VictimBins−1 (1016 MiB and up), is an overflow bin that also holds every
// larger size, so a summary's memory does not depend on the sizes it
// sees. One bin per 8 MiB up to whatever a record said grew a slice of
// 2^40 bins (and ran out of memory) for a trackedBytes of 2^63−1.
const VictimBins = 128

// MaxTrackedBytes bounds an operation's tracked memory as qmlsab records
// it: 1 PiB, beyond the memory of any server. An imported outcomes record
// above it is refused; a figure a live server reports above it is clamped
// to it (ClampTrackedBytes), since what a server reports is a measured
// outcome, never a crash of the harness.
const MaxTrackedBytes int64 = 1 << 50

// ClampTrackedBytes is n within [0, MaxTrackedBytes]: a negative count
// (which no server means) is 0, size unknown.
func ClampTrackedBytes(n int64) int64 { return min(max(n, 0), MaxTrackedBytes) }

// Victims are a trial's shed or killed storm ops: how many, how many with
// a known tracked size, a histogram of those sizes (bin i holds
// [i·8 MiB, (i+1)·8 MiB), the last of VictimBins bins everything from
// its start up), and the count per stage.
type Victims struct {
	Count  int            `json:"count"`
	Sized  int            `json:"sized"`
	Bins   []int          `json:"bins_8mib,omitempty"`
	Stages map[string]int `json:"stages,omitempty"`
}

// victimBin is the bin of a size (bytes > 0).
func victimBin(bytes int64) int { return int(min(bytes/VictimBinBytes, VictimBins-1)) }

// Add counts one victim (bytes 0: size unknown).
func (v *Victims) Add(bytes int64, stage string) {
	v.Count++
	if stage == "" {
		stage = "unknown"
	}
	if v.Stages == nil {
		v.Stages = map[string]int{}
	}
	v.Stages[stage]++
	if bytes <= 0 {
		return
	}
	v.Sized++
	b := victimBin(bytes)
	v.grow(b)
	v.Bins[b]++
}

// Merge adds o's victims to v (pooling an arm's trials). Bins of o past
// the overflow bin (a summary written before bins were capped) fold into
// it.
func (v *Victims) Merge(o *Victims) {
	v.Count += o.Count
	v.Sized += o.Sized
	for i, c := range o.Bins {
		b := min(i, VictimBins-1)
		v.grow(b)
		v.Bins[b] += c
	}
	for st, c := range o.Stages {
		if v.Stages == nil {
			v.Stages = map[string]int{}
		}
		v.Stages[st] += c
	}
}

func (v *Victims) grow(bin int) {
	if len(v.Bins) <= bin {
		v.Bins = append(v.Bins, make([]int, bin+1-len(v.Bins))...)
	}
}

// TrialDir is where a trial's files live in a run folder.
func TrialDir(run, arm string, index int) string {
	return filepath.Join(run, dirName(arm), "trial-"+strconv.Itoa(index))
}

// dirName is an arm's folder name: the name itself when it is made of
// letters, digits, '_' and '-', else those characters kept and every other
// byte percent-encoded, so no arm name can reach outside the run folder
// ("../x", "a/b") or collide with another.
func dirName(arm string) string {
	var b strings.Builder
	for i := 0; i < len(arm); i++ {
		c := arm[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if b.Len() == 0 {
		return "%"
	}
	return b.String()
}

// WriteFileAtomic writes data to path so that readers see the old file or
// the whole new one, never a part: a temporary file in the same folder,
// synced, then renamed over path.
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := WriteTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteTemp writes data to a synced temporary file in path's folder, named
// after path (the name the next writer's clean-up knows: temporaries.go),
// readable by all, and returns its name; renaming it over path is the
// caller's (WriteFileAtomic's, or a report's, which renames its outputs
// together). A failed write leaves no temporary.
func WriteTemp(path string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644) // results are shared; CreateTemp makes them private
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteJSONLinesGz writes records as gzip-compressed JSON lines, atomically
// (for samples and events, which are large); more records than a reader
// takes (RecordLimit) are refused, naming the file.
func WriteJSONLinesGz[T any](path string, records []T) error {
	if limit := RecordLimit(path); int64(len(records)) > limit {
		return fmt.Errorf("encoding %s: %d records, more than the %d a reader takes of a trial's %s: %w", path, len(records), limit, filepath.Base(path), ErrTooLarge)
	}
	var buf strings.Builder
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encoding %s: %w", path, err)
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return WriteFileAtomic(path, []byte(buf.String()))
}

// ReadJSONLinesGz reads what WriteJSONLinesGz wrote; a truncated or
// corrupt file, one inflating past its limit (InflatedLimit) or one
// holding more records than a trial writes (RecordLimit) is an error
// naming it.
func ReadJSONLinesGz[T any](path string) ([]T, error) {
	return readJSONLinesGz[T](path, InflatedLimit(path))
}

// readJSONLinesGz is ReadJSONLinesGz inflating at most limit bytes.
func readJSONLinesGz[T any](path string, limit int64) ([]T, error) {
	f, err := openRunFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt or truncated: %w", path, err)
	}
	var out []T
	sc := bufio.NewScanner(CapReader(zr, path, limit, "inflates to"))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line, maxRecords := 0, RecordLimit(path)
	for sc.Scan() {
		line++
		if int64(line) > maxRecords {
			return nil, tooManyRecords(path, maxRecords)
		}
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: corrupt or truncated: %w", path, err)
	}
	return out, nil
}

// RunIDEnv is the environment variable that gives a run its stamp: the
// same value in every shard of one experiment (a CI run number, say), so
// shards started on several machines get one run id.
const RunIDEnv = "QMLSAB_RUN_ID"

// NewRunID makes the run id of a run created now. With a stamp (RunIDEnv)
// it is the stamp and the plan digest's first 12 hex digits, the same in
// every shard given that stamp; without one, the creation time and random
// digits, unique to this folder.
func NewRunID(stamp, planDigest string, created time.Time) (string, error) {
	if stamp != "" {
		for _, c := range stamp {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return "", fmt.Errorf("$%s %q: want letters, digits, '-', '_' or '.'", RunIDEnv, stamp)
			}
		}
		return stamp + "-" + shortDigest(planDigest), nil
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a run id: %w", err)
	}
	return created.UTC().Format(folderTimeLayout) + "-" + hex.EncodeToString(b[:]), nil
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// GroupRunID is the run id of shard manifests of one plan (the id a merge
// of them records): their common run id when they share one, else one
// derived from the plan digest and their run ids (or, for shards written
// before run ids, their creation times), so the same shards always make
// the same id and other shards of the same plan another.
func GroupRunID(shards []Manifest) string {
	if len(shards) == 0 {
		return ""
	}
	var ids []string
	for _, m := range shards {
		id := m.RunID
		if id == "" {
			id = m.Created.UTC().Format(time.RFC3339Nano)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 1 && shards[0].RunID != "" {
		return ids[0]
	}
	slices.Sort(ids)
	digest := ""
	if shards[0].Plan != nil {
		digest = shards[0].Plan.Digest
	}
	sum := sha256.Sum256([]byte(digest + "\n" + strings.Join(ids, "\n")))
	return "plan-" + shortDigest(digest) + "-" + hex.EncodeToString(sum[:4])
}

// Completion counts a run's finished (valid or invalid) trials against
// those it planned. The runs are one run folder (whole or merged) or the
// shard folders of one plan, which plan the whole plan between them: a
// missing shard's trials count as planned and not finished.
func Completion(runs []*Run) (finished, planned int) {
	listed := 0
	for _, r := range runs {
		for _, ts := range r.Manifest.Trials {
			listed++
			if ts.Status == Valid || ts.Status == Invalid {
				finished++
			}
		}
	}
	planned = listed
	if p := runs[0].Manifest.Plan; p != nil {
		planned = max(planned, p.Units*len(p.Arms))
	}
	return finished, planned
}

// Tally counts a run's trials by how they ended.
type Tally struct {
	// Trials are all the trials the manifest lists; Finished, those valid
	// or invalid; Invalid, the invalid ones.
	Trials, Finished, Invalid int
	// Reasons are the first ten invalid trials' reasons, each after its
	// trial's name ("D#2: …").
	Reasons []string
}

// Tally counts the manifest's trials by how they ended.
func (m Manifest) Tally() Tally {
	t := Tally{Trials: len(m.Trials)}
	for _, ts := range m.Trials {
		switch ts.Status {
		case Invalid:
			t.Invalid++
			t.Finished++
			if ts.Reason != "" && len(t.Reasons) < 10 {
				t.Reasons = append(t.Reasons, plan.Key(ts.Arm, ts.Index)+": "+ts.Reason)
			}
		case Valid:
			t.Finished++
		}
	}
	return t
}

// Run is a run folder as read back.
type Run struct {
	Dir      string
	Manifest Manifest
	// Trials are the finished trials, by arm, in index order: the valid
	// ones and the invalid ones that wrote a trial.json (Valid is the
	// valid ones alone).
	Trials map[string][]Trial
}

// Valid are arm's trials the manifest marks valid, in index order. A
// trial invalidated after it was written (a host too busy to keep up
// with an in-process server) keeps its trial.json and stands in Trials,
// but not here.
func (r *Run) Valid(arm string) []Trial {
	valid := map[int]bool{}
	for _, ts := range r.Manifest.Trials {
		if ts.Arm == arm && ts.Status == Valid {
			valid[ts.Index] = true
		}
	}
	var out []Trial
	for _, t := range r.Trials[arm] {
		if valid[t.Index] {
			out = append(out, t)
		}
	}
	return out
}

// Trial is arm's finished trial of this index, when the run holds one
// (a trial.json was read, or written, for it).
func (r *Run) Trial(arm string, index int) (Trial, bool) {
	for _, t := range r.Trials[arm] {
		if t.Index == index {
			return t, true
		}
	}
	return Trial{}, false
}

// ReadManifest reads a run folder's manifest alone (either format, as
// Open does), without its trials.
func ReadManifest(dir string) (Manifest, error) {
	mpath := filepath.Join(dir, ManifestFile)
	b, err := ReadRunFile(mpath, MaxManifestBytes)
	if err != nil {
		return Manifest{}, manifestErr(dir, mpath, err)
	}
	m, err := decodeManifest(b)
	if err != nil {
		if isSchemaError(err) {
			return Manifest{}, fmt.Errorf("%s: %w", mpath, err)
		}
		return Manifest{}, fmt.Errorf("%s: corrupt or truncated: %w", mpath, err)
	}
	if err := checkListedOnce(m.Trials); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", mpath, err)
	}
	return m, nil
}

// checkListedOnce refuses a list of trials that names one trial twice: a
// reader would count it twice (n = 4 from 2 trials).
func checkListedOnce(trials []TrialStatus) error {
	type key struct {
		arm   string
		index int
	}
	first := map[key]int{}
	for i, ts := range trials {
		k := key{ts.Arm, ts.Index}
		if j, ok := first[k]; ok {
			return fmt.Errorf("arm %s's trial %d is listed twice (trials[%d] and trials[%d]); a run lists each trial once", ts.Arm, ts.Index, j, i)
		}
		first[k] = i
	}
	return nil
}

// ErrNotRun marks a folder that is not a run folder: it has no manifest,
// or it does not exist. Such an error is fs.ErrNotExist too.
var ErrNotRun = errors.New("not a run folder")

// notRunError is a folder with no manifest, said once and in words.
type notRunError struct {
	dir, why string
}

func (e *notRunError) Error() string { return fmt.Sprintf("%s: %v (%s)", e.dir, ErrNotRun, e.why) }

func (e *notRunError) Unwrap() []error { return []error{ErrNotRun, fs.ErrNotExist} }

// manifestErr is the error of reading dir's manifest at mpath: a missing
// manifest says the folder is no run (naming it once), any other error
// names the file.
func manifestErr(dir, mpath string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fileErr(mpath, err)
	}
	if fi, serr := os.Stat(dir); serr != nil {
		return &notRunError{dir: dir, why: "no such folder"}
	} else if !fi.IsDir() {
		return &notRunError{dir: dir, why: "a file, not a folder"}
	}
	return &notRunError{dir: dir, why: "no " + ManifestFile + " in it"}
}

// Open reads a run folder: the manifest and every trial the manifest says
// finished (a file of another schema, the v1 format's among them, is
// refused naming it). Trials still running or never finished
// are not read, so a report of a run in progress sees only finished
// trials. A manifest listing a trial twice, and a trial.json that says it
// is another trial than the one whose folder it is in, are refused,
// naming the file.
func Open(dir string) (*Run, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Manifest: m, Trials: map[string][]Trial{}}
	for _, ts := range r.Manifest.Trials {
		if ts.Status != Valid && ts.Status != Invalid {
			continue
		}
		tpath := filepath.Join(TrialDir(dir, ts.Arm, ts.Index), TrialFile)
		tb, err := ReadRunFile(tpath, MaxTrialFileBytes)
		if ts.Status == Invalid && errors.Is(err, fs.ErrNotExist) {
			continue // it failed before it measured anything (its reason is in the manifest)
		}
		if err != nil {
			return nil, fileErr(tpath, err)
		}
		t, err := decodeTrial(tb)
		if err != nil {
			if isSchemaError(err) {
				return nil, fmt.Errorf("%s: %w", tpath, err)
			}
			return nil, fmt.Errorf("%s: corrupt or truncated: %w", tpath, err)
		}
		if t.Arm != ts.Arm || t.Index != ts.Index {
			return nil, fmt.Errorf("%s: the file is arm %q's trial %d, but it stands in the folder of arm %q's trial %d; a trial.json is its own folder's trial",
				tpath, t.Arm, t.Index, ts.Arm, ts.Index)
		}
		r.Trials[ts.Arm] = append(r.Trials[ts.Arm], t)
	}
	if err := r.checkClock(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reopen opens the run folder dir to complete it: it refuses a folder
// that holds no run, as Open does and without making anything, then takes
// the folder's lock for this process's writing (Acquire) and reads the
// run (Open) under it, so that what is read is what the writer finds.
// The caller releases the lock.
func Reopen(dir string) (*Run, *Lock, error) {
	mpath := filepath.Join(dir, ManifestFile)
	if _, err := os.Lstat(mpath); err != nil {
		return nil, nil, manifestErr(dir, mpath, err)
	}
	lock, err := Acquire(dir)
	if err != nil {
		return nil, nil, err
	}
	r, err := Open(dir)
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	return r, lock, nil
}

// checkClock refuses a run whose trials ran on another clock than the
// run says: model seconds and wall seconds are different measurements,
// and a report of both under one clock would mix them silently.
func (r *Run) checkClock() error {
	want := r.Manifest.Clock
	if want == "" {
		return nil // written before clocks were recorded
	}
	for _, ts := range r.Trials {
		for _, t := range ts {
			if t.Clock != "" && t.Clock != want {
				return fmt.Errorf("%s: the trial ran on the %s clock but the run is on the %s clock; a run's trials must share one clock",
					filepath.Join(TrialDir(r.Dir, t.Arm, t.Index), TrialFile), t.Clock, want)
			}
		}
	}
	return nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the document")
	}
	return nil
}
