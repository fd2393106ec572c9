package model

import (
	"math"
	"time"
)

// probe is throughput probing (mongod's ThroughputProbing): every interval
// it compares throughput (finished ticket acquisitions per second) with
// the stable state's and moves the normal pools' concurrency up when the
// pools were exhausted (peak use of read and write together reached their
// total), down otherwise, keeping a move only when throughput improved (up)
// or held (down); accepted moves update the stable concurrency as an
// exponential moving average.
type probe struct {
	state            int // 0 stable, 1 up, 2 down
	stable           float64
	stableThroughput float64
	lastFinished     int64
	last             time.Duration

	TimesDecreased, TimesIncreased             int64
	TotalAmountDecreased, TotalAmountIncreased int64
	TimesProbedStable, TimesProbedUp           int64
	TimesProbedDown                            int64
}

// ProbeStats are queues.execution.monitor's counters.
type ProbeStats = probe

// Monitor returns throughput probing's counters.
func (n *Node) Monitor() ProbeStats { return n.probe }

func (n *Node) finishedTotal() int64 {
	var t int64
	for _, byPrio := range n.pools {
		for _, pl := range byPrio {
			t += pl.finishedProcessing
		}
	}
	return t
}

func (n *Node) runProbe() {
	pr := &n.probe
	elapsed := (n.now - pr.last).Seconds()
	finished := n.finishedTotal()
	throughput := float64(finished-pr.lastFinished) / elapsed
	pr.last, pr.lastFinished = n.now, finished
	read, write := n.pools[0][0], n.pools[1][0]
	current := float64(read.total + write.total)
	// Exhaustion is judged on both pools together: a read-only storm leaves
	// the write pool idle, so probing steps down while throughput holds.
	exhausted := read.peak+write.peak >= read.total+write.total && read.total+write.total < 2*n.p.MaxConcurrency
	busy := read.peak > n.p.MinConcurrency || write.peak > n.p.MinConcurrency
	read.peak, write.peak = read.out, write.out
	switch pr.state {
	case 0:
		pr.TimesProbedStable++
		pr.stableThroughput = throughput
		switch {
		case exhausted:
			pr.state = 1
			n.resize(math.Max(pr.stable*(1+n.p.ProbeStep), pr.stable+1))
		case busy:
			pr.state = 2
			n.resize(math.Min(pr.stable*(1-n.p.ProbeStep), pr.stable-1))
		}
	case 1:
		pr.TimesProbedUp++
		if throughput > pr.stableThroughput {
			old := pr.stable
			pr.stable = ema(pr.stable, current, n.p.EMAWeight)
			pr.TimesIncreased++
			pr.TotalAmountIncreased += int64(math.Round(pr.stable - old))
		}
		pr.stable = n.resize(pr.stable)
		pr.state = 0
	case 2:
		pr.TimesProbedDown++
		if throughput >= pr.stableThroughput {
			old := pr.stable
			pr.stable = ema(pr.stable, current, n.p.EMAWeight)
			pr.TimesDecreased++
			pr.TotalAmountDecreased += int64(math.Round(old - pr.stable))
		}
		pr.stable = n.resize(pr.stable)
		pr.state = 0
	}
}

func ema(stable, current, weight float64) float64 { return (1-weight)*stable + weight*current }

// resize sets the normal pools to a total concurrency. Shrinking takes
// effect as tickets come back (kGradual): out may exceed total meanwhile.
// It returns the total after clamping to [2×min, 2×max].
func (n *Node) resize(total float64) float64 {
	lo := float64(2 * n.p.MinConcurrency)
	hi := float64(2 * n.p.MaxConcurrency)
	total = math.Max(lo, math.Min(hi, total))
	r, w := n.split(total)
	n.pools[0][0].total, n.pools[1][0].total = r, w
	n.ticketsBack = true // waiters may take the new tickets
	return total
}
