package model

import (
	"math"
	"testing"
	"time"
)

func hostNode(t *testing.T, mod func(*Hardware), kv map[string]string) *Node {
	t.Helper()
	hw := DefaultHardware()
	h := *hw.Host
	hw.Host = &h
	if mod != nil {
		mod(&hw)
	}
	return NewNode(hw, params(t, kv), 1)
}

// spiller is an aggregate that scans forever into a 32 MiB sort, spilling
// a run every 32 MiB.
func spiller() *Op {
	return &Op{Kind: KindAggregate, Eligible: true, CursorID: 0,
		Work: Work{ScanDocs: 1 << 40, CPUPerDoc: 50 * time.Nanosecond, BufferBytesPerDoc: 500, StageLimitBytes: 32 << 20, Stage: "$sort"}}
}

func TestWTCacheSizeIsMongodsRule(t *testing.T) {
	if got, want := DefaultHost().WTCacheSize(32<<30), int64(31<<30)/2; got != want {
		t.Fatalf("WT cache on 32 GiB: %d, want 50%% of (RAM - 1 GiB) = %d", got, want)
	}
	if got := DefaultHost().WTCacheSize(1 << 30); got != 256<<20 {
		t.Fatalf("WT cache on 1 GiB: %d, want the 256 MiB floor", got)
	}
}

func TestWTCacheFillsFromReadsToItsSize(t *testing.T) {
	n := hostNode(t, func(hw *Hardware) { hw.Host.DataSetBytes = 64 << 30; hw.Host.WTInitialFill = 0 }, nil)
	if s := n.HostStats(); s.WTCacheBytes != 0 {
		t.Fatalf("cold cache holds %d bytes", s.WTCacheBytes)
	}
	rss0 := n.RSS()
	scans := func(n *Node, until time.Duration) {
		for n.Now() < until {
			n.Submit(&Op{Kind: KindAggregate, Eligible: true, Work: Work{ScanDocs: 20_000, CPUPerDoc: 50 * time.Nanosecond, BufferBytesPerDoc: 500}})
			n.AdvanceTo(n.Now() + time.Millisecond)
		}
	}
	scans(n, 500*time.Millisecond)
	if n.HostStats().WTCacheBytes <= 0 {
		t.Fatal("reads did not fill the cache")
	}
	scans(n, 60*time.Second)
	s := n.HostStats()
	keep := int64(float64(s.WTCacheSize) * 0.8)
	if s.WTCacheBytes != keep {
		t.Fatalf("cache fill %d after a minute of reads, want the eviction target %d (80%% of %d)", s.WTCacheBytes, keep, s.WTCacheSize)
	}
	if n.RSS()-rss0 < keep-(1<<30) {
		t.Fatalf("RSS grew %d, want the cache's fill in it", n.RSS()-rss0)
	}
	// A data set smaller than the cache fills only to the data set.
	small := hostNode(t, func(hw *Hardware) { hw.Host.DataSetBytes = 2 << 30; hw.Host.WTInitialFill = 0 }, nil)
	scans(small, 60*time.Second)
	if got := small.HostStats().WTCacheBytes; got > 2<<30 || got < 2<<30-(64<<20) {
		t.Fatalf("2 GiB data set: cache fill %d, want ~2 GiB", got)
	}
}

func TestAllocatorRSSLagsFreesAtTheReleaseRate(t *testing.T) {
	a := allocator{releaseRate: 1 << 30}
	a.update(10<<30, 0)
	if rss := a.update(2<<30, time.Second); rss != 9<<30 {
		t.Fatalf("1 s after freeing 8 GiB at 1 GiB/s: RSS %d, want 9 GiB", rss)
	}
	if rss := a.update(5<<30, 0); rss != 9<<30 {
		t.Fatalf("allocating 3 GiB reuses held pages: RSS %d, want 9 GiB still", rss)
	}
	if rss := a.update(5<<30, 10*time.Second); rss != 5<<30 {
		t.Fatalf("RSS %d after the held pages are released, want in-use 5 GiB", rss)
	}
	// In a node: a shed frees tracked bytes at once, RSS follows at the rate,
	// and the shedder sees RSS only at the monitor's samples.
	n := hostNode(t, func(hw *Hardware) { hw.Host.ReleaseBytesPerSec = 100 << 20 }, nil)
	op := &Op{Kind: KindAggregate, Eligible: true, Work: Work{ScanDocs: 2_000_000, CPUPerDoc: 100 * time.Nanosecond, BufferBytesPerDoc: 1000}}
	n.Submit(op)
	n.AdvanceTo(time.Second)
	peak := n.RSS()
	n.Kill(op.ID, CodeInterrupted)
	n.AdvanceTo(time.Second + 10*time.Millisecond)
	s := n.HostStats()
	if s.HeldFreeBytes < 1<<30 || n.RSS() < peak-(10<<20) {
		t.Fatalf("right after a 2 GB free: held %d RSS %d (peak %d); want RSS still near the peak", s.HeldFreeBytes, n.RSS(), peak)
	}
	n.AdvanceTo(6 * time.Second)
	fell := float64(peak - n.RSS())
	if want := 5.0 * (100 << 20); math.Abs(fell-want) > want*0.05 {
		t.Fatalf("RSS fell %.0f bytes in 5 s, want the release rate's %.0f", fell, want)
	}
	if n.RSSSample() != n.RSS() && n.Now()%n.p.RSSMonitorInterval != 0 {
		d := n.RSS() - n.RSSSample()
		if d > 0 || -d > 20<<20 {
			t.Fatalf("the monitor's sample %d is not the latest 100 ms RSS %d", n.RSSSample(), n.RSS())
		}
	}
}

func TestPageCacheBoundsDirtyPagesDrainsAtDiskRateAndStallsWriters(t *testing.T) {
	pc := newPageCache(20, 10)
	pc.setDirtyable(10 << 30)
	pc.write(1, 1<<30)
	pc.write(2, 1<<30)
	if !pc.overLimit() || !pc.flushing() {
		t.Fatalf("2 GiB dirty of 10 GiB dirtyable: over limit %v flushing %v, want both", pc.overLimit(), pc.flushing())
	}
	pc.writeback(1.5 * (1 << 30)) // oldest first: file 1, then half of file 2
	if pc.files[1].dirty != 0 || pc.files[2].dirty != 0.5*(1<<30) {
		t.Fatalf("writeback order: file 1 %.0f file 2 %.0f dirty", pc.files[1].dirty, pc.files[2].dirty)
	}
	pc.remove(2) // a deleted file's dirty pages go unwritten
	if pc.dirty != 0 || pc.dropped != 0.5*(1<<30) {
		t.Fatalf("after deleting file 2: dirty %.0f dropped %.0f", pc.dirty, pc.dropped)
	}

	// In a node: spillers write far faster than the disk drains (they
	// keep their tickets: no yield by count).
	n := hostNode(t, nil, with(startFull, map[string]string{"internalQueryExecYieldIterations": "0"}))
	for range 8 {
		n.Submit(spiller())
	}
	stalledSeen := false
	prev := n.HostStats()
	for ms := 1; ms <= 5000; ms++ {
		n.AdvanceTo(time.Duration(ms) * time.Millisecond)
		s := n.HostStats()
		if prev.DirtyBytes >= prev.DirtyLimit && s.DirtyBytes > prev.DirtyBytes {
			t.Fatalf("at %d ms dirty pages grew from %d to %d while at the limit %d; writers must stall", ms, prev.DirtyBytes, s.DirtyBytes, prev.DirtyLimit)
		}
		prev = s
		if s.WritersStalled > 0 {
			stalledSeen = true
			if out := n.Pool(false, false).Out; out != 8 {
				t.Fatalf("%d tickets out with %d writers stalled; a stalled writer keeps its ticket", out, s.WritersStalled)
			}
		}
	}
	if !stalledSeen {
		t.Fatal("no writer stalled at vm.dirty_ratio")
	}
	// Writeback runs at the disk's bandwidth once over the background ratio.
	before := n.HostStats().WrittenBackBytes
	n.AdvanceTo(7 * time.Second)
	got := float64(n.HostStats().WrittenBackBytes - before)
	if want := 2 * n.hw.DiskBytesPerSec; math.Abs(got-want) > want*0.02 {
		t.Fatalf("wrote back %.0f bytes in 2 s, want the disk's %.0f", got, want)
	}
}

func TestUntrackedMemoryCountsForTheOOMKillerNotTheShedder(t *testing.T) {
	kv := map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70"}
	n := hostNode(t, func(hw *Hardware) { hw.Host.UntrackedPerOpBytes = 64 << 20 }, kv)
	n.PressureOverride = 100 // p = 1 for every op with tracked bytes
	// A read with no tracked memory: never a shedding target.
	op := cpuOp()
	var out *Outcome
	op.Done = func(o Outcome) { out = &o }
	used0 := n.HostStats().HostUsedBytes
	n.Submit(op)
	n.AdvanceTo(500 * time.Millisecond)
	if out != nil || n.OperationsShed != 0 {
		t.Fatalf("an op without tracked bytes was shed: %+v", out)
	}
	s := n.HostStats()
	if s.UntrackedBytes != 64<<20 || s.HostUsedBytes-used0 < 64<<20 {
		t.Fatalf("untracked %d, host used +%d; want the op's 64 MiB counted on the host", s.UntrackedBytes, s.HostUsedBytes-used0)
	}
	// Enough of them, queued, OOM-kill the member with no tracked byte anywhere.
	crashed := false
	n.OnCrash = func() { crashed = true }
	for i := 0; i < 600 && !crashed; i++ {
		n.Submit(cpuOp())
		n.AdvanceTo(n.Now() + time.Millisecond)
	}
	if !crashed {
		t.Fatalf("600 ops × 64 MiB untracked did not OOM-kill the host (used %d)", n.HostStats().HostUsedBytes)
	}
	if n.trackedTotal != 0 {
		t.Fatalf("tracked %d; the OOM came from untracked memory alone", n.trackedTotal)
	}
}

func TestOOMKillerWeighsHostMemoryNotJustRSS(t *testing.T) {
	n := hostNode(t, func(hw *Hardware) {
		hw.Host.OtherProcessBytes = 8 << 30
		hw.Host.WTInitialFill = 1
	}, nil)
	crashed := false
	n.OnCrash = func() { crashed = true }
	op := &Op{Kind: KindAggregate, Eligible: true, Work: Work{ScanDocs: 1 << 40, CPUPerDoc: 100 * time.Nanosecond, BufferBytesPerDoc: 1000}}
	n.Submit(op)
	for !crashed && n.Now() < time.Minute {
		n.AdvanceTo(n.Now() + 10*time.Millisecond)
	}
	if !crashed {
		t.Fatal("no OOM kill")
	}
	if rss := n.RSS(); rss >= n.hw.MemLimitBytes-(8<<30)+(64<<20) || rss < n.hw.MemLimitBytes-(9<<30)-(64<<20) {
		t.Fatalf("killed at RSS %d; want memLimit − others − kernel (%d)", rss, n.hw.MemLimitBytes-(8<<30)-(512<<20))
	}
}

func TestShedClockScopeChangesOnlyAGetMoresFirstCheck(t *testing.T) {
	run := func(scope string, kind Kind) (shedAtCheck int) {
		kv := map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70", "simShedClockScope": scope}
		n := NewNode(DefaultHardware(), params(t, kv), 1)
		n.PressureOverride = 100
		if kind == KindGetMore {
			n.cursors[7] = cursor{bytes: 8 << 20, primed: true, lastEval: 0}
			n.trackedTotal += 8 << 20
			// Its query spilled 64 MiB long ago: written back and evicted,
			// so every block comes from the disk.
			f := n.host.pc.file(7)
			f.written, f.cold = 64<<20, 64<<20
		}
		n.AdvanceTo(10 * time.Millisecond)
		op := &Op{Kind: kind, Eligible: true, CursorID: 7, Work: Work{ReadSpillBytes: 64 << 20, HoldBytes: 8 << 20}}
		if kind == KindAggregate {
			op.Work = Work{ScanDocs: 1 << 30, CPUPerDoc: 10 * time.Microsecond, BufferBytesPerDoc: 100}
		}
		var out *Outcome
		op.Done = func(o Outcome) { out = &o }
		n.Submit(op)
		for i := 0; out == nil && i < 2000; i++ {
			n.AdvanceTo(n.Now() + time.Millisecond)
		}
		if out == nil || out.Code != CodeQueryMemoryLimitExceeded {
			t.Fatalf("%s %v: %+v, want shed at p = 1", scope, kind, out)
		}
		return int(out.Elapsed / time.Millisecond)
	}
	q, o := run("query", KindGetMore), run("operation", KindGetMore)
	// A 1 MiB block at 125 MB/s takes ~8 ms: query scope sheds at the first
	// block's checkpoint; operation scope primes there and sheds at the next.
	if !(q < o) || q > 12 || o < 14 {
		t.Fatalf("getMore shed after %d ms (query scope) vs %d ms (operation scope); want the first vs the second checkpoint", q, o)
	}
	if a, b := run("query", KindAggregate), run("operation", KindAggregate); a != b {
		t.Fatalf("the aggregate's own clock differs by scope: %d vs %d ms", a, b)
	}
	if _, err := ParamsFrom(map[string]string{"simShedClockScope": "cursor"}); err == nil {
		t.Fatal("simShedClockScope accepted an unknown scope")
	}
}
