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
func (n *Node) Pressure() float64 {
	used := float64(n.rssSample) / float64(n.hw.MemLimitBytes) * 100
	if n.PressureOverride >= 0 {
		used = n.PressureOverride
	}
	p := (used - n.p.ShedLowPercent) / (n.p.ShedHighPercent - n.p.ShedLowPercent)
	return math.Max(0, math.Min(1, p))
}

func (n *Node) aboveLowMark() bool {
	if n.PressureOverride >= 0 {
		return n.PressureOverride > n.p.ShedLowPercent
	}
	return float64(n.rssSample) > float64(n.hw.MemLimitBytes)*n.p.ShedLowPercent/100
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

func (n *Node) sheddable(op *Op) bool {
	return n.SheddingEnabled() && op.Eligible && !op.latched && op.tracked > 0 && op.killCode == 0
}

// inlineShed is queryMemoryCheckLoadShedding at a checkpoint of a running op.
func (n *Node) inlineShed(op *Op) bool {
	if !n.sheddable(op) {
		return false
	}
	if !n.aboveLowMark() {
		op.primed = false
		return false
	}
	if n.AlwaysShed {
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
	return n.rng.Float64() < n.ShedProbability(op.tracked, min(dt, maxEvalDt))
}

// sweep is the queued-op sweeper on the RSS monitor's tick.
func (n *Node) sweep() {
	if !n.p.SweepQueuedOps || !n.SheddingEnabled() || !n.aboveLowMark() {
		return
	}
	var victims []*Op
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			for _, op := range pl.waiters.ops {
				if !n.sheddable(op) {
					continue
				}
				if n.AlwaysShed || n.rng.Float64() < n.ShedProbability(op.tracked, n.p.RSSMonitorInterval) {
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
