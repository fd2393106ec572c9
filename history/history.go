package history

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/internal/specdiff"
)

// Run is one `qmlsab run`: its arms, the metrics of each valid trial, and
// per arm the effect against the baseline arm.
type Run struct {
	ID             string    `json:"id"`
	Started        time.Time `json:"started"`
	Workload       string    `json:"workload"`
	WorkloadDigest string    `json:"workloadDigest,omitempty"`
	// WorkloadDefinition is the resolved workload the night ran, as
	// canonical JSON (its manifest's): what WorkloadDigest digests, kept
	// so that a change between nights can be named key by key. Empty in
	// nights stored before it was kept.
	WorkloadDefinition json.RawMessage   `json:"workloadDefinition,omitempty"`
	Arms               []Arm             `json:"arms,omitempty"`
	Baseline           string            `json:"baseline,omitempty"`
	Labels             map[string]string `json:"labels,omitempty"`
	Host               Host              `json:"host"`
	Simulated          bool              `json:"simulated,omitempty"`
	// Partial marks a run stored while some of its planned trials had not
	// finished (history add --allow-partial).
	Partial bool     `json:"partial,omitempty"`
	Trials  []Trial  `json:"trials,omitempty"`
	Effects []Effect `json:"effects,omitempty"`
}

// Arm is one configuration under test.
type Arm struct {
	Name       string            `json:"name"`
	Build      string            `json:"build,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	// Definition is the arm as the night's manifest records it (its
	// arms-file entry without name and description: build, target,
	// parameters, actors, topology), as canonical JSON. Empty in nights
	// stored before it was kept.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Host describes the machine (or simulated target) a run measured.
type Host struct {
	Name        string `json:"name,omitempty"`
	CPUModel    string `json:"cpuModel,omitempty"`
	Cores       int    `json:"cores,omitempty"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	TargetKind  string `json:"targetKind,omitempty"`
}

// Trial is one valid trial of one arm: its metrics by name.
type Trial struct {
	Arm     string             `json:"arm"`
	Index   int                `json:"index"`
	Host    string             `json:"host,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Effect is one arm's effect on one metric against the baseline arm: the
// Hodges-Lehmann shift (arm minus baseline) and the Mann-Whitney p-value.
type Effect struct {
	Arm    string  `json:"arm"`
	Metric string  `json:"metric"`
	Shift  float64 `json:"shift"`
	P      float64 `json:"p"`
}

// RunSummary is one line of `history list`.
type RunSummary struct {
	ID             string            `json:"id"`
	Started        time.Time         `json:"started"`
	Workload       string            `json:"workload"`
	WorkloadDigest string            `json:"workloadDigest,omitempty"`
	Baseline       string            `json:"baseline,omitempty"`
	Arms           []string          `json:"arms,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Host           Host              `json:"host"`
	Simulated      bool              `json:"simulated,omitempty"`
	Partial        bool              `json:"partial,omitempty"`
	Trials         int               `json:"trials"`
	// WorkloadDefinition and ArmDetails (each arm's build, parameters
	// and definition, in Arms' order) say what the night compared, for
	// readers that segment a history where a definition changed.
	WorkloadDefinition json.RawMessage `json:"workloadDefinition,omitempty"`
	ArmDetails         []Arm           `json:"armDetails,omitempty"`
}

// SeriesPoint is one run's trial values of one metric for one arm, in trial
// index order.
type SeriesPoint struct {
	RunID   string    `json:"runId"`
	Started time.Time `json:"started"`
	Build   string    `json:"build,omitempty"`
	Values  []float64 `json:"values"`
}

// EffectPoint is one run's effect of one arm on one metric.
type EffectPoint struct {
	RunID    string    `json:"runId"`
	Started  time.Time `json:"started"`
	Baseline string    `json:"baseline,omitempty"`
	Build    string    `json:"build,omitempty"`
	Shift    float64   `json:"shift"`
	P        float64   `json:"p"`
}

// Filter selects runs. The zero Filter selects every run.
type Filter struct {
	// Workload, when set, keeps runs of that workload only.
	Workload string
	// Labels keeps runs that carry every one of these labels with these
	// values (e.g. branch=master).
	Labels map[string]string
	// Since (inclusive) and Until (exclusive) bound the start time; zero
	// means unbounded.
	Since, Until time.Time
	// Last, when positive, keeps only the last Last runs (by start time)
	// among those the other fields select.
	Last int
}

// Store is a history of runs. Implementations are safe for concurrent use.
type Store interface {
	// Add records a run. It is idempotent: adding a run whose id is
	// already stored changes nothing and reports added=false, provided the
	// content is the same; different content under a stored id fails with
	// an error wrapping ErrConflict.
	Add(ctx context.Context, run Run) (added bool, err error)
	// Get returns one run, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (Run, error)
	// Runs returns the selected runs in full, ordered by start time (then id).
	Runs(ctx context.Context, f Filter) ([]Run, error)
	// List summarises the selected runs, ordered by start time (then id).
	List(ctx context.Context, f Filter) ([]RunSummary, error)
	// Series returns, per selected run that has trials of arm with metric,
	// those trials' values, ordered by start time.
	Series(ctx context.Context, metric, arm string, f Filter) ([]SeriesPoint, error)
	// Effects returns, per selected run that has one, arm's effect on
	// metric, ordered by start time.
	Effects(ctx context.Context, metric, arm string, f Filter) ([]EffectPoint, error)
	// Close releases the store.
	Close() error
}

var (
	// ErrConflict: a run with the same id but different content is stored.
	ErrConflict = errors.New("run already stored with different content")
	// ErrNotFound: no run has the id.
	ErrNotFound = errors.New("run not found")
	// ErrNewerSchema: the store was written by a newer qmlsab.
	ErrNewerSchema = errors.New("history schema is newer than this qmlsab supports")
	// ErrCorrupt: the SQLite file is not a readable history database.
	ErrCorrupt = errors.New("history database is corrupt")
	// ErrNotHistory: the file is an SQLite database of something else.
	ErrNotHistory = errors.New("not a qmlsab history database")
	// ErrInvalidRun: Add refused a run that breaks the rules in Validate.
	ErrInvalidRun = errors.New("invalid run")
	// ErrNoHistory: OpenReadOnly found no history at the location.
	ErrNoHistory = errors.New("no history there")
	// ErrReadOnly: Add on a store opened with OpenReadOnly.
	ErrReadOnly = errors.New("history opened read-only")
)

// Open opens the history at location, creating it on first use. A
// mongodb:// or mongodb+srv:// URI opens the MongoDB backend (database from
// the URI path, "qmlsab" by default); anything else without a scheme is the
// path of an SQLite file, created with its parent directory when missing.
// A location starting with mongodb: or mongodb+srv: in any case is always
// a URI: without its "//" (mongodb:bob:pw@host) it is refused as malformed,
// never taken for a file name. Errors never contain a URI's password.
func Open(ctx context.Context, location string) (Store, error) {
	return open(ctx, location, false)
}

// OpenReadOnly opens an existing history for reading only: it never
// creates a file, a folder or a database, never migrates a schema and
// never writes, so readers without write permission (or sharing a folder
// with its owner) leave nothing behind. A missing SQLite file is an error
// wrapping ErrNoHistory; an SQLite file of an older schema is read as it
// is. Add on the returned store fails with ErrReadOnly.
func OpenReadOnly(ctx context.Context, location string) (Store, error) {
	return open(ctx, location, true)
}

// open picks the backend a location names, for writing or reading only.
func open(ctx context.Context, location string, readOnly bool) (Store, error) {
	switch {
	case mongouri.HasScheme(location):
		if readOnly {
			return openMongoReadOnly(ctx, location)
		}
		return openMongo(ctx, location)
	case strings.Contains(location, "://"):
		scheme, _, _ := strings.Cut(location, "://")
		return nil, fmt.Errorf("history: unsupported location scheme %q in %s (want mongodb://, mongodb+srv:// or a file path)", scheme, RedactURI(location))
	case location == "":
		return nil, errors.New("history: empty location")
	}
	if readOnly {
		return openSQLiteReadOnly(ctx, location)
	}
	return openSQLite(ctx, location)
}

// Bounds of a label (CheckLabel).
const (
	MaxLabelKeyBytes   = 64
	MaxLabelValueBytes = 256
)

// labelKey is the form of a label's name: letters, digits, '_', '.' and
// '-', starting with a letter, digit or '_'.
var labelKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// CheckLabel checks one label against the form the history stores: a name
// of 1 to MaxLabelKeyBytes letters, digits, '_', '.' and '-' that starts
// with a letter, digit or '_' (no "$set", ".a", spaces or newlines: a name
// is a column of `history list` and a key a MongoDB history matches on),
// and a value of at most MaxLabelValueBytes bytes of printable UTF-8
// (spaces allowed; no newline, tab or other control character, which would
// break `history list`'s one line per night). The value may be empty.
func CheckLabel(key, value string) error {
	switch {
	case key == "":
		return errors.New("empty label name")
	case len(key) > MaxLabelKeyBytes:
		return fmt.Errorf("label name of %d bytes: at most %d", len(key), MaxLabelKeyBytes)
	case !labelKey.MatchString(key):
		return fmt.Errorf("label name %q: want letters, digits, '_', '.' or '-', starting with a letter, digit or '_'", key)
	case len(value) > MaxLabelValueBytes:
		return fmt.Errorf("label %s: a value of %d bytes: at most %d", key, len(value), MaxLabelValueBytes)
	case !utf8.ValidString(value):
		return fmt.Errorf("label %s: the value is not UTF-8", key)
	}
	for _, c := range value {
		if !unicode.IsPrint(c) {
			return fmt.Errorf("label %s: the value holds %U, a control or non-printing character", key, c)
		}
	}
	return nil
}

// Validate checks the rules Add enforces: a non-empty id and start time
// (years 1678-2261), unique non-empty arm names, a baseline and trial and
// effect arms among the arms (when arms are listed), unique (arm, index)
// trials and (arm, metric) effects, non-empty metric names, labels of the
// form CheckLabel allows, and finite numbers (leave out an effect that
// could not be computed rather than storing NaN).
func Validate(r Run) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidRun, r.ID, fmt.Sprintf(format, args...))
	}
	if r.ID == "" {
		return fmt.Errorf("%w: empty id", ErrInvalidRun)
	}
	if r.Started.IsZero() {
		return bad("no start time")
	}
	if y := r.Started.UTC().Year(); y < 1678 || y > 2261 {
		return bad("start time %s out of range", r.Started)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		if err := CheckLabel(k, r.Labels[k]); err != nil {
			return bad("%v", err)
		}
	}
	if len(r.WorkloadDefinition) > 0 && !json.Valid(r.WorkloadDefinition) {
		return bad("workload definition is not JSON")
	}
	arms := map[string]bool{}
	for _, a := range r.Arms {
		if a.Name == "" {
			return bad("arm with empty name")
		}
		if arms[a.Name] {
			return bad("arm %q listed twice", a.Name)
		}
		if len(a.Definition) > 0 && !json.Valid(a.Definition) {
			return bad("arm %q: definition is not JSON", a.Name)
		}
		arms[a.Name] = true
	}
	known := func(arm string) bool { return len(r.Arms) == 0 || arms[arm] }
	if r.Baseline != "" && !known(r.Baseline) {
		return bad("baseline %q is not one of the arms", r.Baseline)
	}
	type trialKey struct {
		arm string
		idx int
	}
	trials := map[trialKey]bool{}
	for _, t := range r.Trials {
		if t.Arm == "" || !known(t.Arm) {
			return bad("trial %d has unknown arm %q", t.Index, t.Arm)
		}
		k := trialKey{t.Arm, t.Index}
		if trials[k] {
			return bad("trial %s/%d listed twice", t.Arm, t.Index)
		}
		trials[k] = true
		for m, v := range t.Metrics {
			if m == "" {
				return bad("trial %s/%d has a metric with an empty name", t.Arm, t.Index)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("trial %s/%d metric %q is %v", t.Arm, t.Index, m, v)
			}
		}
	}
	effects := map[[2]string]bool{}
	for _, e := range r.Effects {
		if e.Arm == "" || !known(e.Arm) {
			return bad("effect on %q has unknown arm %q", e.Metric, e.Arm)
		}
		if e.Metric == "" {
			return bad("effect of arm %q has an empty metric name", e.Arm)
		}
		k := [2]string{e.Arm, e.Metric}
		if effects[k] {
			return bad("effect %s/%s listed twice", e.Arm, e.Metric)
		}
		effects[k] = true
		for _, v := range []float64{e.Shift, e.P} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("effect %s/%s has non-finite value %v", e.Arm, e.Metric, v)
			}
		}
	}
	return nil
}

// Normalize returns the run as the stores return it: start time in UTC
// without a monotonic reading, trials sorted by (arm, index), effects by
// (arm, metric), and empty maps and slices as nil. Maps are copied.
func Normalize(r Run) Run {
	r.Started = r.Started.UTC().Round(0)
	r.Labels = cloneMap(r.Labels)
	r.WorkloadDefinition = canonicalJSON(r.WorkloadDefinition)
	arms := make([]Arm, len(r.Arms))
	for i, a := range r.Arms {
		a.Parameters = cloneMap(a.Parameters)
		a.Definition = canonicalJSON(a.Definition)
		arms[i] = a
	}
	r.Arms = nilIfEmpty(arms)
	trials := make([]Trial, len(r.Trials))
	for i, t := range r.Trials {
		t.Metrics = cloneMap(t.Metrics)
		trials[i] = t
	}
	slices.SortStableFunc(trials, func(a, b Trial) int {
		return cmp.Or(strings.Compare(a.Arm, b.Arm), cmp.Compare(a.Index, b.Index))
	})
	r.Trials = nilIfEmpty(trials)
	effects := slices.Clone(r.Effects)
	slices.SortStableFunc(effects, func(a, b Effect) int {
		return cmp.Or(strings.Compare(a.Arm, b.Arm), strings.Compare(a.Metric, b.Metric))
	})
	r.Effects = nilIfEmpty(effects)
	return r
}

func cloneMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// canonicalJSON is a definition with sorted keys and no spacing (nil when
// empty), so that equal definitions digest alike.
func canonicalJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	c, err := specdiff.Canonical(b)
	if err != nil { // not JSON: Validate refuses it
		return b
	}
	return c
}

// Digest is the content digest Add compares on a re-add: SHA-256 of the
// normalized run's JSON.
func Digest(r Run) string {
	b, err := json.Marshal(Normalize(r))
	if err != nil { // only non-finite floats, which Validate refuses
		panic(fmt.Sprintf("history: digest of run %q: %v", r.ID, err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// legacyDigest is the digest the run had before the history kept
// definitions (WorkloadDefinition, Arm.Definition): a night stored then
// and added again now is the same night, not a conflict.
func legacyDigest(r Run) string {
	r.WorkloadDefinition = nil
	r.Arms = slices.Clone(r.Arms)
	for i := range r.Arms {
		r.Arms[i].Definition = nil
	}
	return Digest(r)
}

// sameContent reports whether a stored digest is the run's, as this
// qmlsab digests it or as one that kept no definitions did.
func sameContent(stored string, r Run, digest string) bool {
	return stored == digest || stored == legacyDigest(r)
}

// prepare validates and normalizes a run for Add and returns its digest.
func prepare(r Run) (Run, string, error) {
	if err := Validate(r); err != nil {
		return Run{}, "", err
	}
	n := Normalize(r)
	return n, Digest(n), nil
}

// conflict is Add's error for different content under a stored id: what
// differs between the stored run and the given one, by part (its labels
// first: a run added again without the labels it was first added with is
// the usual case), or, when no part can be named, the two digests.
func conflict(stored, given Run, storedDigest, digest string) error {
	what := Differences(stored, given)
	if len(what) == 0 {
		what = []string{fmt.Sprintf("content digest: stored %s, given %s", storedDigest, digest)}
	}
	return fmt.Errorf("history: run %q: %w: %s; stored runs are never replaced", given.ID, ErrConflict, strings.Join(what, "; "))
}

// Differences names what differs between two runs of one id, part by
// part ("labels: stored branch=master, given none"), as a conflict says
// it. Both are compared as the stores return them (Normalize).
func Differences(stored, given Run) []string {
	a, b := Normalize(stored), Normalize(given)
	var out []string
	part := func(name, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: stored %s, given %s", name, orNone(x), orNone(y)))
		}
	}
	part("labels", labelList(a.Labels), labelList(b.Labels))
	part("start", a.Started.Format(time.RFC3339Nano), b.Started.Format(time.RFC3339Nano))
	part("workload", a.Workload, b.Workload)
	if len(a.WorkloadDefinition) > 0 && len(b.WorkloadDefinition) > 0 {
		if ch, err := specdiff.Diff(a.WorkloadDefinition, b.WorkloadDefinition, specdiff.Options{}); err == nil && len(ch) > 0 {
			out = append(out, "workload definition: "+specdiff.Describe(ch, 3))
		}
	} else {
		part("workload digest", a.WorkloadDigest, b.WorkloadDigest)
	}
	names := func(r Run) string {
		var n []string
		for _, x := range r.Arms {
			n = append(n, x.Name)
		}
		return strings.Join(n, ",")
	}
	part("arms", names(a), names(b))
	for _, x := range a.Arms {
		i := slices.IndexFunc(b.Arms, func(y Arm) bool { return y.Name == x.Name })
		if i < 0 {
			continue
		}
		y := b.Arms[i]
		part("arm "+x.Name+" build", x.Build, y.Build)
		if len(x.Definition) > 0 && len(y.Definition) > 0 {
			if ch, err := specdiff.Diff(x.Definition, y.Definition, specdiff.Options{}); err == nil && len(ch) > 0 {
				out = append(out, "arm "+x.Name+" definition: "+specdiff.Describe(ch, 3))
			}
		} else if !maps.Equal(x.Parameters, y.Parameters) {
			out = append(out, "arm "+x.Name+" parameters differ")
		}
	}
	part("baseline", a.Baseline, b.Baseline)
	part("host", a.Host.Name, b.Host.Name)
	part("partial", fmt.Sprint(a.Partial), fmt.Sprint(b.Partial))
	part("valid trials", fmt.Sprint(len(a.Trials)), fmt.Sprint(len(b.Trials)))
	if len(out) == 0 && len(a.Trials) == len(b.Trials) {
		for i := range a.Trials {
			if !maps.Equal(a.Trials[i].Metrics, b.Trials[i].Metrics) || a.Trials[i].Arm != b.Trials[i].Arm || a.Trials[i].Index != b.Trials[i].Index {
				out = append(out, fmt.Sprintf("trial %s/%d: its values differ", b.Trials[i].Arm, b.Trials[i].Index))
				break
			}
		}
	}
	return out
}

func labelList(l map[string]string) string {
	var out []string
	for _, k := range sortedKeys(l) {
		out = append(out, k+"="+l[k])
	}
	return strings.Join(out, " ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// summarize makes a run's summary.
func summarize(r Run) RunSummary {
	s := RunSummary{ID: r.ID, Started: r.Started, Workload: r.Workload, WorkloadDigest: r.WorkloadDigest,
		Baseline: r.Baseline, Labels: r.Labels, Host: r.Host, Simulated: r.Simulated, Partial: r.Partial, Trials: len(r.Trials),
		WorkloadDefinition: r.WorkloadDefinition, ArmDetails: r.Arms}
	for _, a := range r.Arms {
		s.Arms = append(s.Arms, a.Name)
	}
	return s
}

// seriesOf extracts the Series point of one run (ok=false when it has no
// value of metric for arm).
func seriesOf(r Run, metric, arm string) (SeriesPoint, bool) {
	p := SeriesPoint{RunID: r.ID, Started: r.Started, Build: buildOf(r, arm)}
	for _, t := range r.Trials { // sorted by (arm, index)
		if v, ok := t.Metrics[metric]; ok && t.Arm == arm {
			p.Values = append(p.Values, v)
		}
	}
	return p, len(p.Values) > 0
}

// effectOf extracts the Effects point of one run.
func effectOf(r Run, metric, arm string) (EffectPoint, bool) {
	for _, e := range r.Effects {
		if e.Arm == arm && e.Metric == metric {
			return EffectPoint{RunID: r.ID, Started: r.Started, Baseline: r.Baseline, Build: buildOf(r, arm),
				Shift: e.Shift, P: e.P}, true
		}
	}
	return EffectPoint{}, false
}

func buildOf(r Run, arm string) string {
	for _, a := range r.Arms {
		if a.Name == arm {
			return a.Build
		}
	}
	return ""
}

// nanos is t as Unix nanoseconds (the stores' time key).
func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
