package virtual

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"
)

// refDeadlines is container/heap over requests and their dues: the
// reference the client's deadline heap must match position for position,
// since requests due at the same instant give up in heap order.
type refDeadlines struct {
	rs  []*request
	due map[*request]time.Duration
}

func (h refDeadlines) Len() int           { return len(h.rs) }
func (h refDeadlines) Less(i, j int) bool { return h.due[h.rs[i]] < h.due[h.rs[j]] }
func (h refDeadlines) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *refDeadlines) Push(x any)        { h.rs = append(h.rs, x.(*request)) }
func (h *refDeadlines) Pop() any {
	r := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return r
}

func (h refDeadlines) index(r *request) int {
	for i, x := range h.rs {
		if x == r {
			return i
		}
	}
	return -1
}

// TestDeadlinesAreContainerHeap pushes, fixes and removes requests at
// random, with many equal dues, in the client's heap and in container/heap
// side by side: the two must hold the same requests at the same positions
// after every move, and each request must know its position.
func TestDeadlinesAreContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	var h deadlines
	ref := &refDeadlines{due: map[*request]time.Duration{}}
	var in []*request
	for step := range 20_000 {
		due := time.Duration(rng.IntN(50)) * time.Millisecond // ties on purpose
		switch k := rng.IntN(10); {
		case k < 4 || len(in) == 0:
			r := &request{heapIndex: -1}
			h.push(r, due)
			ref.due[r] = due
			heap.Push(ref, r)
			in = append(in, r)
		case k < 7:
			r := in[rng.IntN(len(in))]
			i := r.heapIndex
			h.fix(i, due)
			ref.due[r] = due
			heap.Fix(ref, ref.index(r))
		default:
			j := rng.IntN(len(in))
			r := in[j]
			if k == 9 {
				r = h[0].r // the earliest, as a client's tick takes it
			}
			h.remove(r.heapIndex)
			heap.Remove(ref, ref.index(r))
			if r.heapIndex != -1 {
				t.Fatalf("step %d: a removed request keeps index %d", step, r.heapIndex)
			}
			for x := range in {
				if in[x] == r {
					in = append(in[:x], in[x+1:]...)
					break
				}
			}
		}
		if len(h) != len(ref.rs) {
			t.Fatalf("step %d: %d requests, container/heap %d", step, len(h), len(ref.rs))
		}
		for i, d := range h {
			if d.r != ref.rs[i] || d.r.heapIndex != i || d.due != ref.due[d.r] {
				t.Fatalf("step %d: position %d holds a request due %v (index %d), container/heap's is due %v", step, i, d.due, d.r.heapIndex, ref.due[ref.rs[i]])
			}
		}
	}
}
