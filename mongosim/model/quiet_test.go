package model

import (
	"reflect"
	"testing"
	"time"
)

// snapshot is everything a sampler or a test reads of a node.
type snapshot struct {
	Now                        time.Duration
	RSS, Peak, Sample, Tracked int64
	Host                       HostStats
	Monitor                    ProbeStats
	Pools                      [4]PoolStats
	Counts                     OpCounts
	Shed, ShedQueued           int64
	Dead                       bool
}

func snap(n *Node) snapshot {
	s := snapshot{Now: n.Now(), RSS: n.RSS(), Peak: n.RSSPeak(), Sample: n.RSSSample(), Tracked: n.TrackedTotal(), Host: n.HostStats(),
		Monitor: n.Monitor(), Counts: n.OpCounts(), Shed: n.OperationsShed, ShedQueued: n.OperationsShedQueued, Dead: n.Dead()}
	s.Counts.Stages = nil
	for i, pl := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		s.Pools[i] = n.Pool(pl[0], pl[1])
	}
	return s
}

// TestQuietTicksChangeNothingButTheClock: a member's idle ticks are passed
// over in one move; the member must end in the state it reaches stepping
// every tick, through load, idle stretches with the allocator releasing
// pages and background writeback draining, a cursor killed while idle,
// and on both memory models.
func TestQuietTicksChangeNothingButTheClock(t *testing.T) {
	for _, host := range []bool{false, true} {
		hw := DefaultHardware()
		if host {
			hw = DefaultHardware()
			hw.Host.ReleaseBytesPerSec = 32 << 20 // freed memory takes seconds to leave
			hw.Host.DirtyBackgroundRatio = 0.1    // a spill's pages are written back in the background
		}
		// Monitor and probe on intervals that do not divide each other,
		// so each must be stepped on its own ticks.
		p := params(t, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "50", "queryMemoryLoadSheddingHighMarkPercent": "90",
			"queryMemoryRssMonitorIntervalMillis": "30", "throughputProbingConcurrencyAdjustmentIntervalMillis": "70"})
		fast, slow := NewNode(hw, p, 9), NewNode(hw, p, 9)
		stepTo := func(n *Node, to time.Duration) {
			for !n.dead && n.now+Tick <= to {
				n.step()
			}
		}
		// The same load on both: sorts that free most of their buffer and
		// leave cursors behind (the allocator then releases the freed pages
		// for seconds), silence, a cursor killed in the silence, more
		// silence.
		load := func(n *Node, at time.Duration) {
			for i := range 9 {
				q := QueryShape{Stage: "$sort", ScanDocs: 60_000, DocBytes: 1000, HoldBytes: 8 << 20, OutputBytes: 1 << 20, BatchDocs: 100}
				if i == 8 {
					q.ScanDocs = 250_000 // past the sort's limit: it spills, and its pages are written back
				}
				n.Submit(&Op{Kind: KindAggregate, Eligible: true, CursorID: int64(at/time.Second)*100 + int64(i) + 1, Work: p.AggregateWork(q)})
			}
		}
		checks := 0
		for _, phase := range []struct {
			at     time.Duration
			action func(n *Node, at time.Duration)
		}{
			{3 * time.Second, load},
			{3*time.Second + 900*time.Millisecond, func(n *Node, _ time.Duration) {}}, // still releasing
			{40 * time.Second, func(n *Node, _ time.Duration) { n.KillCursor(301) }},
			{41*time.Second + 7*time.Millisecond, load},
			{90 * time.Second, func(n *Node, _ time.Duration) {}},
		} {
			fast.AdvanceTo(phase.at)
			stepTo(slow, phase.at)
			if a, b := snap(fast), snap(slow); !reflect.DeepEqual(a, b) {
				t.Fatalf("host model %v, at %v: passing over quiet ticks gave\n%+v\nstepping every tick\n%+v", host, phase.at, a, b)
			}
			checks++
			phase.action(fast, phase.at)
			phase.action(slow, phase.at)
		}
		if fast.Monitor().TimesProbedStable == 0 || fast.Now() != 90*time.Second {
			t.Fatalf("host model %v: the member never probed or stopped short (%v)", host, fast.Now())
		}
		if host && fast.HostStats().WrittenBackBytes == 0 {
			t.Fatal("host model: no background writeback; the load must spill")
		}
		// An idle member's catch-up from zero, as a restart makes it.
		late, lateSlow := NewNode(hw, p, 4), NewNode(hw, p, 4)
		late.AdvanceTo(123*time.Second + 456*time.Microsecond)
		stepTo(lateSlow, 123*time.Second+456*time.Microsecond)
		if a, b := snap(late), snap(lateSlow); !reflect.DeepEqual(a, b) {
			t.Fatalf("host model %v: an idle member's catch-up gave\n%+v\nstepping\n%+v", host, a, b)
		}
	}
}
