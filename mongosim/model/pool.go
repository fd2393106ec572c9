package model

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
	// holders is the node's index of waiters holding tracked memory.
	holders *holderIndex

	addedToQueue, removedFromQueue, canceled         int64
	startedProcessing, finishedProcessing            int64
	newAdmissions                                    int64
	totalTimeQueuedMicros, totalTimeProcessingMicros int64
}

func newPool(name string, ordered bool, total int, holders *holderIndex) *pool {
	p := &pool{name: name, ordered: ordered, total: total, holders: holders}
	p.waiters.ordered = ordered
	return p
}

func (p *pool) queueLength() int { return p.waiters.Len() }

func (p *pool) push(op *Op) {
	p.waiters.push(op)
	p.queuedAdm += int64(op.admissions)
	if op.tracked > 0 {
		p.holders.add(op)
	}
}

func (p *pool) pop() *Op {
	op := p.waiters.pop()
	p.queuedAdm -= int64(op.admissions)
	p.holders.drop(op)
	return op
}

// remove takes op out of the queue and reports whether it was there.
func (p *pool) remove(op *Op) bool {
	if op.heapIndex >= 0 && op.heapIndex < p.waiters.Len() && p.waiters.ops[op.heapIndex].op == op {
		p.waiters.remove(op.heapIndex)
		p.queuedAdm -= int64(op.admissions)
		p.holders.drop(op)
		return true
	}
	return false
}

// clear empties the queue at once (the member died): its waiters are
// done, so their heap positions are never read again.
func (p *pool) clear() {
	clear(p.waiters.ops)
	p.waiters.ops = p.waiters.ops[:0]
	p.queuedAdm = 0
}

// queuedAdmissions is Σ admissions of the queued ops
// (queuedOperationsTotalAdmissions).
func (p *pool) queuedAdmissions() int64 { return p.queuedAdm }

// opHeap is a pool's wait queue, a binary min-heap by (admissions when
// ordered, then arrival). Its push, pop and remove are container/heap's
// algorithms step for step, written for *Op so that the comparisons
// and swaps are direct calls: the waiters' positions, which the sweeper
// and the actor walk in order, are exactly the ones container/heap
// leaves.
type opHeap struct {
	ordered bool
	ops     []waiter
}

// waiter is a queued op with its sort keys beside it, so that the heap's
// comparisons read its array rather than each op (an op's admissions and
// arrival do not change while it waits).
type waiter struct {
	op         *Op
	admissions int
	seq        int64
}

func (h *opHeap) Len() int { return len(h.ops) }

func (h *opHeap) less(i, j int) bool {
	a, b := &h.ops[i], &h.ops[j]
	if h.ordered && a.admissions != b.admissions {
		return a.admissions < b.admissions
	}
	return a.seq < b.seq
}

func (h *opHeap) swap(i, j int) {
	h.ops[i], h.ops[j] = h.ops[j], h.ops[i]
	h.ops[i].op.heapIndex = i
	h.ops[j].op.heapIndex = j
}

func (h *opHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *opHeap) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2 // right child
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// push is heap.Push.
func (h *opHeap) push(op *Op) {
	op.heapIndex = len(h.ops)
	h.ops = append(h.ops, waiter{op: op, admissions: op.admissions, seq: op.queueSeq})
	h.up(len(h.ops) - 1)
}

// pop is heap.Pop: the least waiter.
func (h *opHeap) pop() *Op {
	n := len(h.ops) - 1
	h.swap(0, n)
	h.down(0, n)
	return h.removeLast()
}

// remove is heap.Remove of the waiter at i.
func (h *opHeap) remove(i int) *Op {
	n := len(h.ops) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	return h.removeLast()
}

func (h *opHeap) removeLast() *Op {
	n := len(h.ops) - 1
	op := h.ops[n].op
	h.ops[n] = waiter{}
	h.ops = h.ops[:n]
	op.heapIndex = -1
	return op
}
