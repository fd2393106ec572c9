package model

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// checkCounts compares the counts a node keeps as operations come and go
// with a walk of its operations, cursors and queues (Node.Census and the
// pools' waiters): the two must agree exactly at every instant. It
// returns how many queued operations hold tracked memory. With largest,
// it also reads them largest first, which keeps them ordered from then on.
func checkCounts(t *testing.T, n *Node, when time.Duration, largest bool) int {
	t.Helper()
	walk, oc := n.Census(), n.OpCounts()
	queued := walk.QueuedNormal + walk.QueuedLow
	if oc.Live != n.ops.len() || oc.Queued != queued || oc.TrackedBytes != walk.TrackedBytes || oc.CursorBytes != walk.CursorBytes {
		t.Fatalf("at %v: counts %+v, walk: %d live, %d queued, %d tracked, %d in cursors", when, oc, n.ops.len(), queued, walk.TrackedBytes, walk.CursorBytes)
	}
	if got, want := n.TrackedTotal(), walk.TrackedBytes+walk.CursorBytes; got != want {
		t.Fatalf("at %v: tracked total %d, walk %d", when, got, want)
	}
	// The census's tracked bytes by queue: a walk of the live ops, each
	// where $currentOp would show it.
	var low, normal int64
	n.Ops(func(op *Op) {
		switch {
		case op.Queued() && op.LowPriority():
			low += op.Tracked()
		case op.Queued():
			normal += op.Tracked()
		}
	})
	if oc.QueuedLowBytes != low || oc.QueuedNormalBytes != normal {
		t.Fatalf("at %v: queued tracked bytes low %d, normal %d; walk %d, %d", when, oc.QueuedLowBytes, oc.QueuedNormalBytes, low, normal)
	}
	stages := map[string]int{}
	for _, op := range n.ops.live {
		if op.Work.Stage != "" {
			stages[op.Work.Stage]++
		}
	}
	kept := map[string]int{}
	for _, st := range oc.Stages {
		if st.Ops <= 0 || kept[st.Stage] != 0 {
			t.Fatalf("at %v: stage list %+v names a stage twice or with no operations", when, oc.Stages)
		}
		kept[st.Stage] = st.Ops
	}
	if !equalCounts(kept, stages) {
		t.Fatalf("at %v: stages %v, walk %v", when, kept, stages)
	}
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			var adm int64
			for _, w := range pl.waiters.ops {
				op := w.op
				adm += int64(op.admissions)
			}
			if pl.queuedAdmissions() != adm {
				t.Fatalf("at %v: %s queued admissions %d, walk %d", when, pl.name, pl.queuedAdmissions(), adm)
			}
		}
	}
	// The killOp actor's candidates: the queued ops holding tracked
	// memory, listed without a walk of the queues, must be exactly those.
	var holding, walked []int64
	n.QueuedHoldingOps(func(op *Op) { holding = append(holding, op.ID) })
	n.QueuedOps(func(op *Op) {
		if op.tracked > 0 {
			walked = append(walked, op.ID)
		}
	})
	slices.Sort(holding)
	slices.Sort(walked)
	if !slices.Equal(holding, walked) {
		t.Fatalf("at %v: queued ops holding memory %v, walk %v", when, holding, walked)
	}
	if largest {
		var want []*Op
		n.QueuedOps(func(op *Op) {
			if op.tracked > 0 {
				want = append(want, op)
			}
		})
		slices.SortFunc(want, func(a, b *Op) int { return cmp.Or(-cmp.Compare(a.tracked, b.tracked), cmp.Compare(a.ID, b.ID)) })
		var got []*Op
		n.LargestQueuedHolding(func(op *Op) bool { got = append(got, op); return true })
		if !slices.Equal(got, want) {
			t.Fatalf("at %v: largest first gave %d ops, not the %d queued holders in largest-first order", when, len(got), len(want))
		}
		if len(want) > 2 {
			got = got[:0]
			n.LargestQueuedHolding(func(op *Op) bool { got = append(got, op); return len(got) < 2 })
			if !slices.Equal(got, want[:2]) {
				t.Fatalf("at %v: stopped after two, largest first gave %d ops", when, len(got))
			}
		}
	}
	return len(holding)
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCountsMatchAWalkThroughAStorm drives a node with queries of three
// stages that open cursors and drain them by getMores, point reads, kills
// of queued and running operations and of idle cursors, and shedding
// (inline and queued) on the single-process model, and on the host model
// until its member is OOM-killed; the kept counts must match a walk after every
// step of it.
func TestCountsMatchAWalkThroughAStorm(t *testing.T) {
	for _, host := range []bool{false, true} {
		hw := DefaultHardware()
		if host {
			hw = DefaultHardware()
			hw.MemLimitBytes = 6 << 30 // a small host, so the storm fills it
		}
		// The single-process model sheds (inline and queued); the host
		// model's member runs the base build, without a shedder, until
		// it is OOM-killed.
		kv := map[string]string{"internalQueryExecYieldIterations": "200"}
		if !host {
			kv = with(kv, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "60", "queryMemoryLoadSheddingHighMarkPercent": "90",
				"queryMemoryLoadSheddingSweepQueuedOps": "true"})
		}
		p := params(t, kv)
		n := NewNode(hw, p, 7)
		rng := rand.New(rand.NewPCG(7, 11))
		stages := []string{"$sort", "$group", "$setWindowFields"}
		var cursorSeq int64
		var open []int64 // idle cursors' ids
		maxHolding := 0
		for step := time.Duration(0); step < 20*time.Second && !n.Dead(); step += 10 * time.Millisecond {
			for range rng.IntN(6) {
				q := QueryShape{Stage: stages[rng.IntN(len(stages))], ScanDocs: 20_000 + rng.Int64N(400_000), DocBytes: 1000,
					HoldBytes: 64 << 20, OutputBytes: int64(rng.IntN(3)) << 20, BatchDocs: 1000}
				cursorSeq++
				op := &Op{Kind: KindAggregate, Eligible: true, CursorID: cursorSeq, Work: p.AggregateWork(q)}
				id := cursorSeq
				op.Done = func(o Outcome) {
					if o.Code == 0 && !op.Work.Exhausts {
						open = append(open, id)
					}
				}
				n.Submit(op)
			}
			n.Submit(&Op{Kind: KindFind, Eligible: true, Work: PointWork()})
			if len(open) > 0 && rng.IntN(3) == 0 {
				// Drain or kill a cursor (a getMore takes over its buffer).
				i := rng.IntN(len(open))
				id := open[i]
				open = slices.Delete(open, i, i+1)
				if rng.IntN(4) == 0 {
					n.KillCursor(id)
				} else {
					n.Submit(&Op{Kind: KindGetMore, Eligible: true, CursorID: id,
						Work: Work{ScanDocs: 2000, CPUPerDoc: ScanCPUPerDoc, HoldBytes: 4 << 20, Stage: "$sort", Exhausts: rng.IntN(2) == 0}})
				}
			}
			if rng.IntN(5) == 0 {
				var ids []int64
				n.Ops(func(op *Op) { ids = append(ids, op.ID) })
				slices.Sort(ids)
				if len(ids) > 0 {
					n.Kill(ids[rng.IntN(len(ids))], CodeInterrupted)
				}
			}
			// The second half reads the holders largest first too: the
			// index is unordered until then and a heap from then on.
			largest := step >= 10*time.Second
			maxHolding = max(maxHolding, checkCounts(t, n, step, largest))
			n.AdvanceTo(step + 10*time.Millisecond)
			maxHolding = max(maxHolding, checkCounts(t, n, step, largest))
		}
		if maxHolding == 0 {
			t.Errorf("host model %v: no queued op ever held tracked memory; the storm must exercise the actor's candidate list", host)
		}
		if !host && n.OperationsShed == 0 {
			t.Errorf("host model %v: nothing was shed (RSS peak %d MiB of %d); the storm must exercise the shedders", host, n.RSSPeak()>>20, n.hw.MemLimitBytes>>20)
		}
		if host && !n.Dead() {
			t.Errorf("host model: the member outlived the storm (RSS peak %d MiB); the test means to check the counts after an OOM kill", n.RSSPeak()>>20)
		}
		if n.Dead() {
			if oc := n.OpCounts(); oc.Live != 0 || oc.Queued != 0 || oc.TrackedBytes != 0 || oc.CursorBytes != 0 || len(oc.Stages) != 0 || n.TrackedTotal() != 0 ||
				oc.QueuedLowBytes != 0 || oc.QueuedNormalBytes != 0 {
				t.Errorf("after the OOM kill the counts are %+v (tracked total %d); everything died", oc, n.TrackedTotal())
			}
		}
	}
}
