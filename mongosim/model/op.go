package model

import "time"

// Kind is what command an operation is.
type Kind int

const (
	KindAggregate Kind = iota
	KindGetMore
	KindFind
	KindInsert
)

func (k Kind) String() string {
	return [...]string{"aggregate", "getMore", "find", "insert"}[k]
}

// Work is what an operation has to do, in modelled units. Phases run in
// order: scan (CPU; the blocking stage's buffer grows and spills at its
// limit), spill writes and reads (disk), then $merge/$out writes.
type Work struct {
	ScanDocs          int64         // documents read and fed to the stage
	CPUPerDoc         time.Duration // CPU per scanned document
	BufferBytesPerDoc int64         // tracked bytes a scanned document adds
	StageLimitBytes   int64         // spill threshold; 0: not a blocking stage
	HoldBytes         int64         // tracked bytes kept when the op ends (its cursor's buffer)
	// LoadBytes is a buffer a getMore loads in its first iteration (a
	// $setWindowFields partition read back from the spilled sort); it is
	// released at the end of the batch, leaving HoldBytes to the cursor.
	LoadBytes int64
	// ReadSpillBytes are spilled bytes the op reads back (its share of the
	// merge of its query's spilled runs); ReplyBytes what its batch returns.
	ReadSpillBytes int64
	ReplyBytes     int64
	WriteDocs      int64  // documents a write stage writes
	Stage          string // the pipeline stage that holds memory ($setWindowFields, ...)
	// StartTracked is tracked memory the op holds from the start (the
	// upstream stage's buffer while a $merge/$out batch is written).
	StartTracked int64
	// Exhausts marks the cursor's last batch: the cursor (and its buffer)
	// is freed when the op ends, as mongod frees a cursor that returns id 0.
	Exhausts bool
}

// Outcome is how an operation ended.
type Outcome struct {
	Code         int32 // 0 success; otherwise mongod's error code
	Queued       bool  // it died waiting for a ticket
	TrackedBytes int64 // tracked bytes when it ended
	Wrote        bool  // its write stage had written documents
	Stage        string
	Admissions   int
	Elapsed      time.Duration
}

// Error codes operations end with.
const (
	CodeInterrupted              = 11601
	CodeQueryMemoryLimitExceeded = 464 // unverified number; match on the codeName
	CodeHostUnreachable          = 6   // the member died under the op (OOM kill)
)

type opState int

const (
	stateNew opState = iota
	stateQueued
	stateRunning
	stateDone
)

// Op is one operation in the model.
type Op struct {
	ID       int64
	Kind     Kind
	CursorID int64
	Work     Work
	// Eligible marks operations query-memory shedding may touch: those
	// started by find, aggregate or getMore.
	Eligible bool
	// Write takes a write ticket and the global IX lock (exempt from
	// shedding from the start).
	Write bool
	// ForwardsWrites is a $merge/$out on a secondary: its writes go to the
	// primary, so this op never takes a global IX (the partial-write investigation).
	ForwardsWrites bool
	// ForceShed is queryMemoryLoadSheddingAlwaysShed armed for this op
	// alone (a failpoint whose data condition this op meets): every check
	// sheds it, as Node.AlwaysShed does every op. A condition is evaluated
	// by the op that reaches the failpoint, so it never arms another op.
	ForceShed bool

	// What a running op's every tick reads and writes, together after the
	// Work it reads: a tick walks every running op, so the fewer cache
	// lines each one spans, the cheaper the tick.
	stalled bool // paused in balance_dirty_pages this tick (host.go)
	// onDisk is inDiskPhase at the start of this tick (the op's own phase
	// does not move before its turn to progress in the tick).
	onDisk        bool
	latched       bool
	primed        bool
	loaded        bool
	wrote         bool
	killCode      int32
	tracked, peak int64
	scanned       float64
	readLeft      float64
	writesLeft    float64
	blockHit      float64 // bytes of the current spill block the page cache holds, still to read
	blockMiss     float64 // bytes of the current spill block to read from the disk
	sinceCheck    float64
	sliceIters    float64 // documents processed in the current slice
	sliceRun      float64 // seconds the op ran (on CPU or blocked on I/O) in this slice
	cpuPerDoc     float64 // Work.CPUPerDoc in seconds, converted once at Submit
	spillLeft     float64 // bytes of spilled runs still to write into the page cache
	lastEval      time.Duration
	// parked: a paused writer the ticks pass over (Node.park), since
	// parkMark on the node's parkClock.
	parked   bool
	parkMark float64
	runSlot  int // its index in the node's running list while it runs

	AppName string
	NS      string
	// Done is called once, when the op ends. The model keeps no reference
	// to the op once it has called Done, so Done may reuse the op (set
	// anew from a zero Op) for the caller's next operation.
	Done func(Outcome)

	state opState
	// countedStage is the stage the node's live counts hold the op under.
	countedStage string
	pool         *pool
	heapIndex    int
	holderSlot   int // 1 + its index in its pool's holders; 0: not there
	liveSlot     int // 1 + its index in the node's live list; 0: not live
	queueSeq     int64
	queuedAt     time.Duration
	sliceStart   time.Duration
	started      time.Duration
	admissions   int
	prior        int // the query's admissions before this op (a getMore's cursor)
	lowered      bool

	// Host memory (host.go).
	untracked int64      // untracked resident bytes
	runs      int        // spilled runs of the query so far
	spillFile *spillFile // its query's spill file, once it has written to it
}

// Tracked is the op's tracked memory now.
func (o *Op) Tracked() int64 { return o.tracked }

// Queued reports whether the op waits for a ticket.
func (o *Op) Queued() bool { return o.state == stateQueued }

// Admissions is how many tickets the op has taken.
func (o *Op) Admissions() int { return o.admissions }

// inReadPhase reports whether the op reads spilled runs back.
func (o *Op) inReadPhase() bool {
	return o.spillLeft <= 0 && o.scanned >= float64(o.Work.ScanDocs) && o.readLeft > 0
}

// inDiskPhase reports whether the op waits for the disk: it reads the
// part of a spill block the page cache evicted.
func (o *Op) inDiskPhase() bool {
	return o.inReadPhase() && o.blockHit <= 0 && o.blockMiss > 0
}

func (o *Op) finished() bool {
	return o.scanned >= float64(o.Work.ScanDocs) && o.spillLeft <= 0 && o.readLeft <= 0 && o.writesLeft <= 0
}

// PeakTracked is the op's highest tracked memory.
func (o *Op) PeakTracked() int64 { return o.peak }

// LowPriority reports whether the op waits for, or holds, a low-priority
// ticket ($currentOp's currentQueue.name is a lowPriority queue).
func (o *Op) LowPriority() bool { return o.pool != nil && o.pool.ordered }
