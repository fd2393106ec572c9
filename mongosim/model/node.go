package model

import (
	"math"
	"math/rand/v2"
	"time"
)

// Tick is the model's time step.
const Tick = time.Millisecond

// Node is one member's execution-control, memory and shedding state. It is
// not safe for concurrent use; callers serialise access (the wire server
// holds a lock, the calibration loop is single-threaded).
type Node struct {
	hw Hardware
	p  Params
	// rng is the shedder's source, a PCG called directly: its draws are
	// rand.Rand.Float64's (the 53 low bits of a Uint64, scaled), without
	// the interface call per draw.
	rng *rand.PCG
	now time.Duration

	// pools[rw][prio]: rw 0 read, 1 write; prio 0 normal, 1 low.
	pools   [2][2]*pool
	ops     opTable
	running []*Op // in admission order, as swap-removal leaves it
	runBuf  []*Op // step's copy of running
	// parked is how many running ops are parked: writers paused in
	// balance_dirty_pages whose slice is already past the yield period,
	// for which a tick changes nothing a step reads (park says why).
	// parkClock is Σ cpuShare × dt over the ticks stepped, the run time a
	// parked op's slice would have added since its parkMark.
	parked    int
	parkClock float64
	// reference steps every running op every tick, parking none, and
	// looks for free tickets every tick (ticketsBack): the model without
	// the shortcuts that change nothing, which tests hold them to.
	reference bool

	cursors map[int64]cursor // idle cursors
	nextID  int64
	seq     int64

	trackedTotal int64
	// live is the census of n.ops kept as operations come and go, so a
	// sample reads it without walking every operation.
	live   liveCounts
	queued int // operations waiting in any pool
	// ticketsBack: a ticket came back or a pool grew since admitWaiters
	// last ran.
	ticketsBack bool
	// holders are the waiting operations that hold tracked memory.
	holders holderIndex
	// yieldSeconds is p.YieldPeriod in seconds, converted once: it is
	// compared with every running op's slice every tick.
	yieldSeconds float64
	rss, rssPeak int64
	rssSample    int64 // the RSS monitor's latest sample
	shedCache    shedState

	probe       probe
	lastMonitor time.Duration
	dead        bool

	host    *hostState
	stalled int // writers paused in balance_dirty_pages this tick

	// Counters.
	OperationsShed, OperationsShedQueued int64
	TotalDeprioritizations               int64
	Spills                               map[string]*SpillStats
	FailedDueToMemoryLimit               int64

	// AlwaysShed is the queryMemoryLoadSheddingAlwaysShed failpoint.
	AlwaysShed bool
	// PressureOverride, when >= 0, is queryMemoryPressureOverride's
	// usagePercent: the shedder sees this memory use instead of RSS.
	PressureOverride float64
	// OnCrash is called when the member is OOM-killed.
	OnCrash func()
	// OnShed is called for every shed (inline or queued).
	OnShed func(op *Op, queued bool)
}

// cursor is an idle cursor: the buffer it keeps, the admissions its query
// has taken so far (the deprioritization heuristic's count), and the
// query's shedding clock, which mongod scopes to the query's lifespan so
// it survives getMores and idle periods.
type cursor struct {
	bytes      int64
	admissions int
	primed     bool
	lastEval   time.Duration
	runs       int // spilled runs (host model: merge buffers)
}

// SpillStats are metrics.query.<stage> spill counters.
type SpillStats struct {
	Spills, SpilledBytes, SpilledRecords int64
}

// NewNode returns a fresh member (after a start or a restart).
func NewNode(hw Hardware, p Params, seed uint64) *Node {
	n := &Node{hw: hw, p: p, rng: rand.NewPCG(seed, seed^0x9e3779b97f4a7c15),
		cursors: map[int64]cursor{}, PressureOverride: -1,
		Spills: map[string]*SpillStats{"sort": {}, "group": {}, "setWindowFields": {}}}
	low := p.LowPriorityTickets
	if low < 0 {
		low = hw.CPUs
	}
	read, write := n.initialConcurrency()
	n.pools[0][0] = newPool("read.normalPriority", false, read, &n.holders)
	n.pools[0][1] = newPool("read.lowPriority", true, low, &n.holders)
	n.pools[1][0] = newPool("write.normalPriority", false, write, &n.holders)
	n.pools[1][1] = newPool("write.lowPriority", true, low, &n.holders)
	n.yieldSeconds = p.YieldPeriod.Seconds()
	n.probe.stable = float64(read + write)
	hw = hw.WithDefaults()
	n.hw = hw
	n.host = newHostState(hw)
	n.rss, _ = n.host.update(0, hw.AllocOverhead, 0)
	n.rssSample = n.rss
	n.rssPeak = n.rss
	return n
}

// initialConcurrency splits throughputProbingInitialConcurrency; 0 is
// mongod master's rule: 2 × the logical cores over both pools, clamped to
// [2 × min, 2 × max].
func (n *Node) initialConcurrency() (int, int) {
	total := n.p.InitialConcurrency
	if total <= 0 {
		total = min(max(2*n.hw.CPUs, 2*n.p.MinConcurrency), 2*n.p.MaxConcurrency)
	}
	return n.split(float64(total))
}

func (n *Node) split(total float64) (int, int) {
	clamp := func(x float64) int {
		return max(n.p.MinConcurrency, min(n.p.MaxConcurrency, int(math.Round(x))))
	}
	return clamp(total * n.p.ReadWriteRatio), clamp(total * (1 - n.p.ReadWriteRatio))
}

// Now is the model's clock.
func (n *Node) Now() time.Duration { return n.now }

// Dead reports whether the member was OOM-killed.
func (n *Node) Dead() bool { return n.dead }

// Hardware returns the member's machine.
func (n *Node) Hardware() Hardware { return n.hw }

// Params returns the parameters in force.
func (n *Node) Params() Params { return n.p }

// SetParams replaces the parameters (setParameter at runtime).
func (n *Node) SetParams(p Params) {
	n.p = p
	n.yieldSeconds = p.YieldPeriod.Seconds()
}

// RSS is resident memory now; RSSPeak the highest seen.
func (n *Node) RSS() int64     { return n.rss }
func (n *Node) RSSPeak() int64 { return n.rssPeak }

// RSSSample is the RSS monitor's latest sample (queryMemory.currentUsageBytes).
func (n *Node) RSSSample() int64 { return n.rssSample }

// Op returns a live operation.
func (n *Node) Op(id int64) *Op { return n.ops.get(id) }

// Ops calls f for every live operation.
func (n *Node) Ops(f func(*Op)) {
	for _, op := range n.ops.live {
		f(op)
	}
}

// RunningOps calls f for every operation holding a ticket: with the
// queued ones (QueuedOps, LargestQueuedHolding), every live operation. f
// must not submit, kill or end operations.
func (n *Node) RunningOps(f func(*Op)) {
	for _, op := range n.running {
		f(op)
	}
}

// QueuedOps calls f for every operation waiting for a ticket, pool by
// pool (normal then low priority, reads then writes): a caller that needs
// only the queued need not walk every live operation.
func (n *Node) QueuedOps(f func(*Op)) {
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			for _, w := range pl.waiters.ops {
				op := w.op
				f(op)
			}
		}
	}
}

// CursorBytes is the tracked memory an idle cursor holds (0 if unknown).
func (n *Node) CursorBytes(id int64) int64 { return n.cursors[id].bytes }

// Submit starts an operation now. A getMore takes over its cursor's
// buffer; one whose cursor is gone fails with CursorNotFound.
func (n *Node) Submit(op *Op) {
	if n.dead {
		op.state = stateDone
		if op.Done != nil {
			op.Done(Outcome{Code: CodeHostUnreachable})
		}
		return
	}
	n.nextID++
	if op.ID == 0 {
		op.ID = n.nextID
	}
	op.started = n.now
	op.heapIndex = -1
	op.holderSlot = 0
	op.spillFile = nil
	op.scanned = 0
	op.readLeft = float64(op.Work.ReadSpillBytes)
	op.writesLeft = float64(op.Work.WriteDocs)
	op.cpuPerDoc = op.Work.CPUPerDoc.Seconds()
	if op.Write {
		op.latched = true // global IX from the start
	}
	if op.Work.StartTracked > 0 {
		n.setTracked(op, op.Work.StartTracked)
	}
	if op.Kind == KindGetMore {
		c, ok := n.cursors[op.CursorID]
		if !ok {
			n.setTracked(op, 0) // it never went live: it holds nothing
			op.state = stateDone
			if op.Done != nil {
				op.Done(Outcome{Code: 43})
			}
			return
		}
		delete(n.cursors, op.CursorID)
		n.trackedTotal -= c.bytes
		n.live.cursorBytes -= c.bytes
		n.setTracked(op, c.bytes)
		n.cursorUntracked(c, -1)
		op.runs = c.runs
		if n.p.GetMoreInheritsPriority {
			op.prior = c.admissions
		}
		if n.p.ShedClockScope != "operation" {
			op.primed, op.lastEval = c.primed, c.lastEval
		}
	}
	n.ops.put(op)
	op.countedStage = op.Work.Stage
	n.live.add(op.countedStage, 1)
	n.opUntracked(op)
	n.request(op)
}

func (n *Node) setTracked(op *Op, b int64) {
	n.trackedTotal += b - op.tracked
	n.live.opBytes += b - op.tracked
	op.tracked = b
	op.peak = max(op.peak, b)
}

// request asks for a ticket: deprioritization is decided at every
// acquisition (TicketingSystem::_shouldDeprioritize).
func (n *Node) request(op *Op) {
	rw := 0
	if op.Write {
		rw = 1
	}
	prio := 0
	if n.UsesPrioritization() {
		if !op.lowered && op.prior+op.admissions >= n.p.DeprioritizeThreshold {
			op.lowered = true
			n.TotalDeprioritizations++
		}
		if op.lowered {
			prio = 1
		}
	}
	pl := n.pools[rw][prio]
	op.pool = pl
	if pl.out < pl.total && pl.queueLength() == 0 {
		n.admit(op)
		return
	}
	op.state = stateQueued
	op.queuedAt = n.now
	n.seq++
	op.queueSeq = n.seq
	pl.push(op)
	n.queued++
	pl.addedToQueue++
}

func (n *Node) admit(op *Op) {
	pl := op.pool
	pl.out++
	pl.peak = max(pl.peak, pl.out)
	pl.startedProcessing++
	if op.admissions == 0 {
		pl.newAdmissions++
	}
	op.admissions++
	op.state = stateRunning
	op.sliceStart = n.now
	op.sliceIters = 0
	op.sliceRun = 0
	op.runSlot = len(n.running)
	n.running = append(n.running, op)
}

func (n *Node) dequeue(op *Op) {
	pl := op.pool
	if pl.remove(op) {
		n.queued--
	}
	pl.removedFromQueue++
	pl.totalTimeQueuedMicros += int64((n.now - op.queuedAt) / time.Microsecond)
}

// admitWaiters gives free tickets to waiters. After it, no pool has both
// a free ticket and a waiter, and none gets both until a ticket comes
// back (release) or a pool grows (resize): a request finding a free
// ticket takes it at once. Until then it would find nothing to do, and
// under a storm, with thousands waiting and every ticket held, that is
// most ticks: ticketsBack says whether it must look.
func (n *Node) admitWaiters() {
	if n.queued == 0 || (!n.ticketsBack && !n.reference) {
		return
	}
	n.ticketsBack = false
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			for pl.out < pl.total && pl.queueLength() > 0 {
				op := pl.pop()
				n.queued--
				pl.removedFromQueue++
				pl.totalTimeQueuedMicros += int64((n.now - op.queuedAt) / time.Microsecond)
				n.admit(op)
			}
		}
	}
}

// release gives back a running op's ticket.
func (n *Node) release(op *Op) {
	pl := op.pool
	pl.out--
	n.ticketsBack = true
	pl.finishedProcessing++
	pl.totalTimeProcessingMicros += int64((n.now - op.sliceStart) / time.Microsecond)
	if op.parked {
		n.unpark(op)
	}
	// The last running op takes its place, as a search for it and a swap
	// would leave the list (the order the next ticks walk it in).
	i, last := op.runSlot, n.running[len(n.running)-1]
	n.running[i], last.runSlot = last, i
	n.running[len(n.running)-1] = nil
	n.running = n.running[:len(n.running)-1]
}

// Kill interrupts an operation with code, as killOp and the shedders do. A
// queued op leaves its queue at once without a ticket (canceled); a running
// one dies at its next interrupt check.
func (n *Node) Kill(id int64, code int32) bool {
	op := n.ops.get(id)
	if op == nil || op.state == stateDone {
		return false
	}
	if op.killCode == 0 {
		op.killCode = code
	}
	if op.parked {
		n.unpark(op) // it ends at its turn in the next tick
	}
	if op.state == stateQueued {
		op.pool.canceled++
		n.dequeue(op)
		n.end(op, code)
	}
	return true
}

// KillCursor destroys an idle cursor and frees its buffer.
func (n *Node) KillCursor(id int64) bool {
	c, ok := n.cursors[id]
	if ok {
		delete(n.cursors, id)
		n.trackedTotal -= c.bytes
		n.live.cursorBytes -= c.bytes
		n.cursorUntracked(c, -1)
		n.dropQueryFile(id)
	}
	return ok
}

// end finishes an op with code (0: success). Its memory is freed; on
// success, an op whose cursor lives on hands its buffer to the cursor.
func (n *Node) end(op *Op, code int32) {
	if op.state == stateRunning {
		n.release(op)
	}
	out := Outcome{Code: code, Queued: op.state == stateQueued, TrackedBytes: op.tracked, Wrote: op.wrote,
		Stage: op.Work.Stage, Admissions: op.admissions, Elapsed: n.now - op.started}
	op.state = stateDone
	n.ops.remove(op)
	n.live.add(op.countedStage, -1)
	n.setUntracked(op, 0)
	if code == 0 && op.CursorID != 0 && !op.Work.Exhausts {
		keep := op.tracked
		if op.Work.LoadBytes > 0 {
			keep = op.Work.HoldBytes // the batch's partition buffer is released
		}
		c := cursor{bytes: keep, admissions: op.prior + op.admissions, primed: op.primed, lastEval: op.lastEval, runs: op.runs}
		n.cursors[op.CursorID] = c
		n.trackedTotal += keep
		n.live.cursorBytes += keep
		n.cursorUntracked(c, 1)
	} else {
		n.dropQueryFile(queryFile(op)) // the query is over: its spill file goes
	}
	n.setTracked(op, 0)
	if op.Done != nil {
		op.Done(out)
	}
}

// AdvanceTo runs the model up to time t in ticks. Ticks in which an idle
// member would change nothing are passed over in one move (a secondary
// takes no load for a whole trial; a restarted member catches up with the
// trial's clock from zero).
func (n *Node) AdvanceTo(t time.Duration) {
	for !n.dead && n.now+Tick <= t {
		if k := n.quietTicks(t); k > 0 {
			n.now += time.Duration(k) * Tick
			n.stalled = 0
			continue
		}
		n.step()
	}
}

// quietTicks is how many of the next ticks up to t would change nothing
// but the clock: none while an operation runs or waits, background
// writeback runs, or memory is not where the last tick left it (the
// allocator still releasing pages, a cursor killed since); otherwise the
// ticks before the next RSS monitor or throughput probe, which keep their
// counters and so are stepped.
func (n *Node) quietTicks(t time.Duration) int64 {
	if len(n.running) > 0 || n.queued > 0 || !n.memorySettled() {
		return 0
	}
	k := int64((t - n.now) / Tick)
	k = min(k, ticksUntil(n.now, n.lastMonitor, n.p.RSSMonitorInterval)-1)
	k = min(k, ticksUntil(n.now, n.probe.last, n.p.ProbeInterval)-1)
	return max(k, 0)
}

// ticksUntil is how many ticks from now the step comes whose time is at
// least every past last (every ≤ a tick: the next one).
func ticksUntil(now, last, every time.Duration) int64 {
	need := every - (now - last)
	if need <= Tick {
		return 1
	}
	return int64((need + Tick - 1) / Tick)
}

// memorySettled reports whether a tick with no operation running or
// queued would leave resident memory as the last one computed it.
func (n *Node) memorySettled() bool {
	return !n.host.pc.flushing() && n.host.unchanged(n.trackedTotal, n.hw.AllocOverhead)
}

// tickSeconds is Tick in seconds.
var tickSeconds = Tick.Seconds()

func (n *Node) step() {
	n.now += Tick
	dt := tickSeconds
	cpuN, diskN := 0, 0
	// balance_dirty_pages' verdict for this tick: the page cache moves
	// only after every op has been classified.
	over := n.host.pc.overLimit()
	if !over && n.parked > 0 {
		n.unparkAll()
	}
	n.stalled = n.parked // a parked op is a paused writer
	// Under a storm, most ticks have every running op parked: they skip
	// both walks of the running ops, which would pass over every one.
	stepping := len(n.running) > n.parked
	if stepping {
		cpuN, diskN = n.classify(over)
	}
	cpuShare := 1.0
	if cpuN > n.hw.CPUs {
		cpuShare = float64(n.hw.CPUs) / float64(cpuN)
	}
	diskRate := 0.0
	users := diskN
	if n.host.pc.flushing() {
		users++ // background writeback shares the device
		n.host.pc.writeback(n.hw.DiskBytesPerSec / float64(users) * dt)
	}
	if diskN > 0 {
		diskRate = n.hw.DiskBytesPerSec / float64(users)
	}
	// What a stalled op's slice gains this tick (progress): a parked op's
	// share, added to its slice when it unparks.
	n.parkClock += cpuShare * dt
	// A copy, reused tick to tick: ending and yielding ops change n.running.
	n.runBuf = n.runBuf[:0]
	if stepping {
		n.runBuf = append(n.runBuf, n.running...)
	}
	shedding := n.SheddingEnabled() // no checkpoint need look otherwise
	for _, op := range n.runBuf {
		if op.parked {
			continue
		}
		if op.killCode != 0 {
			n.end(op, op.killCode)
			continue
		}
		checks := n.progress(op, dt, cpuShare, diskRate)
		if checks && shedding && n.inlineShed(op) {
			n.shed(op, false)
			continue
		}
		if op.finished() {
			n.end(op, 0)
			continue
		}
		// A yield happens between iterations: not inside a spill-block read
		// nor while a spilled run is being written.
		// The yield period is measured in time the op ran, not wall time: a
		// real thread runs in whole scheduler quanta and reaches its yield
		// check while running, which the model's processor sharing would
		// otherwise smear into slices that end on wall time alone.
		due := op.sliceRun >= n.yieldSeconds || (n.p.YieldIterations > 0 && op.sliceIters >= float64(n.p.YieldIterations))
		if due && op.blockHit <= 0 && op.blockMiss <= 0 && op.spillLeft <= 0 {
			// Yield: release the ticket and queue for another one.
			n.release(op)
			n.request(op)
			continue
		}
		if op.stalled && op.sliceRun >= n.yieldSeconds && !n.reference {
			n.park(op)
		}
	}
	n.admitWaiters()
	if n.now-n.lastMonitor >= n.p.RSSMonitorInterval {
		n.lastMonitor = n.now
		n.rssSample = n.rss
		n.sweep()
	}
	if n.now-n.probe.last >= n.p.ProbeInterval {
		n.runProbe()
	}
	var oom bool
	n.rss, oom = n.host.update(n.trackedTotal, n.hw.AllocOverhead, Tick)
	n.rssPeak = max(n.rssPeak, n.rss)
	if oom {
		n.crash()
	}
}

// classify sets each running op's state for the tick (paused writer, on
// the disk, or on a CPU), counting the ops on the CPUs and the disk, and
// starts the next spill block of each reader that needs one.
func (n *Node) classify(over bool) (cpuN, diskN int) {
	for _, op := range n.running {
		if op.parked {
			continue
		}
		if op.inReadPhase() && op.blockHit <= 0 && op.blockMiss <= 0 {
			n.startBlock(op)
		}
		switch {
		case writerStalls(op, over):
			op.stalled, op.onDisk = true, false
			n.stalled++
		case op.inDiskPhase():
			op.stalled, op.onDisk = false, true
			diskN++
		default:
			op.stalled, op.onDisk = false, false
			cpuN++
		}
	}
	return cpuN, diskN
}

// progress advances a running op by dt and reports whether it passed an
// interrupt checkpoint (one per 128 documents, as the classic and SBE
// interrupt checkers run).
func (n *Node) progress(op *Op, dt, cpuShare, diskRate float64) bool {
	w := &op.Work
	if op.onDisk {
		op.sliceRun += dt
	} else {
		op.sliceRun += cpuShare * dt
	}
	switch {
	case op.stalled:
		return false // paused in balance_dirty_pages, holding its ticket
	case op.spillLeft > 0:
		n.writeSpill(op, cpuShare*dt)
	case op.scanned < float64(w.ScanDocs):
		docs := min(cpuShare*dt/op.cpuPerDoc, float64(w.ScanDocs)-op.scanned)
		op.scanned += docs
		op.sinceCheck += docs
		op.sliceIters += docs
		if op.Kind == KindAggregate {
			n.host.wt.read(docs * float64(w.BufferBytesPerDoc))
		}
		if w.BufferBytesPerDoc > 0 {
			n.setTracked(op, op.tracked+int64(docs*float64(w.BufferBytesPerDoc)))
		}
		if w.StageLimitBytes > 0 && op.tracked >= w.StageLimitBytes {
			n.spill(op)
		}
		if op.scanned >= float64(w.ScanDocs) && w.HoldBytes > 0 {
			// The blocking stage is built: what stays is the buffer the
			// output needs (merge buffers and the current window partition).
			if op.tracked > 0 && w.StageLimitBytes > 0 && op.spilled() {
				n.spill(op) // the last run, before the merge
			}
			n.setTracked(op, w.HoldBytes)
		}
	case op.readLeft > 0:
		// Reading spilled runs back block by block: the part of a block the
		// page cache holds is copied on CPU, the evicted part waits for the
		// disk; then the block's documents are emitted in a CPU burst far
		// shorter than the shedder's 1 ms minimum evaluation spacing, so a
		// block yields one checkpoint.
		f := n.queryFileOf(op)
		if op.blockHit > 0 {
			b := min(cpuShare*dt*n.hw.SpillReadBytesPerSec, op.blockHit)
			op.blockHit -= b
			op.readLeft -= b
			n.host.pc.read(f, b, false)
		} else {
			b := min(diskRate*dt, op.blockMiss)
			op.blockMiss -= b
			op.readLeft -= b
			n.host.pc.read(f, b, true)
		}
		if op.blockHit <= 1e-9 && op.blockMiss <= 1e-9 {
			op.blockHit, op.blockMiss = 0, 0
			if op.readLeft < 1e-6 {
				op.readLeft = 0
			}
			n.opUntracked(op) // the reply batch grew by a block
			if !op.loaded && w.LoadBytes > 0 {
				op.loaded = true
				n.setTracked(op, op.tracked+w.LoadBytes)
			}
			return true
		}
		return false
	case op.writesLeft > 0:
		if !op.wrote {
			// The write stage starts: on the primary it takes the global IX
			// (the write-intent latch); forwarded writes never do, unless
			// the write-started flag is on (the partial-write investigation's fix).
			if !op.ForwardsWrites || n.p.WriteStartedLatch {
				op.latched = true
			}
		}
		docs := min(cpuShare*dt/op.cpuPerDoc, op.writesLeft)
		op.writesLeft -= docs
		op.sinceCheck += docs
		op.sliceIters += docs
		op.wrote = true
	}
	if op.sinceCheck >= 128 {
		// The remainder modulo 128, exactly (a power of two divides and
		// multiplies without rounding), without math.Mod's slow loop.
		op.sinceCheck -= 128 * math.Floor(op.sinceCheck/128)
		return true
	}
	return false
}

// park takes a writer paused in balance_dirty_pages out of the ticks'
// work until the pause ends (unparkAll) or it is killed or released
// (unpark). While paused it does nothing but count as stalled and add
// the tick's CPU share to its slice (progress); its slice is already past
// the yield period, and the period is the only thing the slice is ever
// compared with, so the slice's exact sum no longer decides anything: it
// gets the ticks' shares at once when it unparks (parkClock), a sum at
// least the period, as the per-tick one is (a setParameter that raises
// the period while it is parked finds the two sums equal but for their
// rounding, some 1e-16 of a second). It cannot yield while
// paused (its spill is unwritten) nor finish, and nothing else moves its
// state: a tick of it is the same with it parked or stepped. A paused
// writer stays paused for tens of ticks at a time, and under a storm
// they are most of the running ops.
func (n *Node) park(op *Op) {
	op.parked, op.parkMark = true, n.parkClock
	n.parked++
}

// unpark puts a parked op back in the ticks' work.
func (n *Node) unpark(op *Op) {
	op.sliceRun += n.parkClock - op.parkMark
	op.parked = false
	n.parked--
}

// unparkAll unparks every parked op: dirty pages are under the limit,
// and the paused writers write on.
func (n *Node) unparkAll() {
	for _, op := range n.running {
		if op.parked {
			n.unpark(op)
		}
	}
}

// startBlock sets up the next block op reads back: how much of it the
// page cache still holds (the file's resident share) and how much must
// come from the disk.
func (n *Node) startBlock(op *Op) {
	b := min(float64(n.hw.SpillBlockBytes), op.readLeft)
	h := n.queryFileOf(op).hitShare()
	op.blockHit, op.blockMiss = b*h, b*(1-h)
}

func (o *Op) spilled() bool { return o.peak >= o.Work.StageLimitBytes }

func spillKey(stage string) string {
	switch stage {
	case "$sort":
		return "sort"
	case "$group":
		return "group"
	}
	return "setWindowFields"
}

// spill writes the stage's buffer to a spill file and empties it.
func (n *Node) spill(op *Op) {
	st := n.Spills[spillKey(op.Work.Stage)]
	st.Spills++
	st.SpilledBytes += op.tracked
	if op.Work.BufferBytesPerDoc > 0 {
		st.SpilledRecords += op.tracked / op.Work.BufferBytesPerDoc
	}
	op.spillLeft += float64(op.tracked)
	op.runs++
	n.opUntracked(op)
	n.setTracked(op, 0)
}

// crash is the OOM kill: every operation and cursor dies with the process.
func (n *Node) crash() {
	n.dead = true
	// Every queue empties at once: no waiter is taken out of its heap one
	// by one (the member dies with thousands queued).
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			pl.clear()
		}
	}
	n.queued = 0
	n.holders.reset()
	for _, op := range n.ops.live {
		op.state = stateDone
		if op.Done != nil {
			op.Done(Outcome{Code: CodeHostUnreachable, TrackedBytes: op.tracked, Stage: op.Work.Stage, Wrote: op.wrote})
		}
	}
	n.ops.reset()
	n.running = nil
	n.parked = 0 // the parked ops died with the rest
	n.cursors = map[int64]cursor{}
	n.trackedTotal = 0 // the process's memory died with it
	n.host.pc.clear()  // and its spill files
	n.live = liveCounts{}
	if n.OnCrash != nil {
		n.OnCrash()
	}
}

// Pool returns a pool's live numbers (rw: "read"/"write", low priority or not).
func (n *Node) Pool(write, low bool) PoolStats {
	rw, pr := 0, 0
	if write {
		rw = 1
	}
	if low {
		pr = 1
	}
	pl := n.pools[rw][pr]
	return PoolStats{Out: pl.out, Total: pl.total, QueueLength: pl.queueLength(),
		AddedToQueue: pl.addedToQueue, RemovedFromQueue: pl.removedFromQueue, Canceled: pl.canceled,
		StartedProcessing: pl.startedProcessing, FinishedProcessing: pl.finishedProcessing,
		NewAdmissions: pl.newAdmissions, TotalTimeQueuedMicros: pl.totalTimeQueuedMicros,
		TotalTimeProcessingMicros: pl.totalTimeProcessingMicros, QueuedAdmissions: pl.queuedAdmissions()}
}

// PoolStats are one ticket pool's counters, named as serverStatus names them.
type PoolStats struct {
	Out, Total, QueueLength                          int
	AddedToQueue, RemovedFromQueue, Canceled         int64
	StartedProcessing, FinishedProcessing            int64
	NewAdmissions                                    int64
	TotalTimeQueuedMicros, TotalTimeProcessingMicros int64
	QueuedAdmissions                                 int64
}

// UsesPrioritization is executionControl's usesPrioritization.
func (n *Node) UsesPrioritization() bool {
	return n.p.DeprioritizationGate && n.p.HeuristicDeprioritization
}

// ReadTickets is queues.execution.read.totalTickets: the normal pool, plus
// the low pool when prioritization is in use.
func (n *Node) ReadTickets() int {
	t := n.pools[0][0].total
	if n.UsesPrioritization() {
		t += n.pools[0][1].total
	}
	return t
}

// Census counts live operations by state and priority, and their memory.
type Census struct {
	Running, QueuedNormal, QueuedLow int
	RunningLow                       int
	TrackedBytes                     int64 // in operations
	CursorBytes                      int64 // in idle cursors
	Cursors, LoweredCursors          int
	ByKind                           map[string]int
	// ByState counts ops by kind, state and priority ("getMore/queued/low").
	ByState map[string]int
}

// Census returns the live operations' census. Ops are counted into a
// fixed table by kind, state and priority, and the table's non-zero cells
// become ByState's keys: no string is built per operation.
func (n *Node) Census() Census {
	c := Census{ByKind: map[string]int{}, ByState: map[string]int{}}
	var byState [4][4][2]int // kind, state, lowered
	for _, op := range n.ops.live {
		c.TrackedBytes += op.tracked
		pr := 0
		if op.lowered {
			pr = 1
		}
		byState[op.Kind][op.state][pr]++
		switch op.state {
		case stateRunning:
			c.Running++
			if op.pool == n.pools[0][1] || op.pool == n.pools[1][1] {
				c.RunningLow++
			}
		case stateQueued:
			if op.pool == n.pools[0][1] || op.pool == n.pools[1][1] {
				c.QueuedLow++
			} else {
				c.QueuedNormal++
			}
		}
	}
	states := [...]string{"new", "queued", "running", "done"}
	prios := [...]string{"normal", "low"}
	for k := range byState {
		for st := range byState[k] {
			for pr, count := range byState[k][st] {
				if count == 0 {
					continue
				}
				kind := Kind(k).String()
				c.ByKind[kind] += count
				c.ByState[kind+"/"+states[st]+"/"+prios[pr]] = count
			}
		}
	}
	for _, cur := range n.cursors {
		c.CursorBytes += cur.bytes
		if cur.admissions >= n.p.DeprioritizeThreshold {
			c.LoweredCursors++
		}
	}
	c.Cursors = len(n.cursors)
	return c
}

// RunNow accounts for a point operation that finds a free ticket with
// nobody queued: it is admitted and finishes within the current tick, so
// callers need not wait for the clock. It reports false (and does nothing)
// when the op would have to queue; the caller then Submits it.
func (n *Node) RunNow(write bool) bool {
	if n.dead {
		return false
	}
	rw := 0
	if write {
		rw = 1
	}
	pl := n.pools[rw][0]
	if pl.out >= pl.total || pl.queueLength() > 0 {
		return false
	}
	pl.startedProcessing++
	pl.finishedProcessing++
	pl.newAdmissions++
	pl.peak = max(pl.peak, pl.out+1)
	return true
}

// Idle reports whether no operation is queued or running.
func (n *Node) Idle() bool { return n.ops.len() == 0 }
