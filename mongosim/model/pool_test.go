package model

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// refHeap is container/heap over the same ops: the reference the pool's
// own heap must match position for position, since the sweeper draws its
// random numbers in the order of those positions.
type refHeap struct {
	ordered bool
	ops     []*Op
}

func (h refHeap) Len() int { return len(h.ops) }
func (h refHeap) Less(i, j int) bool {
	a, b := h.ops[i], h.ops[j]
	if h.ordered && a.admissions != b.admissions {
		return a.admissions < b.admissions
	}
	return a.queueSeq < b.queueSeq
}
func (h refHeap) Swap(i, j int) { h.ops[i], h.ops[j] = h.ops[j], h.ops[i] }
func (h *refHeap) Push(x any)   { h.ops = append(h.ops, x.(*Op)) }
func (h *refHeap) Pop() any {
	op := h.ops[len(h.ops)-1]
	h.ops = h.ops[:len(h.ops)-1]
	return op
}

// TestOpHeapIsContainerHeap pushes, pops and removes waiters at random
// in an ordered and an unordered pool and in container/heap side by side:
// the two arrays must hold the same ops at the same positions after every
// move, and each op must know its position.
func TestOpHeapIsContainerHeap(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(3, uint64(len(t.Name()))))
		h := &opHeap{ordered: ordered}
		ref := &refHeap{ordered: ordered}
		seq := int64(0)
		for step := range 20_000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(h.ops) == 0:
				seq++
				op := &Op{admissions: rng.IntN(6), queueSeq: seq, heapIndex: -1}
				h.push(op)
				heap.Push(ref, op)
			case r < 8:
				got, want := h.pop(), heap.Pop(ref).(*Op)
				if got != want || got.heapIndex != -1 {
					t.Fatalf("ordered=%v step %d: pop gave seq %d (index %d), container/heap seq %d", ordered, step, got.queueSeq, got.heapIndex, want.queueSeq)
				}
			default:
				i := rng.IntN(len(h.ops))
				got, want := h.remove(i), heap.Remove(ref, i).(*Op)
				if got != want {
					t.Fatalf("ordered=%v step %d: remove(%d) gave seq %d, container/heap seq %d", ordered, step, i, got.queueSeq, want.queueSeq)
				}
			}
			if len(h.ops) != len(ref.ops) {
				t.Fatalf("ordered=%v step %d: %d waiters, container/heap %d", ordered, step, len(h.ops), len(ref.ops))
			}
			for i, w := range h.ops {
				op := w.op
				if op != ref.ops[i] || op.heapIndex != i || w.admissions != op.admissions || w.seq != op.queueSeq {
					t.Fatalf("ordered=%v step %d: position %d holds seq %d (index %d), container/heap seq %d", ordered, step, i, op.queueSeq, op.heapIndex, ref.ops[i].queueSeq)
				}
			}
		}
	}
}
