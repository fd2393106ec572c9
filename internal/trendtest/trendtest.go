// Package trendtest holds what the queue-growth test's own tests share:
// the Wilson interval their targets are held to, and the retired slope
// test they measure the new one against. It is imported by tests only.
package trendtest

import (
	"fmt"
	"math"

	ms "github.com/aclements/go-moremath/stats"
)

// Wilson is the Wilson score 95 % interval of k successes in n trials.
// (Written out: neither statistics library the module uses has it.)
func Wilson(k, n int) (lo, hi float64) {
	const z = 1.959964
	p, fn := float64(k)/float64(n), float64(n)
	centre := (p + z*z/(2*fn)) / (1 + z*z/fn)
	half := z / (1 + z*z/fn) * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// Share is k of n as a percentage with its Wilson 95 % interval, in
// columns of a fixed width.
func Share(k, n int) string {
	lo, hi := Wilson(k, n)
	return fmt.Sprintf("%5.1f %% (%4.1f–%5.1f)", 100*float64(k)/float64(n), 100*lo, 100*hi)
}

// OLS is ordinary least squares of pts (time, value): the slope and its
// standard error taken with independent errors. ok is false for fewer
// than three points or all at one time.
func OLS(pts [][2]float64) (slope, se float64, ok bool) {
	n := float64(len(pts))
	if n < 3 {
		return 0, 0, false
	}
	var mx, my, sxx, sxy, sse float64
	for _, q := range pts {
		mx, my = mx+q[0]/n, my+q[1]/n
	}
	for _, q := range pts {
		sxx += (q[0] - mx) * (q[0] - mx)
		sxy += (q[0] - mx) * (q[1] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	for _, q := range pts {
		r := q[1] - my - slope*(q[0]-mx)
		sse += r * r
	}
	return slope, math.Sqrt(sse / (n - 2) / sxx), true
}

// RetiredFlag is the retired lowpri_queue_growth of a storm of stormSecs
// whose queue is pts: least squares over every storm sample, fill
// included, one-sided p < 0.01 by the t test with independent errors,
// and at least 10 ops over the storm.
func RetiredFlag(pts [][2]float64, stormSecs float64) bool {
	b, se, ok := OLS(pts)
	if !ok {
		return false
	}
	p := 0.0
	if se > 0 {
		p = 1 - ms.TDist{V: float64(len(pts) - 2)}.CDF(b/se)
	}
	return b > 0 && p < 0.01 && b*stormSecs >= 10
}
