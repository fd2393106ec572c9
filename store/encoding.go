package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// How the records are encoded: the v2 format (snake_case keys, durations
// as seconds through Seconds) when written, and either format when read.
//
// A trial's JSON-lines files carry no schema of their own: the trial.json
// beside them says which format the folder was written in. Every record
// type below reads its v1 keys as well as its v2 ones, so a reader of a
// jsonl file never needs to know which format it holds; where the two
// formats' keys differ only in letter case (Sample's "At" and "at"),
// encoding/json's case-insensitive match already reads both.

// v1 is the v1 value of a key the v2 format renamed, when the record had it.
func v1[T any](v2 *T, old *T) {
	if old != nil {
		*v2 = *old
	}
}

// v1Latency is a v1 latency in nanoseconds, when the record had one.
func v1Latency(d *time.Duration, v2 *Seconds, ns *int64) {
	switch {
	case v2 != nil:
		*d = time.Duration(*v2)
	case ns != nil:
		*d = time.Duration(*ns)
	}
}

// MarshalJSON writes the op with its latency as seconds.
func (o StormOp) MarshalJSON() ([]byte, error) {
	type plain StormOp
	return json.Marshal(struct {
		plain
		Latency Seconds `json:"latency_s"`
	}{plain(o), Seconds(o.Latency)})
}

// UnmarshalJSON reads a v2 op, or a v1 one (latencyNs, trackedBytes).
func (o *StormOp) UnmarshalJSON(b []byte) error {
	type plain StormOp
	var w struct {
		plain
		Latency      *Seconds `json:"latency_s"`
		LatencyNs    *int64   `json:"latencyNs"`
		TrackedBytes *int64   `json:"trackedBytes"`
	}
	w.plain = plain(*o)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = StormOp(w.plain)
	v1Latency(&o.Latency, w.Latency, w.LatencyNs)
	v1(&o.TrackedBytes, w.TrackedBytes)
	return nil
}

// MarshalJSON writes the canary with its latency as seconds.
func (o CanaryOp) MarshalJSON() ([]byte, error) {
	type plain CanaryOp
	return json.Marshal(struct {
		plain
		Latency Seconds `json:"latency_s"`
	}{plain(o), Seconds(o.Latency)})
}

// UnmarshalJSON reads a v2 canary, or a v1 one (latencyNs).
func (o *CanaryOp) UnmarshalJSON(b []byte) error {
	type plain CanaryOp
	var w struct {
		plain
		Latency   *Seconds `json:"latency_s"`
		LatencyNs *int64   `json:"latencyNs"`
	}
	w.plain = plain(*o)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = CanaryOp(w.plain)
	v1Latency(&o.Latency, w.Latency, w.LatencyNs)
	return nil
}

// MarshalJSON writes the $merge op with its latency as seconds.
func (o MergeOp) MarshalJSON() ([]byte, error) {
	type plain MergeOp
	return json.Marshal(struct {
		plain
		Latency Seconds `json:"latency_s"`
	}{plain(o), Seconds(o.Latency)})
}

// UnmarshalJSON reads a v2 $merge op, or a v1 one (readPreference,
// latencyNs).
func (o *MergeOp) UnmarshalJSON(b []byte) error {
	type plain MergeOp
	var w struct {
		plain
		Latency        *Seconds `json:"latency_s"`
		LatencyNs      *int64   `json:"latencyNs"`
		ReadPreference *string  `json:"readPreference"`
	}
	w.plain = plain(*o)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = MergeOp(w.plain)
	v1Latency(&o.Latency, w.Latency, w.LatencyNs)
	v1(&o.ReadPreference, w.ReadPreference)
	return nil
}

// A record whose v1 format differs from its v2 one only in key names is
// read through its table of renamed keys (v1 → v2).
var (
	v1SampleKeys = renamedKeys(map[string]string{"ProcessID": "process_id", "FromFTDC": "from_ftdc"})
	v1SecondKeys = renamedKeys(map[string]string{
		"readTickets": "read_tickets", "lowPriorityQueue": "low_priority_queue", "admissionsPerS": "admissions_per_s",
		"queueKillsPerS": "queue_kills_per_s", "serverShedsPerS": "server_sheds_per_s", "residentMB": "resident_mb",
		"lowMarkBytes": "low_mark_bytes", "highMarkBytes": "high_mark_bytes", "memLimitBytes": "mem_limit_bytes",
	})
	v1KillKeys          = renamedKeys(map[string]string{"appName": "app_name", "trackedBytes": "tracked_bytes", "residentMB": "resident_mb"})
	v1OutcomeSecondKeys = renamedKeys(map[string]string{"stormLatencyLog2Ms": "storm_latency_log2_ms", "canaryLatencyLog2Ms": "canary_latency_log2_ms"})
	v1VictimsKeys       = renamedKeys(map[string]string{"bins8MiB": "bins_8mib"})
)

// renamed are the keys a record's v2 format renamed, and each v1 key as
// it stands in JSON (quoted), to tell a v1 record without decoding it.
type renamed struct {
	keys   map[string]string // v1 key → v2 key
	quoted [][]byte
}

func renamedKeys(v1ToV2 map[string]string) renamed {
	r := renamed{keys: v1ToV2}
	for old := range v1ToV2 {
		r.quoted = append(r.quoted, []byte(`"`+old+`"`))
	}
	return r
}

// decode reads a record of either format into rec, the record's plain
// type (one without this UnmarshalJSON). A record that holds a v1 key has
// its keys renamed first (when it holds both names of one, the v2 one
// stands); a v2 record is decoded as it is, in one pass.
func (r renamed) decode(b []byte, rec any) error {
	if slices.ContainsFunc(r.quoted, func(q []byte) bool { return bytes.Contains(b, q) }) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return err
		}
		for old, v2 := range r.keys {
			if v, ok := fields[old]; ok {
				delete(fields, old)
				if _, both := fields[v2]; !both {
					fields[v2] = v
				}
			}
		}
		var err error
		if b, err = json.Marshal(fields); err != nil {
			return err
		}
	}
	return json.Unmarshal(b, rec)
}

// UnmarshalJSON reads a v2 sample, or a v1 one (Go field names: ProcessID
// and FromFTDC; the others match in any case).
func (s *Sample) UnmarshalJSON(b []byte) error {
	type plain Sample
	return v1SampleKeys.decode(b, (*plain)(s))
}

// UnmarshalJSON reads a v2 second, or a v1 one (camelCase keys).
func (s *Second) UnmarshalJSON(b []byte) error {
	type plain Second
	return v1SecondKeys.decode(b, (*plain)(s))
}

// UnmarshalJSON reads a v2 kill, or a v1 one (appName, trackedBytes,
// residentMB).
func (k *Kill) UnmarshalJSON(b []byte) error {
	type plain Kill
	return v1KillKeys.decode(b, (*plain)(k))
}

// UnmarshalJSON reads a v2 second of outcomes, or a v1 one
// (stormLatencyLog2Ms, canaryLatencyLog2Ms).
func (s *OutcomeSecond) UnmarshalJSON(b []byte) error {
	type plain OutcomeSecond
	return v1OutcomeSecondKeys.decode(b, (*plain)(s))
}

// UnmarshalJSON reads a v2 victim summary, or a v1 one (bins8MiB).
func (v *Victims) UnmarshalJSON(b []byte) error {
	type plain Victims
	return v1VictimsKeys.decode(b, (*plain)(v))
}

// UnmarshalJSON reads a v2 host, or a v1 one (cpuModel, memoryBytes): a
// v1 manifest's hosts, or a host fingerprint given in either style.
func (h *Host) UnmarshalJSON(b []byte) error {
	type plain Host
	var w struct {
		plain
		CPUModel    *string `json:"cpuModel"`
		MemoryBytes *int64  `json:"memoryBytes"`
	}
	w.plain = plain(*h) // a fingerprint overrides only the fields it names
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt fingerprint field is an error, not ignored
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*h = Host(w.plain)
	v1(&h.CPUModel, w.CPUModel)
	v1(&h.MemoryBytes, w.MemoryBytes)
	return nil
}

// decodeManifest reads a manifest of either format into the v2 form: a
// v1 manifest's renamed keys and its workload's Go-named keys and
// nanosecond durations are upgraded, its Schema becomes ManifestSchema
// and SourceSchema remembers v1.
func decodeManifest(b []byte) (Manifest, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Manifest{}, err
	}
	var m Manifest
	switch head.Schema {
	case ManifestSchema:
		if err := decodeStrict(b, &m); err != nil {
			return Manifest{}, err
		}
	case ManifestSchemaV1:
		if err := decodeStrict(b, &m); err != nil {
			return Manifest{}, err
		}
		var old struct {
			ToolVersion  string    `json:"toolVersion"`
			CommandLine  []string  `json:"commandLine"`
			WorkloadName string    `json:"workloadName"`
			ArmList      []ArmInfo `json:"armList"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return Manifest{}, err
		}
		m.ToolVersion, m.CommandLine, m.WorkloadName, m.ArmList = old.ToolVersion, old.CommandLine, old.WorkloadName, old.ArmList
		if len(m.Workload) > 0 {
			wl, err := upgradeWorkloadV1(m.Workload)
			if err != nil {
				return Manifest{}, fmt.Errorf("workload: %w", err)
			}
			m.Workload = wl
		}
		m.Schema = ManifestSchema
	default:
		return Manifest{}, &schemaError{got: head.Schema, want: []string{ManifestSchema, ManifestSchemaV1}}
	}
	m.sourceSchema = head.Schema
	return m, nil
}

// decodeTrial reads a trial.json of either format. The formats differ only
// in keys the record types read in both styles (Victims), so one decoding
// serves; Schema stays as the file had it, since it also says how the
// trial's jsonl files were written.
func decodeTrial(b []byte) (Trial, error) {
	var t Trial
	if err := decodeStrict(b, &t); err != nil {
		return Trial{}, err
	}
	if t.Schema != TrialSchema && t.Schema != TrialSchemaV1 {
		return Trial{}, &schemaError{got: t.Schema, want: []string{TrialSchema, TrialSchemaV1}}
	}
	return t, nil
}

// schemaError is a file of a schema version this qmlsab does not read.
type schemaError struct {
	got  string
	want []string
}

func (e *schemaError) Error() string {
	return fmt.Sprintf("schema %q, this qmlsab reads %s", e.got, strings.Join(quoteAll(e.want), " or "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// isSchemaError reports whether err is a schemaError (not corruption).
func isSchemaError(err error) bool {
	var se *schemaError
	return errors.As(err, &se)
}

// The v1 manifest held the resolved workload as encoding/json wrote the
// workload package's types before they had JSON tags: Go field names and
// nanosecond durations. v1WorkloadKeys renames each kind's v1 keys to the
// v2 ones (the workload package's JSON tags); a key in v1DurationKeys also
// becomes seconds. The v1 format is frozen, so this table is too; a test
// holds it to the workload package's encoding.
var v1WorkloadKeys = map[string]string{
	"AppName": "app_name", "CanaryAppName": "canary_app_name", "Phases": "phases",
	"Warmup": "warmup_s", "Storm": "storm_s", "Recovery": "recovery_s",
	"StormRate": "storm_rate", "Mix": "mix", "Stage": "stage", "Weight": "weight",
	"ScanDocs": "scan_docs", "ScanSpread": "scan_spread", "DocBytes": "doc_bytes",
	"HoldBytes": "hold_bytes", "LoadBytes": "load_bytes", "LoadSpread": "load_spread",
	"BatchDocs": "batch_docs", "OutputShare": "output_share", "CanaryRate": "canary_rate",
	"CanarySLO": "canary_slo_s", "ServerSelectionTimeout": "server_selection_timeout_s",
	"Ops": "ops", "SourceDocs": "source_docs", "ShedAfter": "shed_after_batches",
	"PressurePercent": "pressure_percent",
}

var v1DurationKeys = map[string]bool{"Warmup": true, "Storm": true, "Recovery": true, "CanarySLO": true, "ServerSelectionTimeout": true}

// upgradeWorkloadV1 rewrites a v1 manifest's workload in the v2 encoding.
// The top level (name, kind, description and the kind's key) had JSON
// tags already; below a kind's key every key is renamed, and keys the
// table does not know are kept as they are.
func upgradeWorkloadV1(raw json.RawMessage) (json.RawMessage, error) {
	return rewriteWorkload(raw, v1WorkloadKeys, v1DurationKeys, func(x any) (any, error) {
		n, ok := x.(json.Number)
		ns, err := n.Int64()
		if !ok || err != nil {
			return nil, fmt.Errorf("%v is not a duration in nanoseconds", x)
		}
		return Seconds(ns), nil
	})
}

// rewriteWorkload rewrites an encoded workload from one of its encodings
// to the other (upgradeWorkloadV1, downgradeWorkloadV1): below each
// kind's key, at any depth, every key through rename (a key rename lacks
// is kept) and the value of every key in durations through duration. The
// numbers are kept exact (nanoseconds and byte counts).
func rewriteWorkload(raw json.RawMessage, rename map[string]string, durations map[string]bool, duration func(any) (any, error)) (json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, err
	}
	var rewrite func(v any) (any, error)
	rewrite = func(v any) (any, error) {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, x := range v {
				to, ok := rename[k]
				if !ok {
					to = k
				}
				convert := rewrite
				if durations[k] {
					convert = duration
				}
				y, err := convert(x)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				out[to] = y
			}
			return out, nil
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				y, err := rewrite(x)
				if err != nil {
					return nil, err
				}
				out[i] = y
			}
			return out, nil
		}
		return v, nil
	}
	for _, kind := range []string{"spill_to_disk", "merge_partial_write"} {
		if settings, ok := top[kind]; ok {
			y, err := rewrite(settings)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kind, err)
			}
			top[kind] = y
		}
	}
	return json.Marshal(top)
}
