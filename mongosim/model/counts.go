package model

// Counts a sample reads, kept as operations come and go: serverStatus and
// the $currentOp census are read every second from nodes that may hold
// thousands of operations, and a walk of every operation per sample cost
// a virtual trial a fifth of its time. Node.Census, which walks, stays
// the reference these counts are tested against.

// liveCounts is the running census of a node's live operations (n.ops)
// and idle cursors.
type liveCounts struct {
	opBytes     int64 // Σ tracked bytes of live operations
	cursorBytes int64 // Σ bytes idle cursors keep
	stages      []StageCount
}

// StageCount is how many live operations name one pipeline stage.
type StageCount struct {
	Stage string
	Ops   int
}

// add counts delta operations of stage in or out. Stages are few (a
// storm has one or two), so a short list compared by value beats a map;
// a stage whose count falls to zero leaves the list, so the list names
// only stages with live operations.
func (c *liveCounts) add(stage string, delta int) {
	if stage == "" {
		return
	}
	for i := range c.stages {
		if c.stages[i].Stage != stage {
			continue
		}
		c.stages[i].Ops += delta
		if c.stages[i].Ops == 0 {
			c.stages = append(c.stages[:i], c.stages[i+1:]...)
		}
		return
	}
	c.stages = append(c.stages, StageCount{Stage: stage, Ops: delta})
}

// waitingBytes is Σ tracked bytes of the operations waiting for a ticket,
// by the queue they wait in: the holder index (the waiters that hold
// tracked memory) counts an op in as it joins a queue and out as it
// leaves, since an op's tracked bytes do not change while it waits.
type waitingBytes struct{ normal, low int64 }

// count adds (sign 1) or takes out (sign −1) a waiter's bytes.
func (w *waitingBytes) count(op *Op, sign int64) {
	if op.LowPriority() {
		w.low += sign * op.tracked
	} else {
		w.normal += sign * op.tracked
	}
}

// OpCounts is what a sampler's $currentOp census counts of a node's live
// operations, and the tracked memory serverStatus reports.
type OpCounts struct {
	Live, Queued int // operations alive, and those of them waiting for a ticket
	TrackedBytes int64
	// QueuedLowBytes and QueuedNormalBytes are the part of TrackedBytes
	// held by operations waiting in a low-priority and in a
	// normal-priority queue; the rest is running operations'.
	QueuedLowBytes, QueuedNormalBytes int64
	CursorBytes                       int64 // in idle cursors
	// Stages is the live operations per blocking stage, for the stages
	// that have any (operations without a stage are not counted here). It
	// is the node's own list: valid until the node next runs or takes an
	// operation, and not to be modified.
	Stages []StageCount
}

// OpCounts returns the live operations' counts without walking them.
func (n *Node) OpCounts() OpCounts {
	return OpCounts{Live: n.ops.len(), Queued: n.queued, TrackedBytes: n.live.opBytes, CursorBytes: n.live.cursorBytes, Stages: n.live.stages,
		QueuedLowBytes: n.holders.waiting.low, QueuedNormalBytes: n.holders.waiting.normal}
}

// TrackedTotal is the tracked memory of live operations and idle cursors
// together (what tcmalloc's tracked_query_bytes reports).
func (n *Node) TrackedTotal() int64 { return n.trackedTotal }
