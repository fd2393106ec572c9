// Package report turns a run folder into what people read and what the
// nightly pipeline reads: per-arm statistics of every trial metric, a
// comparison of each arm with the baseline, gates, and the renderers
// (HTML, summary.json, perf.json, Go benchmark format, Markdown).
//
// The statistics follow benchstat's discipline: the median and the range
// of the n trial values (at n = 5 a 95 % confidence interval of the median
// is unbounded, and we say so rather than print one), a t-based interval
// of the mean, an exact Mann-Whitney U test against the baseline with the
// Hodges-Lehmann shift as the effect, "~" when p > α, and warnings carried
// as data and shown as footnotes.
//
// Each statistic has one implementation (metric's package doc lists
// them): medians are metric.Median (montanaflynn/stats), the extremes the
// standard library's slices.Min and slices.Max, the mean's interval, the
// median's order-statistic interval and the U test go-moremath's; the
// Hodges-Lehmann shift, which neither library has, is written here.
package report

import (
	"errors"
	"math"
	"slices"

	ms "github.com/aclements/go-moremath/stats"

	"github.com/qmlsab/qmlsab/metric"
)

// Summary describes one metric's n trial values for one arm.
type Summary struct {
	N                int
	Values           []float64
	Median, Min, Max float64
	Mean             float64
	// MeanLo and MeanHi bound the mean at Confidence (t-based); infinite
	// when n < 2.
	MeanLo, MeanHi float64
	// MedianCI says whether a finite confidence interval of the median
	// exists at Confidence for this n (it needs n >= 6 at 95 %).
	MedianCI   bool
	Confidence float64
}

// Summarize describes values at a confidence level (0.95 by default).
func Summarize(values []float64, confidence float64) Summary {
	if confidence <= 0 || confidence >= 1 {
		confidence = 0.95
	}
	s := Summary{N: len(values), Values: slices.Clone(values), Confidence: confidence}
	if s.N == 0 {
		return s
	}
	s.Median, s.Min, s.Max = metric.Median(values), slices.Min(values), slices.Max(values)
	s.Mean, s.MeanLo, s.MeanHi = ms.MeanCI(values, confidence)
	ci := ms.QuantileCI(s.N, 0.5, confidence)
	s.MedianCI = ci.LoOrder >= 1 && ci.HiOrder <= s.N && ci.Confidence >= confidence
	return s
}

// Comparison is an arm against the baseline on one metric.
type Comparison struct {
	Metric, Base, Arm string
	// P is the exact two-sided Mann-Whitney U p-value (NaN when the test
	// cannot be made: an empty side, or every value equal on both sides,
	// which is no difference at all).
	P float64
	// Delta is the Hodges-Lehmann shift (arm − base): the median of all
	// pairwise differences.
	Delta float64
	// DeltaPercent is Delta relative to the baseline's median (NaN when
	// that is 0).
	DeltaPercent float64
	Alpha        float64
	Significant  bool
	N1, N2       int
	// Direction is how the verdict reads a significant shift: Better,
	// Worse, Changed (a metric without a better direction) or NotJudged
	// (over the seconds with a primary, when an arm lost it in the
	// storm); "" when the shift is not significant. Analyze sets it.
	Direction string
	// OverOutage marks a metric over the seconds with a primary compared
	// while either arm had no primary for part of its storm, significant
	// or not: its cells carry the outage footnote.
	OverOutage bool
}

// Compare tests arm against base at alpha (0.05 by default).
func Compare(metricName, baseName, armName string, base, arm []float64, alpha float64) Comparison {
	if alpha <= 0 || alpha >= 1 {
		alpha = 0.05
	}
	c := Comparison{Metric: metricName, Base: baseName, Arm: armName, Alpha: alpha, N1: len(base), N2: len(arm),
		P: math.NaN(), Delta: math.NaN(), DeltaPercent: math.NaN()}
	if len(base) == 0 || len(arm) == 0 {
		return c
	}
	c.Delta = HodgesLehmann(base, arm)
	if m := metric.Median(base); m != 0 {
		c.DeltaPercent = 100 * c.Delta / math.Abs(m)
	}
	r, err := ms.MannWhitneyUTest(base, arm, ms.LocationDiffers)
	switch {
	case errors.Is(err, ms.ErrSamplesEqual):
		c.P = 1 // all values equal: no evidence of a difference
	case err == nil:
		c.P = r.P
	}
	c.Significant = c.P <= alpha
	return c
}

// HodgesLehmann is the two-sample Hodges-Lehmann estimate of the shift
// from x to y: the median of y_j − x_i over all pairs. Neither statistics
// library has it.
func HodgesLehmann(x, y []float64) float64 {
	d := make([]float64, 0, len(x)*len(y))
	for _, a := range x {
		for _, b := range y {
			d = append(d, b-a)
		}
	}
	return metric.Median(d)
}

// MinP is the smallest two-sided p-value an exact U test can give for
// samples of these sizes (no ties): 2 / C(n1+n2, n1).
func MinP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}
