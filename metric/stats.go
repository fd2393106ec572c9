package metric

import (
	"math"
	"slices"

	mf "github.com/montanaflynn/stats"
)

// The order statistics of the tree have one implementation each, and it
// is montanaflynn/stats' (the basics, as the design asks): a median is
// Median (the mean of the middle two for an even count); every other
// quantile or percentile is Quantile (linear interpolation between the
// closest ranks, numpy's default), and CensoredQuantile is Quantile with
// some values known only from below. No other code picks a median or a
// percentile by hand. All three are NaN for no values, never a panic nor
// a zero that would read as a figure. Minimum and maximum are the
// standard library's slices.Min and slices.Max; t distributions,
// Mann-Whitney U and confidence intervals are go-moremath's; what neither
// library has (the autocorrelation-robust trend test, TrendTest; the
// Hodges-Lehmann shift in report) is written where it is used.

// Median is the median of xs (the mean of the middle two for an even
// count), NaN when xs is empty; it does not change xs.
func Median(xs []float64) float64 {
	m, err := mf.Median(xs)
	if err != nil {
		return math.NaN()
	}
	return m
}

func median(xs []float64) float64 { return Median(xs) }

// Quantile is the q quantile (0 ≤ q ≤ 1) of xs by linear interpolation
// between the closest ranks (Hyndman and Fan's type 7, numpy's default):
// the value at rank q·(n−1) of the sorted values. It is NaN when xs is
// empty, holds a NaN, or q is outside [0, 1]; it does not change xs. The
// 0 quantile is the minimum: montanaflynn's Percentile, which takes a
// percentage, refuses 0.
func Quantile(xs []float64, q float64) float64 {
	var v float64
	var err error
	if q == 0 {
		v, err = mf.Min(xs)
	} else {
		v, err = mf.Percentile(xs, 100*q)
	}
	if err != nil {
		return math.NaN()
	}
	return v
}

// CensoredQuantile is the q quantile (Quantile's) of values some of which
// are only lower bounds (atLeast[i]: the true value is at least
// values[i], such as a latency a client timeout cut short). The quantile
// is exact when no bound can move it — it is the same with every bound at
// its value and with every bound unbounded — and is then returned with
// lowerBound false. Otherwise the true quantile is at least the one with
// the bounds at their values, which is returned with lowerBound true.
// Written here because neither statistics library handles censored data.
func CensoredQuantile(values []float64, atLeast []bool, q float64) (v float64, lowerBound bool) {
	if len(values) == 0 {
		return math.NaN(), false
	}
	low := Quantile(values, q)
	// The quantile with every bound unbounded: a bound is +Inf, so the
	// quantile is infinite exactly when it rests on one.
	high := slices.Clone(values)
	for i := range high {
		if atLeast[i] {
			high[i] = math.Inf(1)
		}
	}
	hv := Quantile(high, q)
	if math.IsInf(hv, 1) {
		return low, true
	}
	return low, hv != low
}
