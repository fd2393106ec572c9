package metric

import (
	"math"

	ms "github.com/aclements/go-moremath/stats"
)

// Trend is a series' least-squares linear trend with a test of whether
// it rises that holds when the series' errors are autocorrelated, as a
// gauge sampled every second is (a queue's length one second is mostly
// what it was the second before).
type Trend struct {
	// Slope is the least-squares slope of y on x, in y per unit of x.
	Slope float64
	// SE is the slope's heteroskedasticity- and autocorrelation-
	// consistent (HAC) standard error; P the one-sided p-value of
	// Slope > 0, Slope/SE against Student's t with N − 2 degrees of
	// freedom.
	SE, P float64
	// N is the number of points the fit rests on.
	N int
	// Prewhitening is the AR(1) coefficient removed from the slope's
	// scores before their long-run variance was estimated, and
	// Bandwidth the Bartlett kernel's bandwidth, in points, that
	// estimated it.
	Prewhitening, Bandwidth float64
}

// maxPrewhitening bounds the AR(1) coefficient the scores are
// prewhitened with: recolouring divides by (1 − ρ)², which a coefficient
// near 1 would blow up (Andrews and Monahan bound it the same way).
const maxPrewhitening = 0.97

// TrendTest fits y = a + b·x by least squares and tests b > 0 with a
// Newey–West (HAC) standard error. ok is false with fewer than three
// points or all at one x.
//
// Ordinary least squares' standard error assumes independent errors; on a
// series whose neighbours are correlated (lag-1 ≈ 0.7) it is far too
// small, and a flat series reads as rising far more often than the level
// says. The HAC error estimates the long-run variance of the slope's
// scores s_t = (x_t − x̄)·û_t instead:
//
//   - prewhitening (Andrews and Monahan, 1992): fit s_t = ρ·s_{t−1} + e_t,
//     estimate the long-run variance of e and recolour it by 1/(1 − ρ)²,
//     so the kernel only has to handle what an AR(1) leaves;
//   - Bartlett's kernel, weights 1 − j/S for lags j < S (Newey and West,
//     1987), which keeps the variance non-negative;
//   - the bandwidth S by Andrews' (1991) plug-in rule for Bartlett's
//     kernel, fitted to the series itself: with ρ̂ the lag-1 coefficient of
//     e and α = 4ρ̂²/((1 − ρ̂)²(1 + ρ̂)²), S = 1.1447·(α·n)^(1/3) — the more
//     autocorrelation is left, the more lags are weighed;
//   - the small-sample factor n/(n − 2) and Student's t with n − 2 degrees
//     of freedom, as ordinary least squares' test has.
//
// The textbook variant — a rule-of-thumb bandwidth (⌊4·(n/100)^(2/9)⌋,
// 4 lags at n = 150) without prewhitening — underestimates the long-run
// variance of such a series, so the queue-growth test raises more false
// alarms with it (docs/statistics.md has the measured rates of both),
// which is why it is not used.
// Lags count points, not units of x: the points are taken to be evenly
// spaced, as a sampler's are. Written here because neither statistics
// library the module uses (montanaflynn/stats, go-moremath) has a
// regression with autocorrelation-robust errors.
func TrendTest(pts [][2]float64) (tr Trend, ok bool) {
	n := len(pts)
	if n < 3 {
		return Trend{}, false
	}
	var mx, my float64
	for _, q := range pts {
		mx += q[0]
		my += q[1]
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxx, sxy float64
	for _, q := range pts {
		sxx += (q[0] - mx) * (q[0] - mx)
		sxy += (q[0] - mx) * (q[1] - my)
	}
	if sxx == 0 {
		return Trend{}, false
	}
	tr = Trend{Slope: sxy / sxx, N: n}
	scores := make([]float64, n)
	for i, q := range pts {
		scores[i] = (q[0] - mx) * (q[1] - my - tr.Slope*(q[0]-mx))
	}
	tr.Prewhitening = math.Max(-maxPrewhitening, math.Min(maxPrewhitening, lag1(scores)))
	innovations := make([]float64, n-1)
	for t := 1; t < n; t++ {
		innovations[t-1] = scores[t] - tr.Prewhitening*scores[t-1]
	}
	tr.Bandwidth = andrewsBartlettBandwidth(innovations)
	longRun := bartlettLongRunSum(innovations, tr.Bandwidth) * float64(n) / float64(n-1) /
		((1 - tr.Prewhitening) * (1 - tr.Prewhitening))
	tr.SE = math.Sqrt(longRun*float64(n)/float64(n-2)) / sxx
	switch {
	case tr.SE == 0 && tr.Slope > 0:
		tr.P = 0
	case tr.SE == 0:
		tr.P = 1
	default:
		tr.P = 1 - ms.TDist{V: float64(n - 2)}.CDF(tr.Slope/tr.SE)
	}
	return tr, true
}

// lag1 is the least-squares AR(1) coefficient of v (no mean: v are
// regression scores, whose mean is zero), 0 when v is all zero.
func lag1(v []float64) float64 {
	var num, den float64
	for t := 1; t < len(v); t++ {
		num += v[t] * v[t-1]
		den += v[t-1] * v[t-1]
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// andrewsBartlettBandwidth is Andrews' (1991) AR(1) plug-in bandwidth for
// Bartlett's kernel, at most the series' length.
func andrewsBartlettBandwidth(v []float64) float64 {
	rho := math.Max(-maxPrewhitening, math.Min(maxPrewhitening, lag1(v)))
	alpha := 4 * rho * rho / ((1 - rho) * (1 - rho) * (1 + rho) * (1 + rho))
	return math.Min(1.1447*math.Cbrt(alpha*float64(len(v))), float64(len(v)))
}

// bartlettLongRunSum is the long-run variance of v's sum, Γ₀ + 2·Σ_j
// (1 − j/S)·Γ_j over the lags j < S, with Γ_j = Σ_t v_t·v_{t−j}.
func bartlettLongRunSum(v []float64, s float64) float64 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	for j := 1; float64(j) < s && j < len(v); j++ {
		var g float64
		for t := j; t < len(v); t++ {
			g += v[t] * v[t-j]
		}
		sum += 2 * (1 - float64(j)/s) * g
	}
	return sum
}

// The queue-growth test's level and its floor of practical size (the
// lowpri_queue_sustained_growth metric's definition names both).
const (
	// GrowthLevel is the one-sided significance level of a rising trend.
	GrowthLevel = 0.01
	// GrowthMinOps is the least the trend must add over the window it is
	// fitted on: a queue that rises by a few operations over minutes is
	// not growing in any sense that matters, however clear its slope.
	GrowthMinOps = 10
)

// Growth is the sustained-growth test of one storm's queue.
type Growth struct {
	Trend
	// FillSeconds is how much of the storm's start the test left out,
	// from the storm's start to the first point it kept (FillEnd), and
	// Window the points it kept and fitted.
	FillSeconds float64
	Window      [][2]float64
	// Added is what the trend adds over the window: Slope times the time
	// from its first point to its last.
	Added float64
	// Growing is the verdict: Slope > 0 at one-sided P < GrowthLevel and
	// Added ≥ GrowthMinOps.
	Growing bool
}

// FillEnd is the index of the first of values that reaches their median:
// where a queue that starts empty has filled to its usual level. It is a
// property of the series, not a constant: a queue that fills in a second
// loses a second, one that fills over a minute loses the minute. It is
// at most half the series (at least half the values reach the median),
// so the test always keeps the later half. On a growing queue it skips
// more (up to that half), but what remains still grows; on a queue that
// starts above its median (one that drains) it skips nothing. It is 0
// when values is empty.
func FillEnd(values []float64) int {
	if len(values) == 0 {
		return 0
	}
	m := Median(values)
	for i, v := range values {
		if v >= m {
			return i
		}
	}
	return 0
}

// QueueGrowth is the sustained-growth test of a storm's queue samples:
// pts are (seconds since the storm's start, queue length) in time order.
// It leaves out the queue's fill (the points before FillEnd: a queue that
// starts empty and fills to its level would otherwise read as growth)
// and tests the rest with WindowGrowth. ok is false when fewer than three
// points remain, or all at one time.
func QueueGrowth(pts [][2]float64) (g Growth, ok bool) {
	values := make([]float64, len(pts))
	for i, q := range pts {
		values[i] = q[1]
	}
	return WindowGrowth(pts[FillEnd(values):])
}

// WindowGrowth is the growth verdict on the points of window, all of
// them kept: TrendTest's trend, what it adds over the window, and
// Growing. (QueueGrowth chooses the window; a test may try another.)
func WindowGrowth(window [][2]float64) (g Growth, ok bool) {
	g.Window = window
	if len(window) > 0 {
		g.FillSeconds = window[0][0]
	}
	if g.Trend, ok = TrendTest(window); !ok {
		return g, false
	}
	g.Added = g.Slope * (window[len(window)-1][0] - window[0][0])
	g.Growing = g.Slope > 0 && g.P < GrowthLevel && g.Added >= GrowthMinOps
	return g, true
}
