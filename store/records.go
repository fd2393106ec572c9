package store

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"time"
)

// The records of a trial: what its files hold, one type per file.

// Records are everything a trial recorded, in memory: what the metric
// functions read and what the trial's files hold.
type Records struct {
	Results
	// Merge is the merge workload's ops (nil for the storm).
	Merge   *MergeRun
	Samples []Sample
	Kills   []Kill
	// KillOpActor says the killOp actor ran: its kills are the trial's
	// sheds even on a server that reports no shedding of its own.
	KillOpActor bool
	// DriverPrimaries are the new primaries the workload's driver saw
	// through its topology monitoring (events of kind EventTopology),
	// which catches a flip between two samples: the failovers' third
	// witness beside the samples' two. A wall-clock storm trial has them,
	// and its events file holds them; a trial without them (another
	// clock, an import, a folder written before they were kept) counts
	// its failovers from its samples.
	DriverPrimaries []Event
	// Missing names the kinds of record the trial could not record
	// (Storm, Canaries, Kills): a trial imported from diagnostic data has
	// no client-side outcomes unless a file gave them. A metric that rests
	// on a missing kind is absent, not zero (metric.Registry's Needs).
	Missing []string
}

// Import is how an imported run was built (Manifest.Imported).
type Import struct {
	// From is what the trials were built from: "ftdc", members' own
	// diagnostic data (docs/ftdc.md).
	From string `json:"from"`
	// Spec is the import's description of its trials (a YAML file), or
	// "flags" when the command line gave it.
	Spec string `json:"spec"`
	// Sources are the diagnostic data read, as given.
	Sources []string `json:"sources"`
	// Outcomes is the client-side outcomes file, when one was given.
	Outcomes string `json:"outcomes,omitempty"`
	// Missing are, by arm, the kinds of record the sources could not give
	// (StormRecords, CanaryRecords, KillRecords); the metrics resting on
	// them are absent from that arm's trials.
	Missing map[string][]string `json:"missing,omitempty"`
}

// Kinds of record a trial may lack (Records.Missing).
const (
	StormRecords  = "storm"    // the storm's ops and their outcomes
	CanaryRecords = "canaries" // the canaries
	KillRecords   = "kills"    // the killOp actor's kills
)

// Sample is one member's serverStatus at one moment. A member that could
// not be read is a sample with Up false: a gap, not an error.
type Sample struct {
	At        time.Time `json:"at"`
	Member    string    `json:"member"`
	Up        bool      `json:"up"`
	Primary   bool      `json:"primary"`
	ProcessID string    `json:"process_id"` // topologyVersion.processId: changes on every start
	// SeenPrimary is the member this member named as its set's primary
	// when sampled: hello's primary over the wire; in diagnostic data, the
	// member its replSetGetStatus showed in state PRIMARY. Empty when it
	// named none (no primary known, a standalone, a router).
	SeenPrimary string `json:"seen_primary,omitempty"`
	// Shard is, on a sharded cluster, the id of the shard the member
	// belongs to ("sh0"), or "mongos" for a router; empty on a replica set.
	Shard string `json:"shard,omitempty"`
	// Values are keyed by serverStatus field path (the server's names, as
	// collect's extractor table gives them), not by this format's style.
	Values map[string]float64 `json:"values"`
	// FromFTDC marks a sample read from the member's own diagnostic data
	// (diagnostic.data) instead of asked for over the wire: an imported
	// trial's samples, or a second the sampler missed, filled after a
	// local trial. It has no $currentOp census.
	FromFTDC bool `json:"from_ftdc,omitempty"`
}

// Second is the derived per-second series of a trial at one second: the
// primary's gauges and rates, each absent when no sample gave it.
type Second struct {
	T          int      `json:"t"` // seconds since the trial's start
	Primary    string   `json:"primary,omitempty"`
	ReadTix    *float64 `json:"read_tickets,omitempty"`
	LowQueue   *float64 `json:"low_priority_queue,omitempty"`
	Admissions *float64 `json:"admissions_per_s,omitempty"`
	Kills      *float64 `json:"queue_kills_per_s,omitempty"`
	Sheds      *float64 `json:"server_sheds_per_s,omitempty"`
	ResidentMB *float64 `json:"resident_mb,omitempty"`
	// The shedder's marks and memory limit, when the server reports them.
	LowMark  *float64 `json:"low_mark_bytes,omitempty"`
	HighMark *float64 `json:"high_mark_bytes,omitempty"`
	MemLimit *float64 `json:"mem_limit_bytes,omitempty"`
	// FTDC: the second's values came from the primary's diagnostic data,
	// not from the sampler (Sample.FromFTDC).
	FTDC bool `json:"ftdc,omitempty"`
}

// StormOp is one storm query's outcome. Latency is written as seconds
// (latency_s, through Seconds).
type StormOp struct {
	Scheduled time.Time     `json:"scheduled"`
	Latency   time.Duration `json:"latency_s"`
	Stage     string        `json:"stage"`
	Outcome   Outcome       `json:"outcome"`
	Code      string        `json:"code,omitempty"`
	// TrackedBytes is the tracked memory a shed or killed op held, when
	// known (the virtual clock's model knows; over the wire only the
	// killOp actor's kills carry it, in the events).
	TrackedBytes int64 `json:"tracked_bytes,omitempty"`
}

// CanaryOp is one canary's outcome; OK means it succeeded within the
// SLO, measured from its scheduled start. Latency is written as seconds
// (latency_s).
type CanaryOp struct {
	Scheduled time.Time     `json:"scheduled"`
	Latency   time.Duration `json:"latency_s"`
	Write     bool          `json:"write"`
	OK        bool          `json:"ok"`
	Code      string        `json:"code,omitempty"`
	// Censored: the client gave up waiting (its deadline, code
	// ClientTimeout), so Latency is a lower bound, not a measurement.
	Censored bool `json:"censored,omitempty"`
}

// ClientTimeout is the code of an operation the client stopped waiting
// for: its own deadline passed (or, on the virtual clock, no primary was
// found within the SLO).
const ClientTimeout = "Timeout"

// LowerBound reports whether the canary's latency is only a lower bound:
// the record says so, or (a record written before Censored was) its code
// is the client's timeout, which always cut the wait short.
func (c CanaryOp) LowerBound() bool { return c.Censored || c.Code == ClientTimeout }

// Results are a trial's workload outcomes.
type Results struct {
	PhaseStarts map[Phase]time.Time
	Storm       []StormOp
	Canaries    []CanaryOp
}

// Outcome classifies a storm operation's result as the storm_* metrics
// count it.
type Outcome string

const (
	Completed Outcome = "completed"
	Shed      Outcome = "shed"   // QueryMemoryLimitExceeded
	Killed    Outcome = "killed" // Interrupted (killOp)
	Failed    Outcome = "failed" // anything else the server or the client failed with
	// Unsupported: the server does not implement the query (a stage, an
	// operator or a command it does not know). It is neither completed
	// nor a failure of the server's availability; a trial where many
	// storm queries ended so measured a server that cannot run the
	// workload (metric.Validity).
	Unsupported Outcome = "unsupported"
	// Unfinished: the query was still running when the trial ended (code
	// TrialEnded). The server neither answered nor failed it; it is
	// counted apart from failures.
	Unfinished Outcome = "unfinished"
)

// Outcomes are every storm outcome, in the order they are listed.
var Outcomes = []Outcome{Completed, Shed, Killed, Failed, Unsupported, Unfinished}

// TrialEnded is the code of an operation cut off by the trial's end
// (Unfinished), not by any timeout of its own.
const TrialEnded = "TrialEnded"

// UnsupportedCodes are the server errors that mean "this server does not
// implement what was asked": NotImplemented (238), CommandNotFound (59),
// InvalidPipelineOperator (168), the location codes of an unknown
// aggregation stage (40324 on current servers, 16436 on older ones) and of
// an unknown $group accumulator (15952), and the refusals of an option or
// a form mongod takes (InvalidOptions 72, FailedToParse 9): the harness
// sends only what mongod accepts, so a server that cannot parse it cannot
// run the workload.
var UnsupportedCodes = []string{"NotImplemented", "CommandNotFound", "InvalidPipelineOperator", "Location40324", "Location16436",
	"Location15952", "InvalidOptions", "FailedToParse"}

// ClassifyCode is the outcome of an operation that failed with the named
// server error (or a client-side kind such as Timeout or TrialEnded).
func ClassifyCode(name string) Outcome {
	switch name {
	case "":
		return Completed
	case "QueryMemoryLimitExceeded":
		return Shed
	case "Interrupted":
		return Killed
	case TrialEnded:
		return Unfinished
	}
	if slices.Contains(UnsupportedCodes, name) {
		return Unsupported
	}
	return Failed
}

// MergeOp is one $merge op: where it ran, how it ended, and the
// documents it left in its own target collection. Latency is written as
// seconds (latency_s).
type MergeOp struct {
	Op             int           `json:"op"`
	ReadPreference string        `json:"read_preference"`
	Scheduled      time.Time     `json:"scheduled"`
	Latency        time.Duration `json:"latency_s"`
	Outcome        Outcome       `json:"outcome"`
	Code           string        `json:"code,omitempty"`
	// Written is the documents the op left in its target collection.
	Written int64 `json:"written"`
	// OutTempDocs is, for a $out op (MergeCaseOut), the documents it left
	// in $out's temporary collections (tmp.agg_out.*) rather than in its
	// target: $out writes there and renames over the target only when it
	// finishes, so a shed $out never half-modifies its target, and mongod
	// drops the temporary collection best-effort. Apart from Written,
	// never a partial write.
	OutTempDocs int64 `json:"out_temp_docs,omitempty"`
	// Unsafe: it failed shed or killed after writing documents into its
	// target (Written > 0).
	Unsafe bool `json:"unsafe"`
	// Case is, on a sharded cluster, where the shard-side $merge wrote
	// (one of the MergeCase* names); empty on a replica set.
	Case string `json:"case,omitempty"`
	// ShedBy lists the nodes whose shed counter rose during the op
	// ("sh0 127.0.0.1:27018"), on a sharded cluster; a router has no shed
	// counter, so one never appears.
	ShedBy []string `json:"shed_by,omitempty"`
}

// The sharded merge cases: where a shard-side $merge's writes go.
const (
	MergeCaseShardedTarget = "sharded target"
	MergeCaseOtherShard    = "unsharded target on another shard"
	MergeCaseSameShard     = "same-shard target"
	MergeCaseOut           = "$out"
)

// MergeCases are the sharded cases in the order the workload runs them.
var MergeCases = []string{MergeCaseShardedTarget, MergeCaseOtherShard, MergeCaseSameShard, MergeCaseOut}

// MergeRun is a trial of the merge workload.
type MergeRun struct {
	// Forced says the shed failpoint was armed on every member: each op
	// is shed after its first write batches by the failpoint, not by
	// memory pressure, so the workload tests the write-started latch
	// (whether an op that wrote can still be shed), not the odds of a
	// shed. When the target refused the failpoint (a real mongod without
	// test commands), ForcedNote says why and the ops ran unforced.
	Forced     bool      `json:"forced"`
	ForcedNote string    `json:"forced_note,omitempty"`
	Ops        []MergeOp `json:"ops"`
}

// UnsafeSheds counts ops that failed shed or killed with documents written.
func (r MergeRun) UnsafeSheds() (n int) {
	for _, o := range r.Ops {
		if o.Unsafe {
			n++
		}
	}
	return n
}

// Kill records one kill of the killOp actor.
type Kill struct {
	At           time.Time `json:"at"`
	OpID         int64     `json:"opid"` // as $currentOp names it
	AppName      string    `json:"app_name"`
	TrackedBytes int64     `json:"tracked_bytes"`
	Queued       bool      `json:"queued"`
	// Queue is where the op was when the actor killed it: QueueLowPriority
	// or QueueNormalPriority (waiting for a ticket), or QueueRunning
	// (holding one). Empty in kills recorded before it was: of those,
	// Queued says only whether the op waited.
	Queue      string `json:"queue,omitempty"`
	Stage      string `json:"stage,omitempty"`
	ResidentMB int64  `json:"resident_mb"`
	// Shard is, on a sharded cluster, the id of the shard whose actor
	// killed the operation ("sh1"; the shard's primary decided with its
	// own memory); empty on a replica set.
	Shard string `json:"shard,omitempty"`
	Err   string `json:"err,omitempty"`
}

// Where an operation's tracked memory is: waiting for a read ticket in the
// low-priority or the normal-priority queue, running (holding a ticket),
// or kept by an idle cursor between getMores. The killOp actor's kills
// name the first three (Kill.Queue); the $currentOp census counts tracked
// bytes in all four (the census.trackedBytes.* sample fields) and a
// primary's life names the one that held the most at its end
// (PrimaryLife.HeaviestQueue).
const (
	QueueLowPriority    = "low_priority_queue"
	QueueNormalPriority = "normal_priority_queue"
	QueueRunning        = "running"
	QueueIdleCursors    = "idle_cursors"
)

// Queues are the places of tracked memory, in the order they are shown.
var Queues = []string{QueueLowPriority, QueueNormalPriority, QueueRunning, QueueIdleCursors}

// QueueOf is where an operation $currentOp shows is: queued (currentQueue
// non-null) in the low-priority queue when it was deprioritized, else in
// the normal-priority queue; otherwise running.
func QueueOf(queued, lowPriority bool) string {
	switch {
	case !queued:
		return QueueRunning
	case lowPriority:
		return QueueLowPriority
	}
	return QueueNormalPriority
}

// CensusTrackedField is the census sample field of the tracked bytes in
// one of Queues.
func CensusTrackedField(queue string) SampleField { return FieldCensusTrackedBytes + "." + queue }

// How a primary's life ended (PrimaryLife.Cause).
const (
	// LifeCrashed: its process died (an OOM kill or a crash) — the member
	// went down or came back as a new process.
	LifeCrashed = "crashed"
	// LifeSteppedDown: the process lived on but was no longer primary.
	LifeSteppedDown = "stepped_down"
	// LifeTrialEnded: it was still primary when the trial's samples ended.
	LifeTrialEnded = "trial_ended"
)

// PrimaryLife is one member process's time as primary in a trial, from
// the samples: when the first and the last sample saw it primary, how it
// ended, its low-priority admissions per second over that time, and the
// tracked memory the $currentOp census found in each place at its last
// sample (metric.PrimaryLives derives it).
type PrimaryLife struct {
	// Shard is, on a sharded cluster, the member's shard.
	Shard   string    `json:"shard,omitempty"`
	Member  string    `json:"member"`
	Process string    `json:"process_id,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Cause   string    `json:"cause"`
	// AdmissionsPerS is Δ(removedFromQueue − canceled) of the
	// low-priority read queue per second of the life, over the sample
	// intervals it was primary at both ends of; absent when it was
	// sampled primary once, or its server reports no such queue.
	AdmissionsPerS *float64 `json:"admissions_per_s,omitempty"`
	// TrackedAtEnd is the census's tracked bytes by place (Queues) at the
	// life's last sample, and HeaviestQueue the place holding the most;
	// both absent when that sample had no census (diagnostic data).
	TrackedAtEnd  map[string]int64 `json:"tracked_bytes_at_end,omitempty"`
	HeaviestQueue string           `json:"heaviest_queue,omitempty"`
}

// Event is one timestamped thing that happened in a trial (events.jsonl.gz).
type Event struct {
	At     time.Time `json:"at"`
	Kind   EventKind `json:"kind"`
	Phase  Phase     `json:"phase,omitempty"`
	Member string    `json:"member,omitempty"`
	Kill   *Kill     `json:"kill,omitempty"`
	// Fault names an injected fault (kind fault); Err says why it could
	// not be applied.
	Fault string `json:"fault,omitempty"`
	Err   string `json:"err,omitempty"`
}

// OutcomeSecond is one second of a trial's operations (outcomes.jsonl.gz), by
// scheduled start: counts per outcome and a latency histogram.
type OutcomeSecond struct {
	T      int            `json:"t"` // seconds since the trial's start
	Storm  map[string]int `json:"storm,omitempty"`
	Canary map[string]int `json:"canary,omitempty"` // ok, failed
	// StormLatency and CanaryLatency count ops per latency bucket: bucket
	// i holds latencies in (2^(i-1), 2^i] ms, bucket 0 those ≤ 1 ms.
	StormLatency  []int `json:"storm_latency_log2_ms,omitempty"`
	CanaryLatency []int `json:"canary_latency_log2_ms,omitempty"`
}

// File names of a run folder and of each trial's folder.
const (
	ManifestFile = "manifest.json"
	TrialFile    = "trial.json"        // written last: a trial folder without it is unfinished
	SamplesFile  = "samples.jsonl.gz"  // []Sample
	SeriesFile   = "series.jsonl.gz"   // []Second, derived from the samples
	StormFile    = "storm.jsonl.gz"    // []StormOp
	CanaryFile   = "canaries.jsonl.gz" // []CanaryOp
	OutcomesFile = "outcomes.jsonl.gz" // []OutcomeSecond, derived from storm and canaries
	EventsFile   = "events.jsonl.gz"   // []Event
	MergeFile    = "merge.jsonl.gz"    // []MergeOp (merge workload)
)

// TrialFiles are the contents of one trial's folder.
type TrialFiles struct {
	Trial    Trial
	Samples  []Sample
	Series   []Second
	Storm    []StormOp
	Canaries []CanaryOp
	Outcomes []OutcomeSecond
	Events   []Event
	// Merge, when not nil, makes this a merge-workload trial: its ops are
	// written instead of the storm's files, and Events only when it is not
	// nil (an arm with the killOp actor: its kills, maybe none).
	Merge *MergeRun
}

// WriteTrial writes a trial's files into dir, trial.json last, each
// atomically.
func WriteTrial(dir string, f TrialFiles) error {
	steps := []func() error{func() error { return WriteJSONLinesGz(filepath.Join(dir, SamplesFile), f.Samples) }}
	if f.Merge != nil {
		steps = append(steps, func() error { return WriteJSONLinesGz(filepath.Join(dir, MergeFile), f.Merge.Ops) })
		if f.Events != nil { // the killOp actor ran beside the merge ops: its kills
			steps = append(steps, func() error { return WriteJSONLinesGz(filepath.Join(dir, EventsFile), f.Events) })
		}
	} else {
		steps = append(steps,
			func() error { return WriteJSONLinesGz(filepath.Join(dir, SeriesFile), f.Series) },
			func() error { return WriteJSONLinesGz(filepath.Join(dir, StormFile), f.Storm) },
			func() error { return WriteJSONLinesGz(filepath.Join(dir, CanaryFile), f.Canaries) },
			func() error { return WriteJSONLinesGz(filepath.Join(dir, OutcomesFile), f.Outcomes) },
			func() error { return WriteJSONLinesGz(filepath.Join(dir, EventsFile), f.Events) })
	}
	steps = append(steps, func() error { return WriteJSON(filepath.Join(dir, TrialFile), f.Trial) })
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// WorkloadHead is what a reader of a run needs of its workload (the
// manifest holds the whole resolved spec, which the workload package
// owns): its name and kind, and the storm's phases and rates.
// A manifest read by Open holds the v2 encoding whichever format its file
// had.
type WorkloadHead struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	SpillToDisk *struct {
		Phases struct {
			Warmup   Seconds `json:"warmup_s"`
			Storm    Seconds `json:"storm_s"`
			Recovery Seconds `json:"recovery_s"`
		} `json:"phases"`
		StormRate  float64 `json:"storm_rate"`
		CanaryRate float64 `json:"canary_rate"`
		CanarySLO  Seconds `json:"canary_slo_s"`
	} `json:"spill_to_disk,omitempty"`
	Merge json.RawMessage `json:"merge_partial_write,omitempty"`
}

// ArmInfo is an arm as a reader of results needs it: its name, build
// label, target kind and server parameters (credentials never included).
type ArmInfo struct {
	Name       string            `json:"name"`
	Build      string            `json:"build,omitempty"`
	Target     string            `json:"target,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
}
