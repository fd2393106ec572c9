package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOpTableIsAMap puts and removes operations as a node does (IDs in
// sequence, most short-lived, a few that live on while the sequence runs
// far ahead, and some with a caller's own far-off IDs) and checks the
// table against a map after every move: the same lookups, the same live
// set, each op knowing its slot, and a window bounded by the live ops
// that slides along its array without leaving ops behind.
func TestOpTableIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab opTable
	ref := map[int64]*Op{}
	var ids []int64
	next := int64(0)
	for step := range 60_000 {
		if r := rng.IntN(100); r < 50 || len(ids) == 0 {
			next++
			id := next
			if r < 2 {
				id = 1_000_000_000 + rng.Int64N(1000) // a caller's own ID
				if ref[id] != nil {
					continue
				}
			}
			op := &Op{ID: id}
			tab.put(op)
			ref[id] = op
			ids = append(ids, id)
		} else {
			// Remove a recent op mostly, an old one now and then: the
			// oldest few live on.
			k := len(ids) - 1 - rng.IntN(min(len(ids), 50))
			if rng.IntN(20) == 0 {
				k = rng.IntN(len(ids))
			}
			if k < 3 && len(ids) > 3 && rng.IntN(100) != 0 {
				continue
			}
			id := ids[k]
			ids = slices.Delete(ids, k, k+1)
			tab.remove(ref[id])
			delete(ref, id)
		}
		if tab.len() != len(ref) {
			t.Fatalf("step %d: %d live, the map %d", step, tab.len(), len(ref))
		}
		if step%97 == 0 {
			for i, op := range tab.live {
				if op.liveSlot != i+1 || ref[op.ID] != op {
					t.Fatalf("step %d: live[%d] is op %d with slot %d, not the map's", step, i, op.ID, op.liveSlot)
				}
			}
			for id := next - 3000; id <= next+5; id++ {
				if tab.get(id) != ref[id] {
					t.Fatalf("step %d: get(%d) = %v, the map %v", step, id, tab.get(id), ref[id])
				}
			}
			for _, id := range ids {
				if tab.get(id) != ref[id] {
					t.Fatalf("step %d: get(%d) misses a live op", step, id)
				}
			}
			// The window's array holds nothing outside the window: a stale
			// slot would come back as the window slides over it.
			if len(tab.win) > 0 && &tab.win[0] != &tab.arr[tab.off] {
				t.Fatalf("step %d: the window is not its array's from slot %d", step, tab.off)
			}
			for i, op := range tab.arr {
				if (i < tab.off || i >= tab.off+len(tab.win)) && op != nil {
					t.Fatalf("step %d: slot %d of the window's array, outside the window, holds op %d", step, i, op.ID)
				}
			}
		}
		if len(tab.win) > maxGap+4*len(tab.live)+1 {
			t.Fatalf("step %d: the window holds %d slots for %d live ops", step, len(tab.win), len(tab.live))
		}
	}
	if len(tab.extra) == 0 {
		t.Fatal("no op ever went to the map; the test means to cover far-off IDs and ops left behind")
	}
	tab.reset()
	if tab.len() != 0 || tab.get(ids[0]) != nil {
		t.Fatal("after reset the table still holds ops")
	}
}
