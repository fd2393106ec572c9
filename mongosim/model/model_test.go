package model

import (
	"math"
	"testing"
	"time"
)

func params(t *testing.T, kv map[string]string) Params {
	t.Helper()
	p, err := ParamsFrom(kv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cpuOp is a CPU-bound read that never ends within the test.
func cpuOp() *Op {
	return &Op{Kind: KindFind, Eligible: true, Work: Work{ScanDocs: 1 << 40, CPUPerDoc: time.Microsecond}}
}

// startFull starts both pools at the maximum, as the sweeper
// investigation's primary had them before its storm (128 read tickets).
var startFull = map[string]string{"throughputProbingInitialConcurrency": "256"}

func TestProbingConvergesNearCPUCountUnderCPUBoundLoad(t *testing.T) {
	hw := DefaultHardware()
	// Yields by time only: with mongod's 1000-iteration yields as well,
	// every running op releases its ticket each millisecond of CPU, and
	// the walk down is slower (98 tickets after 120 s; docs/model.md).
	n := NewNode(hw, params(t, with(startFull, map[string]string{"internalQueryExecYieldIterations": "0"})), 1)
	for range 300 {
		n.Submit(cpuOp())
	}
	n.AdvanceTo(120 * time.Second)
	read := n.Pool(false, false).Total
	// Throughput stops growing once running slices exceed the CPUs, so
	// probing walks the pool down from 128 to the neighbourhood of 8.
	if read < hw.CPUs/2 || read > 3*hw.CPUs {
		t.Fatalf("read tickets after 120 s of CPU-bound load = %d, want near %d CPUs", read, hw.CPUs)
	}
	if m := n.Monitor(); m.TimesDecreased == 0 || m.TimesProbedDown == 0 {
		t.Fatalf("probing never decreased: %+v", m)
	}
}

func TestProbingStaysPutUnderLightLoad(t *testing.T) {
	n := NewNode(DefaultHardware(), params(t, startFull), 1)
	for i := range 600 {
		n.Submit(&Op{Kind: KindFind, Work: PointWork()})
		n.AdvanceTo(time.Duration(i+1) * 50 * time.Millisecond)
	}
	if got := n.Pool(false, false).Total; got != 128 {
		t.Fatalf("read tickets under canaries alone = %d, want 128 (peak use never exceeds the minimum)", got)
	}
}

// noYield are parameters under which running ops keep their tickets.
var noYield = map[string]string{"internalQueryExecYieldPeriodMS": "100000000", "internalQueryExecYieldIterations": "0"}

func with(base map[string]string, kv map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range kv {
		m[k] = v
	}
	return m
}

// filler occupies every read ticket so later ops must queue.
func fill(n *Node, pool PoolStats) {
	for range pool.Total {
		n.Submit(cpuOp())
	}
}

func TestQueuedOpHoldsItsBytesAndInlineShedderNeverTouchesIt(t *testing.T) {
	p := params(t, with(noYield, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "0", "queryMemoryLoadSheddingHighMarkPercent": "1"}))
	n := NewNode(DefaultHardware(), p, 1)
	fill(n, n.Pool(false, false))
	n.cursors[7] = cursor{bytes: 50 << 20}
	n.trackedTotal += 50 << 20
	gm := &Op{Kind: KindGetMore, Eligible: true, CursorID: 7, Work: Work{ReadSpillBytes: 1 << 20, HoldBytes: 1}}
	n.Submit(gm)
	if !gm.Queued() || gm.Tracked() != 50<<20 {
		t.Fatalf("getMore queued=%v tracked=%d; want queued holding its cursor's 50 MiB", gm.Queued(), gm.Tracked())
	}
	n.AdvanceTo(5 * time.Second) // pressure is at its maximum the whole time
	if !gm.Queued() || n.Op(gm.ID) == nil {
		t.Fatal("the inline shedder touched an op that never held a ticket")
	}
	if base := NewNode(n.hw, n.p, 1).RSS(); n.RSS() < base+50<<20 {
		t.Fatalf("RSS %d does not include the queued op's bytes", n.RSS())
	}
	if n.OperationsShed != 0 {
		t.Fatalf("operationsShed = %d: the only op with tracked memory was queued", n.OperationsShed)
	}
}

func TestInlineShedderShedsTicketHoldersAfterPriming(t *testing.T) {
	p := params(t, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "0", "queryMemoryLoadSheddingHighMarkPercent": "1"})
	n := NewNode(DefaultHardware(), p, 1)
	var out *Outcome
	op := &Op{Kind: KindAggregate, Eligible: true, Work: Work{ScanDocs: 1 << 30, CPUPerDoc: time.Microsecond, BufferBytesPerDoc: 100}}
	op.Done = func(o Outcome) { out = &o }
	n.Submit(op)
	n.AdvanceTo(50 * time.Millisecond)
	if out == nil || out.Code != CodeQueryMemoryLimitExceeded || out.Queued {
		t.Fatalf("running op above the high mark: %+v, want shed while holding a ticket", out)
	}
	if n.OperationsShed != 1 || n.OperationsShedQueued != 0 {
		t.Fatalf("operationsShed=%d operationsShedQueued=%d, want 1/0", n.OperationsShed, n.OperationsShedQueued)
	}
}

func TestSweeperShedsQueuedOpsAndNeverTicketHolders(t *testing.T) {
	p := params(t, with(noYield, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "0", "queryMemoryLoadSheddingHighMarkPercent": "50",
		"queryMemoryLoadSheddingSweepQueuedOps": "true"}))
	hw := DefaultHardware()
	hw.SpillBlockBytes = 1 << 50
	n := NewNode(hw, p, 1)
	// Ticket holders with big tracked memory that never yield (and reach
	// no checkpoint: one endless spill block): only a sweep could touch them.
	var holders []*Op
	for range n.Pool(false, false).Total {
		op := &Op{Kind: KindGetMore, Eligible: true, CursorID: int64(len(holders) + 100), Work: Work{ReadSpillBytes: 1 << 40}}
		n.cursors[op.CursorID] = cursor{bytes: 100 << 20}
		n.trackedTotal += 100 << 20
		holders = append(holders, op)
		n.Submit(op)
	}
	n.PressureOverride = 40 // pressure 0.8
	var queued []*Op
	for i := range 50 {
		op := &Op{Kind: KindGetMore, Eligible: true, CursorID: int64(1000 + i), Work: Work{ReadSpillBytes: 1 << 20}}
		n.cursors[op.CursorID] = cursor{bytes: 32 << 20}
		n.trackedTotal += 32 << 20
		queued = append(queued, op)
		n.Submit(op)
	}
	n.AdvanceTo(3 * time.Second)
	for _, h := range holders {
		if n.Op(h.ID) == nil {
			t.Fatal("the sweeper shed an op that holds a ticket")
		}
	}
	shed := 0
	for _, q := range queued {
		if n.Op(q.ID) == nil {
			shed++
		}
	}
	if shed < 40 || n.OperationsShedQueued != int64(shed) {
		t.Fatalf("sweeper shed %d of 50 queued 32 MiB ops in 3 s at pressure 0.8 (operationsShedQueued=%d); hazard says ~all", shed, n.OperationsShedQueued)
	}
	if c := n.Pool(false, false).Canceled; c != int64(shed) {
		t.Fatalf("queued sheds leave without a ticket: canceled=%d, want %d", c, shed)
	}
}

func TestKillWakesQueuedOpAtOnceAndCountsCanceled(t *testing.T) {
	n := NewNode(DefaultHardware(), params(t, nil), 1)
	fill(n, n.Pool(false, false))
	var out *Outcome
	op := cpuOp()
	op.Done = func(o Outcome) { out = &o }
	n.Submit(op)
	if !op.Queued() {
		t.Fatal("op should queue behind a full pool")
	}
	n.Kill(op.ID, CodeInterrupted)
	if out == nil || out.Code != CodeInterrupted || !out.Queued {
		t.Fatalf("killed queued op: %+v, want Interrupted while queued, immediately", out)
	}
	st := n.Pool(false, false)
	if st.Canceled != 1 || st.RemovedFromQueue != 1 {
		t.Fatalf("canceled=%d removedFromQueue=%d, want 1/1", st.Canceled, st.RemovedFromQueue)
	}
}

func TestDeprioritizationAfterThreeAdmissionsAndFewestAdmissionsFirst(t *testing.T) {
	p := params(t, map[string]string{"executionControlDeprioritizationGate": "true", "executionControlConcurrentReadLowPriorityTransactions": "1"})
	n := NewNode(DefaultHardware(), p, 1)
	long := cpuOp()
	n.Submit(long)
	n.AdvanceTo(200 * time.Millisecond)
	if !long.lowered || long.pool != n.pools[0][1] {
		t.Fatalf("after %d admissions the op is lowered=%v; want low priority after 3", long.admissions, long.lowered)
	}
	if n.TotalDeprioritizations != 1 {
		t.Fatalf("totalDeprioritizations = %d", n.TotalDeprioritizations)
	}
	// In the low pool, a waiter with fewer admissions wakes first.
	pl := n.pools[0][1]
	a := &Op{admissions: 9, queueSeq: 1, heapIndex: -1}
	b := &Op{admissions: 4, queueSeq: 2, heapIndex: -1}
	pl.push(a)
	pl.push(b)
	if got := pl.pop(); got != b {
		t.Fatal("the low pool must wake the op with the fewest admissions first")
	}
	pl.pop()
}

func TestOOMKillsEverythingAboveTheLimit(t *testing.T) {
	hw := DefaultHardware()
	hw.MemLimitBytes, hw.Host = 2<<30, nil // a small machine: its host in an M50's proportions
	crashed := false
	n := NewNode(hw, params(t, nil), 1)
	n.OnCrash = func() { crashed = true }
	var outs []Outcome
	for range 20 {
		op := &Op{Kind: KindAggregate, Eligible: true, Work: Work{ScanDocs: 1 << 30, CPUPerDoc: time.Microsecond, BufferBytesPerDoc: 1000}}
		op.Done = func(o Outcome) { outs = append(outs, o) }
		n.Submit(op)
	}
	n.AdvanceTo(10 * time.Second)
	if !crashed || !n.Dead() || len(outs) != 20 {
		t.Fatalf("crashed=%v dead=%v outcomes=%d; want an OOM kill that ends all 20 ops", crashed, n.Dead(), len(outs))
	}
	for _, o := range outs {
		if o.Code != CodeHostUnreachable {
			t.Fatalf("op outcome %+v, want the connection lost", o)
		}
	}
}

func TestWriteStartedLatchClosesTheForwardedWriteHole(t *testing.T) {
	for _, tc := range []struct {
		name     string
		forwards bool
		latch    string
		shedOK   bool // may be shed after writing
	}{
		{"primary $merge takes the global IX", false, "false", false},
		{"secondary $merge forwards its writes (the partial-write investigation)", true, "false", true},
		{"secondary $merge with the write-started flag", true, "true", false},
	} {
		p := params(t, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "0", "queryMemoryLoadSheddingHighMarkPercent": "85",
			"queryMemoryLoadSheddingWriteStartedLatch": tc.latch})
		n := NewNode(DefaultHardware(), p, 1)
		var out *Outcome
		op := &Op{Kind: KindAggregate, Eligible: true, ForwardsWrites: tc.forwards,
			Work: Work{ScanDocs: 1000, CPUPerDoc: time.Microsecond, BufferBytesPerDoc: 1000, HoldBytes: 1 << 20, WriteDocs: 1 << 20, Exhausts: true}}
		op.Done = func(o Outcome) { out = &o }
		n.Submit(op)
		n.AdvanceTo(5 * time.Millisecond) // scanned, writing has begun
		n.AlwaysShed = true               // queryMemoryLoadSheddingAlwaysShed
		n.AdvanceTo(50 * time.Millisecond)
		shed := out != nil && out.Code == CodeQueryMemoryLimitExceeded
		if shed != tc.shedOK {
			t.Errorf("%s: shed=%v (outcome %+v), want %v", tc.name, shed, out, tc.shedOK)
		}
		if shed && !out.Wrote {
			t.Errorf("%s: shed before writing; the test must shed after the write stage started", tc.name)
		}
	}
}

// A failpoint armed for one op (its data condition met, Op.ForceShed)
// sheds that op at its next check and no other: a read running beside it
// above the low mark is left to the shedding formula, which at a pressure
// just over the low mark spares it. Node.AlwaysShed (the failpoint with no
// condition) sheds both.
func TestForcedShedArmsOnlyItsOp(t *testing.T) {
	for _, global := range []bool{false, true} {
		p := params(t, map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "85"})
		n := NewNode(DefaultHardware(), p, 1)
		n.PressureOverride = 31
		outcomes := map[string]*Outcome{}
		submit := func(name string, force bool) {
			op := &Op{Kind: KindAggregate, Eligible: true, ForceShed: force,
				Work: Work{ScanDocs: 1 << 30, CPUPerDoc: time.Microsecond, BufferBytesPerDoc: 1, HoldBytes: 64 << 10}}
			op.Done = func(o Outcome) { outcomes[name] = &o }
			n.Submit(op)
		}
		submit("forced", true)
		submit("beside", false)
		n.AlwaysShed = global
		n.AdvanceTo(200 * time.Millisecond)
		shed := func(name string) bool { o := outcomes[name]; return o != nil && o.Code == CodeQueryMemoryLimitExceeded }
		if !shed("forced") {
			t.Errorf("AlwaysShed %v: the forced op was not shed (%+v)", global, outcomes["forced"])
		}
		if shed("beside") != global {
			t.Errorf("AlwaysShed %v: the op beside it shed=%v, want %v", global, shed("beside"), global)
		}
	}
}

func TestSpillAtStageLimitCountsMetrics(t *testing.T) {
	p := params(t, map[string]string{"internalQueryMaxBlockingSortMemoryUsageBytes": "10485760"})
	n := NewNode(DefaultHardware(), p, 1)
	q := QueryShape{Stage: "$sort", ScanDocs: 100_000, DocBytes: 250, HoldBytes: 1 << 20}
	op := &Op{Kind: KindAggregate, Eligible: true, Work: p.AggregateWork(q)}
	n.Submit(op)
	n.AdvanceTo(time.Second)
	st := n.Spills["sort"]
	// 25 MB through a 10 MiB buffer: two full spills and the final run.
	if st.Spills != 3 || st.SpilledBytes < 24_000_000 || st.SpilledRecords < 95_000 {
		t.Fatalf("sort spill counters %+v, want 3 spills of ~25 MB", *st)
	}
}

// The build variants' hazards: master's odds form pins the chance to 1 at
// the high mark and grows without bound before it; the linear form stays
// finite there (ln2 · size · pressure), so a 32 MiB op over 1 s is shed
// with chance 1 − e^(−ln2) = 0.5 at full pressure.
func TestShedHazardVariants(t *testing.T) {
	node := func(hazard string) *Node {
		p := DefaultParams()
		p.ShedLowPercent, p.ShedHighPercent, p.ShedHazard = 30, 70, hazard
		n := NewNode(DefaultHardware(), p, 1)
		return n
	}
	odds, linear := node(HazardOdds), node(HazardLinear)
	for _, used := range []float64{50, 66, 70, 90} {
		odds.PressureOverride, linear.PressureOverride = used, used
		po, pl := odds.ShedProbability(32<<20, time.Second), linear.ShedProbability(32<<20, time.Second)
		if pl > po {
			t.Errorf("at %v%%: linear %.3f above odds %.3f", used, pl, po)
		}
		if used >= 70 && (po != 1 || math.Abs(pl-0.5) > 1e-9) {
			t.Errorf("at %v%% (the high mark or above): odds %.3f (want 1), linear %.3f (want 0.5)", used, po, pl)
		}
	}
	odds.PressureOverride, linear.PressureOverride = 66, 66 // pressure 0.9: odds term 9
	if r := odds.ShedProbability(1<<20, time.Second) / linear.ShedProbability(1<<20, time.Second); r < 8 {
		t.Errorf("near the mark the odds term should multiply a small op's chance about ninefold, got %.1f×", r)
	}
}
