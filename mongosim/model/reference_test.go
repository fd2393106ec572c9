package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestShortcutsStepAsTheReference: a node that parks its paused writers
// (Node.park) and looks for free tickets only when one came back
// (admitWaiters) must evolve exactly as the reference node that steps
// every running op and looks every tick, outcome for outcome and counter
// for counter,
// through a storm of spilling queries whose writers pause at
// vm.dirty_ratio for tens of ticks at a time: with mongod's yields (by
// count and by time) and by time alone, with spilled runs written in a
// fraction of a slice (so that a writer pauses before its slice is up,
// and every paused tick's share of the slice counts), with and without
// the shedders, with kills of running and queued ops, and until the
// member is OOM-killed.
func TestShortcutsStepAsTheReference(t *testing.T) {
	cases := []struct {
		name string
		kv   map[string]string
		mem  int64
	}{
		{"mongod's yields", nil, 0},
		{"yields by time", map[string]string{"internalQueryExecYieldIterations": "0"}, 0},
		{"yields by time, shedders", map[string]string{"internalQueryExecYieldIterations": "0",
			"queryMemoryLoadSheddingLowMarkPercent": "20", "queryMemoryLoadSheddingHighMarkPercent": "95",
			"queryMemoryLoadSheddingSweepQueuedOps": "true"}, 0},
		// Runs of 4 MiB are written in 2 ms of a 20 ms slice: a writer
		// pauses long before its slice is up, and the paused ticks decide
		// when it yields.
		{"short spills, long slices", map[string]string{"internalQueryExecYieldIterations": "0", "internalQueryExecYieldPeriodMS": "20",
			"internalQueryMaxBlockingSortMemoryUsageBytes": "4194304", "internalDocumentSourceGroupMaxMemoryBytes": "4194304"}, 0},
		{"a small host, until it dies", map[string]string{"internalQueryExecYieldPeriodMS": "4"}, 6 << 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hw := DefaultHardware()
			h := *hw.Host
			h.DirtyRatio, h.DirtyBackgroundRatio = 2, 1 // writers reach the limit at once
			hw.Host = &h
			if c.mem > 0 {
				hw.MemLimitBytes = c.mem
			}
			p := params(t, c.kv)
			fast, ref := newStormNode(hw, p), newStormNode(hw, p)
			ref.node.reference = true
			parkedSeen, stalledSeen := 0, 0
			for step := time.Duration(0); step < 15*time.Second && !fast.node.Dead(); step += 10 * time.Millisecond {
				fast.feed(step)
				ref.feed(step)
				for ms := time.Millisecond; ms <= 10*time.Millisecond; ms += time.Millisecond {
					fast.node.AdvanceTo(step + ms)
					ref.node.AdvanceTo(step + ms)
					parkedSeen = max(parkedSeen, fast.node.parked)
					stalledSeen = max(stalledSeen, fast.node.stalled)
					if ref.node.parked != 0 {
						t.Fatal("the reference node parked an op")
					}
					if a, b := snap(fast.node), snap(ref.node); !reflect.DeepEqual(a, b) {
						t.Fatalf("at %v: parking gave\n%+v\nstepping every op\n%+v", step+ms, a, b)
					}
					if !slices.Equal(fast.outcomes, ref.outcomes) {
						t.Fatalf("at %v: the outcomes differ:\n%v\n%v", step+ms, fast.outcomes, ref.outcomes)
					}
				}
			}
			if parkedSeen == 0 {
				t.Fatalf("no writer was ever parked (at most %d stalled); the storm must pause writers", stalledSeen)
			}
			if c.mem > 0 && !fast.node.Dead() {
				t.Fatalf("the small host outlived the storm (RSS peak %d MiB); the case means to check an OOM kill", fast.node.RSSPeak()>>20)
			}
			t.Logf("%d outcomes, at most %d writers parked of %d stalled", len(fast.outcomes), parkedSeen, stalledSeen)
		})
	}
}

// stormNode is a node under a seeded storm of spilling aggregates, their
// getMores, point reads and kills, recording every outcome in order.
type stormNode struct {
	node     *Node
	p        Params
	rng      *rand.Rand
	seq      int64
	open     []int64 // idle cursors
	outcomes []string
}

func newStormNode(hw Hardware, p Params) *stormNode {
	return &stormNode{node: NewNode(hw, p, 3), p: p, rng: rand.New(rand.NewPCG(3, 5))}
}

func (s *stormNode) done(id int64, cursor int64) func(Outcome) {
	return func(o Outcome) {
		s.outcomes = append(s.outcomes, fmt.Sprintf("%d:%+v", id, o))
		if o.Code == 0 && cursor != 0 {
			s.open = append(s.open, cursor)
		}
	}
}

// feed submits the next 10 ms of load.
func (s *stormNode) feed(now time.Duration) {
	n, rng := s.node, s.rng
	stages := []string{"$sort", "$group", "$setWindowFields"}
	for range rng.IntN(5) {
		q := QueryShape{Stage: stages[rng.IntN(len(stages))], ScanDocs: 100_000 + rng.Int64N(600_000), DocBytes: 1000,
			HoldBytes: 16 << 20, OutputBytes: int64(1+rng.IntN(3)) << 20, BatchDocs: 1000}
		s.seq++
		w := s.p.AggregateWork(q)
		cursor := s.seq
		if w.Exhausts {
			cursor = 0
		}
		n.Submit(&Op{Kind: KindAggregate, Eligible: true, CursorID: s.seq, Work: w, Done: s.done(s.seq, cursor)})
	}
	s.seq++
	n.Submit(&Op{Kind: KindFind, Eligible: true, Work: PointWork(), Done: s.done(s.seq, 0)})
	if len(s.open) > 0 && rng.IntN(2) == 0 {
		// Drain a cursor: its getMore reads its spilled runs back.
		i := rng.IntN(len(s.open))
		id := s.open[i]
		s.open = slices.Delete(s.open, i, i+1)
		w := s.p.GetMoreWork(QueryShape{Stage: "$sort", ScanDocs: 400_000, DocBytes: 1000, HoldBytes: 16 << 20, OutputBytes: 1 << 20, BatchDocs: 1000}, 1<<20)
		w.Exhausts = true
		n.Submit(&Op{Kind: KindGetMore, Eligible: true, CursorID: id, Work: w, Done: s.done(-id, 0)})
	}
	if rng.IntN(4) == 0 {
		// Kill a live op, running (parked or not) or queued.
		var ids []int64
		n.Ops(func(op *Op) { ids = append(ids, op.ID) })
		slices.Sort(ids)
		if len(ids) > 0 {
			n.Kill(ids[rng.IntN(len(ids))], CodeInterrupted)
		}
	}
}
