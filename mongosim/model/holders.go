package model

// holderIndex is the queued operations that hold tracked memory, across a
// node's pools: the only queued operations a killOp actor may kill (it
// never kills one that holds none), a share of a storm's queue that can
// still run to thousands. An op's tracked bytes do not change while it
// waits (only a running op scans, spills or loads), so membership and
// the op's place are decided as it joins a queue and end as it leaves.
//
// The list is kept in no order until someone asks for the largest first
// (LargestQueuedHolding); from then on it is a binary max-heap by tracked
// bytes, ties by the lower ID, so a caller reads the few largest without
// a walk or a sort of them all.
type holderIndex struct {
	ops      []*Op
	heap     bool // ops is a heap (by before)
	frontier []int
	// waiting is the ops' tracked bytes by queue (OpCounts).
	waiting waitingBytes
}

// before is the largest-first order: more tracked bytes, then the lower
// ID (a total order: IDs are unique on a node).
func before(a, b *Op) bool {
	if a.tracked != b.tracked {
		return a.tracked > b.tracked
	}
	return a.ID < b.ID
}

func (x *holderIndex) set(i int, op *Op) {
	x.ops[i] = op
	op.holderSlot = i + 1
}

func (x *holderIndex) add(op *Op) {
	x.waiting.count(op, 1)
	x.ops = append(x.ops, op)
	op.holderSlot = len(x.ops)
	if x.heap {
		x.up(len(x.ops) - 1)
	}
}

// drop takes a leaving waiter out, if it is there.
func (x *holderIndex) drop(op *Op) {
	i := op.holderSlot - 1
	if i < 0 {
		return
	}
	x.waiting.count(op, -1)
	last := len(x.ops) - 1
	if i != last {
		x.set(i, x.ops[last])
	}
	x.ops[last] = nil
	x.ops = x.ops[:last]
	op.holderSlot = 0
	if x.heap && i != last {
		if !x.down(i) {
			x.up(i)
		}
	}
}

func (x *holderIndex) reset() {
	clear(x.ops)
	x.ops = x.ops[:0]
	x.waiting = waitingBytes{}
}

// swap exchanges the ops at heap positions i and j, each taking its new
// position.
func (x *holderIndex) swap(i, j int) {
	a, b := x.ops[i], x.ops[j]
	x.set(i, b)
	x.set(j, a)
}

func (x *holderIndex) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !before(x.ops[j], x.ops[i]) {
			return
		}
		x.swap(i, j)
		j = i
	}
}

func (x *holderIndex) down(i0 int) bool {
	i, n := i0, len(x.ops)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && before(x.ops[r], x.ops[j]) {
			j = r
		}
		if !before(x.ops[j], x.ops[i]) {
			break
		}
		x.swap(i, j)
		i = j
	}
	return i > i0
}

// largestFirst calls f for the holders in largest-first order until f
// returns false: it pops a frontier of heap positions (the root, then the
// children of each position visited), so visiting k of n ops costs
// O(k log k), not n.
func (x *holderIndex) largestFirst(f func(*Op) bool) {
	if !x.heap {
		x.heap = true
		for i := len(x.ops)/2 - 1; i >= 0; i-- {
			x.down(i)
		}
	}
	if len(x.ops) == 0 {
		return
	}
	fr := append(x.frontier[:0], 0) // a min-heap of positions by before
	less := func(a, b int) bool { return before(x.ops[fr[a]], x.ops[fr[b]]) }
	for len(fr) > 0 {
		top := fr[0]
		last := len(fr) - 1
		fr[0] = fr[last]
		fr = fr[:last]
		for i := 0; ; { // sift the moved position down
			j := 2*i + 1
			if j >= len(fr) {
				break
			}
			if r := j + 1; r < len(fr) && less(r, j) {
				j = r
			}
			if !less(j, i) {
				break
			}
			fr[i], fr[j] = fr[j], fr[i]
			i = j
		}
		if !f(x.ops[top]) {
			break
		}
		for _, c := range [2]int{2*top + 1, 2*top + 2} {
			if c >= len(x.ops) {
				continue
			}
			fr = append(fr, c)
			for j := len(fr) - 1; j > 0; { // sift it up
				i := (j - 1) / 2
				if !less(j, i) {
					break
				}
				fr[i], fr[j] = fr[j], fr[i]
				j = i
			}
		}
	}
	x.frontier = fr
}

// QueuedHoldingOps calls f for every operation waiting for a ticket that
// holds tracked memory, in no fixed order: the only queued operations a
// killOp actor may kill, without a walk of the whole queue. f must not
// submit, kill or end operations.
func (n *Node) QueuedHoldingOps(f func(*Op)) {
	for _, op := range n.holders.ops {
		f(op)
	}
}

// LargestQueuedHolding calls f for the operations waiting for a ticket
// that hold tracked memory, the most tracked bytes first (ties: the lower
// ID first), until f returns false: a killOp actor that kills the largest
// first reads only as many as it may kill. f must not submit, kill or end
// operations.
func (n *Node) LargestQueuedHolding(f func(*Op) bool) { n.holders.largestFirst(f) }
