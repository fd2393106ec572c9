package model

import "container/heap"

// pool is one ticket pool with its wait queue. The normal pools are
// UnorderedTicketSemaphores (modelled as first come, first served); the low
// pools are OrderedTicketSemaphores: the waiter with the fewest admissions
// wakes first (least attained service), ties by arrival.
type pool struct {
	name    string
	ordered bool
	total   int
	out     int
	peak    int
	waiters opHeap
	// queuedAdm is Σ admissions of the waiters, kept as they come and go
	// (an op's admissions do not change while it waits).
	queuedAdm int64
	// holders are the waiters that hold tracked memory, in no order: the
	// only queued ops a killOp actor may kill, a small share of a storm's
	// queue. An op's tracked bytes do not change while it waits (only a
	// running op scans, spills or loads), so membership is decided as it
	// joins the queue.
	holders []*Op

	addedToQueue, removedFromQueue, canceled         int64
	startedProcessing, finishedProcessing            int64
	newAdmissions                                    int64
	totalTimeQueuedMicros, totalTimeProcessingMicros int64
}

func newPool(name string, ordered bool, total int) *pool {
	p := &pool{name: name, ordered: ordered, total: total}
	p.waiters.ordered = ordered
	return p
}

func (p *pool) queueLength() int { return p.waiters.Len() }

func (p *pool) push(op *Op) {
	heap.Push(&p.waiters, op)
	p.queuedAdm += int64(op.admissions)
	if op.tracked > 0 {
		p.holders = append(p.holders, op)
		op.holderSlot = len(p.holders)
	}
}

func (p *pool) pop() *Op {
	op := heap.Pop(&p.waiters).(*Op)
	p.queuedAdm -= int64(op.admissions)
	p.dropHolder(op)
	return op
}

// dropHolder takes a leaving waiter out of holders, if it is there.
func (p *pool) dropHolder(op *Op) {
	i := op.holderSlot - 1
	if i < 0 {
		return
	}
	last := p.holders[len(p.holders)-1]
	p.holders[i], last.holderSlot = last, i+1
	p.holders[len(p.holders)-1] = nil
	p.holders = p.holders[:len(p.holders)-1]
	op.holderSlot = 0
}

// remove takes op out of the queue and reports whether it was there.
func (p *pool) remove(op *Op) bool {
	if op.heapIndex >= 0 && op.heapIndex < p.waiters.Len() && p.waiters.ops[op.heapIndex] == op {
		heap.Remove(&p.waiters, op.heapIndex)
		p.queuedAdm -= int64(op.admissions)
		p.dropHolder(op)
		return true
	}
	return false
}

// queuedAdmissions is Σ admissions of the queued ops
// (queuedOperationsTotalAdmissions).
func (p *pool) queuedAdmissions() int64 { return p.queuedAdm }

type opHeap struct {
	ordered bool
	ops     []*Op
}

func (h opHeap) Len() int { return len(h.ops) }
func (h opHeap) Less(i, j int) bool {
	a, b := h.ops[i], h.ops[j]
	if h.ordered && a.admissions != b.admissions {
		return a.admissions < b.admissions
	}
	return a.queueSeq < b.queueSeq
}
func (h opHeap) Swap(i, j int) {
	h.ops[i], h.ops[j] = h.ops[j], h.ops[i]
	h.ops[i].heapIndex = i
	h.ops[j].heapIndex = j
}
func (h *opHeap) Push(x any) {
	op := x.(*Op)
	op.heapIndex = len(h.ops)
	h.ops = append(h.ops, op)
}
func (h *opHeap) Pop() any {
	old := h.ops
	n := len(old)
	op := old[n-1]
	old[n-1] = nil
	h.ops = old[:n-1]
	op.heapIndex = -1
	return op
}
