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
}

func (p *pool) pop() *Op {
	op := heap.Pop(&p.waiters).(*Op)
	p.queuedAdm -= int64(op.admissions)
	return op
}

// remove takes op out of the queue and reports whether it was there.
func (p *pool) remove(op *Op) bool {
	if op.heapIndex >= 0 && op.heapIndex < p.waiters.Len() && p.waiters.ops[op.heapIndex] == op {
		heap.Remove(&p.waiters, op.heapIndex)
		p.queuedAdm -= int64(op.admissions)
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
