package model

import (
	"math"
	"time"
)

// Query memory load shedding, after mongod's query_memory_load_shedding:
//
//	pressure = clamp((RSS/memLimit*100 - low) / (high - low), 0, 1)
//	hazard   = ln2 * (trackedBytes/sizeReference) * pressure/(1-pressure)
//	p        = 1 - exp(-hazard*dt)
//
// That is master's form (simShedHazard=odds). The other build variant,
// simShedHazard=linear, drops the odds term and the pin at the high mark:
// hazard = ln2 * size * pressure, so the hazard stays finite as RSS
// crosses the high mark and new aggregates are not killed young.
//
// The inline shedder evaluates this only at the interrupt checkpoints of
// operations that hold a ticket; dt is the time since the query's last
// evaluation (the clock lives with the query, across its getMores), capped
// at 1 s; evaluations closer than 1 ms are skipped with the time accruing;
// the first check above the low mark only primes the clock, and a check
// below it resets the clock. With the odds form, at or above the high mark p = 1 for every
// eligible op with tracked memory. The queued-op sweeper (the sweeper investigation) evaluates it every RSS-monitor
// interval for eligible operations that wait for a ticket, with dt = the
// interval. Ownership is partitioned: ticket holders are the inline
// check's, queued ops the sweeper's.

const maxEvalDt = time.Second

// SheddingEnabled reports whether the low mark enables shedding.
func (n *Node) SheddingEnabled() bool { return n.p.ShedLowPercent >= 0 }

// Pressure is the shedder's view of memory pressure in [0, 1], from the
// RSS monitor's sample (or the queryMemoryPressureOverride failpoint).
func (n *Node) Pressure() float64 { return n.shedView().pressure }

func (n *Node) aboveLowMark() bool { return n.shedView().above }

// shedState is what the shedder derives from the RSS monitor's sample, the
// pressure failpoint and the marks. It is read at every checkpoint of
// every running op but changes only when one of them does (the sample at
// most every monitor interval), so it is recomputed only then.
type shedState struct {
	valid               bool
	rssSample           int64
	override, low, high float64
	pressure            float64
	above               bool // above the low mark
}

func (n *Node) shedView() *shedState {
	v := &n.shedCache
	if v.valid && v.rssSample == n.rssSample && v.override == n.PressureOverride && v.low == n.p.ShedLowPercent && v.high == n.p.ShedHighPercent {
		return v
	}
	*v = shedState{valid: true, rssSample: n.rssSample, override: n.PressureOverride, low: n.p.ShedLowPercent, high: n.p.ShedHighPercent}
	used := float64(n.rssSample) / float64(n.hw.MemLimitBytes) * 100
	if n.PressureOverride >= 0 {
		used = n.PressureOverride
	}
	p := (used - n.p.ShedLowPercent) / (n.p.ShedHighPercent - n.p.ShedLowPercent)
	v.pressure = math.Max(0, math.Min(1, p))
	if n.PressureOverride >= 0 {
		v.above = n.PressureOverride > n.p.ShedLowPercent
	} else {
		v.above = float64(n.rssSample) > float64(n.hw.MemLimitBytes)*n.p.ShedLowPercent/100
	}
	return v
}

// ShedProbability is the chance an op with tracked bytes is shed over dt.
func (n *Node) ShedProbability(tracked int64, dt time.Duration) float64 {
	pr := n.Pressure()
	if pr <= 0 || tracked <= 0 {
		return 0
	}
	size := float64(tracked) / float64(n.p.ShedSizeReference)
	hazard := math.Ln2 * size * pr
	if n.p.ShedHazard != HazardLinear {
		if pr >= 1 {
			return 1
		}
		hazard /= 1 - pr
	}
	return 1 - math.Exp(-hazard*dt.Seconds())
}

// expMargin bounds how far the computed 1 − exp(−x) may lie from its
// true value (math.Exp is within an ulp or so; the subtraction adds at
// most half an ulp of 1): some 4e-16, taken 25 times over.
const expMargin = 1e-14

// shedDraw draws whether an op holding tracked bytes is shed over dt. It
// takes the same draw and gives the same verdict as
// rng.Float64() < ShedProbability(tracked, dt), without the exponential
// when the draw settles it: for x ≥ 0, x − x²/2 ≤ 1 − e^(−x) ≤ x, so a
// draw at or above x (plus the margin) is no shed and one below x − x²/2
// (less the margin) is a shed, whatever the last bits of the exponential;
// only a draw between the bounds needs it. Most evaluations hold a small
// x against a uniform draw and are settled by the upper bound.
// pr is the shedder's pressure (shedView's), which its callers have read.
func (n *Node) shedDraw(pr float64, tracked int64, dt time.Duration) bool {
	u := float64(n.rng.Uint64()<<11>>11) / (1 << 53) // rand.Rand.Float64's draw
	if pr <= 0 || tracked <= 0 {
		return false
	}
	size := float64(tracked) / float64(n.p.ShedSizeReference)
	hazard := math.Ln2 * size * pr
	if n.p.ShedHazard != HazardLinear {
		if pr >= 1 {
			return u < 1
		}
		hazard /= 1 - pr
	}
	return shedVerdict(u, hazard*dt.Seconds())
}

// shedVerdict is u < 1 − exp(−x), for x ≥ 0 (or NaN), computing the
// exponential only when the bounds leave it open.
func shedVerdict(u, x float64) bool {
	switch {
	case u >= x+expMargin:
		return false
	case u < x-x*x/2-expMargin:
		return true
	}
	return u < 1-math.Exp(-x)
}

func (n *Node) sheddable(op *Op) bool {
	return n.SheddingEnabled() && op.Eligible && !op.latched && op.tracked > 0 && op.killCode == 0
}

// forcedShed is queryMemoryLoadSheddingAlwaysShed in force for op: for
// every op of the node, or for op alone (its data condition met).
func (n *Node) forcedShed(op *Op) bool { return n.AlwaysShed || op.ForceShed }

// inlineShed is queryMemoryCheckLoadShedding at a checkpoint of a running op.
func (n *Node) inlineShed(op *Op) bool {
	if !n.sheddable(op) {
		return false
	}
	v := n.shedView()
	if !v.above {
		op.primed = false
		return false
	}
	if n.forcedShed(op) {
		return true
	}
	if !op.primed {
		op.primed, op.lastEval = true, n.now
		return false
	}
	dt := n.now - op.lastEval
	if dt < time.Millisecond {
		return false
	}
	op.lastEval = n.now
	return n.shedDraw(v.pressure, op.tracked, min(dt, maxEvalDt))
}

// sweep is the queued-op sweeper on the RSS monitor's tick.
func (n *Node) sweep() {
	if !n.p.SweepQueuedOps || !n.SheddingEnabled() || !n.aboveLowMark() {
		return
	}
	pr := n.Pressure() // the sweep sheds without moving the sample
	var victims []*Op
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			for _, w := range pl.waiters.ops {
				op := w.op
				if !n.sheddable(op) {
					continue
				}
				if n.forcedShed(op) || n.shedDraw(pr, op.tracked, n.p.RSSMonitorInterval) {
					victims = append(victims, op)
				}
			}
		}
	}
	for _, op := range victims {
		op.pool.canceled++
		n.dequeue(op)
		n.shed(op, true)
	}
}

// shed kills op with QueryMemoryLimitExceeded and counts it.
func (n *Node) shed(op *Op, queued bool) {
	n.OperationsShed++
	if queued {
		n.OperationsShedQueued++
	}
	if n.OnShed != nil {
		n.OnShed(op, queued)
	}
	n.end(op, CodeQueryMemoryLimitExceeded)
}
