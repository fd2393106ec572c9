package query

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Limits bound one execution of a pipeline, by mongod's knobs. A blocking
// stage counts the documents and values it holds (their BSON sizes) against
// its own limit; over it, it fails with mongod's error unless AllowDiskUse,
// in which case it spills. mongosim writes no spill files: what a stage
// spilled stays in memory, so everything the execution holds, spilled or
// not, is also bounded by OperationBytes.
type Limits struct {
	// SortBytes is internalQueryMaxBlockingSortMemoryUsageBytes: a $sort's
	// buffer, and the sort $setWindowFields begins with.
	SortBytes int64
	// GroupBytes is internalDocumentSourceGroupMaxMemoryBytes: $group's
	// groups and their accumulators.
	GroupBytes int64
	// WindowBytes is internalDocumentSourceSetWindowFieldsMaxMemoryBytes:
	// the partition $setWindowFields holds (which spills) and its window
	// functions' state (which cannot).
	WindowBytes int64
	// PushBytes and AddToSetBytes are internalQueryMaxPushBytes and
	// internalQueryMaxAddToSetBytes: one accumulator's values, which never
	// spill.
	PushBytes     int64
	AddToSetBytes int64
	// OperationBytes is internalQueryMaxMemoryUsageBytesPerOperation: all
	// the execution holds at once, spilled data and buffered results
	// included.
	OperationBytes int64
	// AllowDiskUse lets blocking stages spill past their limits.
	AllowDiskUse bool
}

// Default values of the limits: mongod's defaults, and for OperationBytes
// the floor of master's max(1 GiB, 20% of memory).
const (
	DefaultStageLimitBytes     = 100 << 20
	DefaultOperationLimitBytes = 1 << 30
)

// DefaultLimits are mongod's defaults, with disk use allowed
// (allowDiskUseByDefault).
func DefaultLimits() Limits {
	return Limits{SortBytes: DefaultStageLimitBytes, GroupBytes: DefaultStageLimitBytes, WindowBytes: DefaultStageLimitBytes,
		PushBytes: DefaultStageLimitBytes, AddToSetBytes: DefaultStageLimitBytes, OperationBytes: DefaultOperationLimitBytes, AllowDiskUse: true}
}

// MaxInternalDocBytes is the largest document a stage may produce
// (mongod's BSONObjMaxInternalSize: 16 MiB and 16 KiB of headroom).
const MaxInternalDocBytes = 16<<20 + 16<<10

// interruptEvery is how many units of work pass between two interrupt
// checks, as mongod's executors check once per 128 iterations.
const interruptEvery = 128

// valueOverhead is what a held value costs beyond its bytes (mongod counts
// its Value's own size).
const valueOverhead = 16

// stream yields documents one at a time: next returns nil at the end.
type stream interface {
	next() (bson.Raw, error)
}

// Execution is one run of a compiled pipeline. Documents flow through the
// stages one at a time as Next pulls them: a streaming stage ($match,
// $project, $unwind...) holds one document, and a blocking stage ($sort,
// $group, $setWindowFields) holds what it must, within its Limits. Every
// stage's loop counts its work and checks the environment for an
// interrupt every interruptEvery units, so killOp, maxTimeMS and shutdown
// stop it. An Execution is used by one goroutine at a time.
type Execution struct {
	env Env
	lim Limits
	out stream
	// held is what the execution holds, spilled or not; peakHeld its
	// largest value.
	held, peakHeld int64
	trackers       []*memTracker
	ticks          int
	// steps counts accumulator additions, removals and reads: the work
	// the window and group stages do (tests bound it).
	steps   int64
	pending bson.Raw
	err     error
	done    bool
}

// Open starts an execution of the pipeline over in. Nothing runs until
// Next is called.
func (p *Pipeline) Open(env Env, in []bson.Raw, lim Limits) *Execution {
	x := &Execution{env: env, lim: lim}
	var s stream = &sliceStream{docs: in}
	for _, st := range p.Stages {
		s = st.open(x, s)
	}
	x.out = s
	return x
}

// Run executes the pipeline over in with the default limits and returns
// its output, which counts against the operation's limit.
func (p *Pipeline) Run(env Env, in []bson.Raw) ([]bson.Raw, error) {
	return p.Open(env, in, DefaultLimits()).Collect()
}

// SetEnv replaces the environment, as a getMore continues a cursor's
// execution in an operation of its own.
func (x *Execution) SetEnv(env Env) { x.env = env }

// Next returns the next output document, nil at the end. An error ends
// the execution: later calls return it again.
func (x *Execution) Next() (bson.Raw, error) {
	if x.pending != nil {
		d := x.pending
		x.pending = nil
		return d, nil
	}
	if x.err != nil || x.done {
		return nil, x.err
	}
	if x.ticks == 0 {
		if err := x.env.CheckForInterrupt(); err != nil {
			x.err = err
			return nil, err
		}
	}
	d, err := x.out.next()
	switch {
	case err != nil:
		x.err = err
	case d == nil:
		x.done = true
	}
	return d, err
}

// More reports whether Next has another document, reading it ahead.
func (x *Execution) More() (bool, error) {
	if x.pending != nil {
		return true, nil
	}
	d, err := x.Next()
	x.pending = d
	return d != nil, err
}

// Batch returns up to n documents (n <= 0: no count limit) whose sizes
// add up to at most maxBytes, always at least one if there is one.
func (x *Execution) Batch(n int, maxBytes int) ([]bson.Raw, error) {
	var out []bson.Raw
	size := 0
	for n <= 0 || len(out) < n {
		d, err := x.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		if len(out) > 0 && size+len(d) > maxBytes {
			x.pending = d
			break
		}
		out, size = append(out, d), size+len(d)
	}
	return out, nil
}

// Collect returns the rest of the output, which the caller then holds: it
// counts against the operation's limit.
func (x *Execution) Collect() ([]bson.Raw, error) {
	var out []bson.Raw
	for {
		d, err := x.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			return out, nil
		}
		if err := x.charge(int64(len(d)), "the result"); err != nil {
			x.err = err
			return nil, err
		}
		out = append(out, d)
	}
}

// tick counts one unit of work and checks for an interrupt every
// interruptEvery units.
func (x *Execution) tick() error {
	x.ticks++
	if x.ticks%interruptEvery != 0 {
		return nil
	}
	return x.env.CheckForInterrupt()
}

// charge counts n more bytes held by the execution, refusing them beyond
// OperationBytes with mongod's per-operation error.
func (x *Execution) charge(n int64, stage string) error {
	if x.held+n > x.lim.OperationBytes {
		return mongoerr.New(mongoerr.ExceededMemoryLimit,
			"Operation needs too much memory. Stage: %s. Needs: %d bytes. Memory limit per operation (internalQueryMaxMemoryUsageBytesPerOperation): %d bytes; mongosim keeps spilled data in memory",
			stage, x.held+n, x.lim.OperationBytes)
	}
	x.held += n
	x.peakHeld = max(x.peakHeld, x.held)
	return nil
}

func (x *Execution) uncharge(n int64) { x.held -= n }

// sliceStream yields the documents of a slice.
type sliceStream struct {
	docs []bson.Raw
	i    int
}

func (s *sliceStream) next() (bson.Raw, error) {
	if s.i >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.i]
	s.i++
	return d, nil
}

// memTracker is one blocking stage's memory: what it holds in memory
// (resident, which a spill moves to spilled, and fixed, which never
// spills) against its limit.
type memTracker struct {
	x         *Execution
	stage     string
	limit     int64
	spillable bool
	// overLimit is the stage's error when it is over its limit and cannot
	// spill.
	overLimit func(used int64) error

	resident, fixed, spilled int64
	// peak is the largest resident+fixed seen within the limit; largest
	// the largest single charge.
	peak, largest int64
	spills        int64
}

func (x *Execution) tracker(stage string, limit int64, spillable bool, overLimit func(used int64) error) *memTracker {
	t := &memTracker{x: x, stage: stage, limit: limit, spillable: spillable, overLimit: overLimit}
	x.trackers = append(x.trackers, t)
	return t
}

// grow counts n more bytes the stage holds (fixed: bytes that cannot
// spill). Over the limit the stage spills its resident bytes if it may,
// and fails if it is still over.
func (t *memTracker) grow(n int64, fixed bool) error {
	if err := t.x.charge(n, t.stage); err != nil {
		return err
	}
	if fixed {
		t.fixed += n
	} else {
		t.resident += n
	}
	t.largest = max(t.largest, n)
	if t.resident+t.fixed > t.limit && t.spillable && t.x.lim.AllowDiskUse && t.resident > 0 {
		t.spilled += t.resident
		t.resident = 0
		t.spills++
	}
	if used := t.resident + t.fixed; used > t.limit {
		return t.overLimit(used)
	}
	t.peak = max(t.peak, t.resident+t.fixed)
	return nil
}

// shrink releases n bytes of what the stage holds (fixed or not), spilled
// bytes first.
func (t *memTracker) shrink(n int64, fixed bool) {
	t.x.uncharge(n)
	if fixed {
		t.fixed -= n
		return
	}
	from := min(n, t.spilled)
	t.spilled -= from
	t.resident -= n - from
}

// release drops everything the stage holds.
func (t *memTracker) release() {
	t.x.uncharge(t.resident + t.fixed + t.spilled)
	t.resident, t.fixed, t.spilled = 0, 0, 0
}

// sortOverLimit is a $sort's error over its limit without disk use.
func sortOverLimit(limit int64) func(int64) error {
	return func(int64) error {
		return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
			"Sort exceeded memory limit of %d bytes, but did not opt in to external sorting. Aborting operation. Pass allowDiskUse:true to opt in.", limit)
	}
}

// checkDocSize refuses a document a stage built over the internal size
// limit.
func checkDocSize(d bson.Raw) error {
	if len(d) > MaxInternalDocBytes {
		return mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB)", len(d), len(d), MaxInternalDocBytes)
	}
	return nil
}

// valueBytes is what holding v costs.
func valueBytes(v bson.RawValue) int64 { return int64(len(v.Value)) + valueOverhead }

// interrupted carries an interrupt out of a comparison function (a sort
// cannot be stopped otherwise); sortInterruptible recovers it.
type interrupted struct{ err error }

func (e interrupted) String() string { return fmt.Sprintf("interrupted: %v", e.err) }
