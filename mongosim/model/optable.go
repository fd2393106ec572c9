package model

// opTable is a node's live operations: a dense list to walk and count,
// and a lookup by ID. IDs are the node's sequence (Submit numbers every
// op it takes), so the lookup is a window of slots indexed by ID from
// the oldest live op's; an op whose ID falls outside the window (a
// caller's own ID, or one left behind by a window grown sparse) is in a
// map instead. A Go map of every live op cost a virtual trial several
// percent in assignments, deletions and walks.
type opTable struct {
	live []*Op // in no fixed order; op.liveSlot is 1 + its index
	base int64 // the ID of window[0]
	win  []*Op // win[id-base]: the live op with that ID, or nil
	// arr is win's array, whole: win is arr[off : off+len(win)], and
	// every slot of arr outside it is nil.
	arr   []*Op
	off   int
	extra map[int64]*Op
}

// maxGap is how far past the window's end an ID may land and still be
// put in it (the slots between stay empty).
const maxGap = 1024

func (t *opTable) len() int { return len(t.live) }

func (t *opTable) get(id int64) *Op {
	if i := id - t.base; i >= 0 && i < int64(len(t.win)) {
		if op := t.win[i]; op != nil {
			return op
		}
	}
	if t.extra != nil {
		return t.extra[id]
	}
	return nil
}

func (t *opTable) put(op *Op) {
	t.live = append(t.live, op)
	op.liveSlot = len(t.live)
	if len(t.win) == 0 {
		t.base = op.ID
	}
	i := op.ID - t.base
	switch {
	case i >= 0 && i < int64(len(t.win)) && t.win[i] == nil:
		t.win[i] = op
	case i >= int64(len(t.win)) && i-int64(len(t.win)) < maxGap:
		t.extend(int(i) + 1)
		t.win[i] = op
	default:
		if t.extra == nil {
			t.extra = map[int64]*Op{}
		}
		t.extra[op.ID] = op
	}
}

func (t *opTable) remove(op *Op) {
	k := op.liveSlot - 1
	if k < 0 {
		return
	}
	last := len(t.live) - 1
	t.live[k] = t.live[last]
	t.live[k].liveSlot = k + 1
	t.live[last] = nil
	t.live = t.live[:last]
	op.liveSlot = 0
	if i := op.ID - t.base; i >= 0 && i < int64(len(t.win)) && t.win[i] == op {
		t.win[i] = nil
	} else if t.extra[op.ID] == op {
		delete(t.extra, op.ID)
	}
	// The window starts at its oldest live op; one that stays while the
	// sequence runs on (the window holding four times as many slots as
	// there are live ops) moves to the map, so the window stays bounded.
	for len(t.win) > 0 && (t.win[0] == nil || len(t.win) > maxGap+4*len(t.live)) {
		if old := t.win[0]; old != nil {
			if t.extra == nil {
				t.extra = map[int64]*Op{}
			}
			t.extra[old.ID] = old
		}
		t.win[0] = nil
		t.win = t.win[1:]
		t.off++
		t.base++
	}
}

// extend lengthens the window to n slots, the new ones empty. The window
// slides along its array as the sequence runs on; when it reaches the
// array's end it moves back to the start if it fills at most half the
// array, and to an array twice its length otherwise (growing the window
// at its end with append allocated an array every few hundred ops).
func (t *opTable) extend(n int) {
	if t.off+n > len(t.arr) {
		k := len(t.win)
		if n <= len(t.arr)/2 {
			copy(t.arr, t.win)
			clear(t.arr[k:])
		} else {
			a := make([]*Op, max(2*n, 64))
			copy(a, t.win)
			t.arr = a
		}
		t.off = 0
	}
	t.win = t.arr[t.off : t.off+n]
}

// reset forgets every op (the member died).
func (t *opTable) reset() {
	clear(t.live)
	t.live = t.live[:0]
	t.win, t.arr, t.off, t.extra = nil, nil, 0, nil
}
