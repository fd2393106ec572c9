package metric

import (
	"cmp"
	"math"
	"slices"

	mf "github.com/montanaflynn/stats"
)

// The statistics of the tree, one implementation each: the median is
// montanaflynn/stats' (the basics, as the design asks), through Median;
// other quantiles are Quantile's (numpy's linear interpolation, written
// here because montanaflynn's Percentile takes a percentage and refuses
// the 0th); minimum and maximum are the standard library's slices.Min and
// slices.Max; t distributions, Mann-Whitney U and confidence intervals are
// go-moremath's; what neither library has (the autocorrelation-robust
// trend test, TrendTest; the Hodges-Lehmann shift in report) is written
// where it is used.

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

// Quantile is the linear-interpolation quantile (numpy's default) of xs,
// which it does not change.
func Quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
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
	low := Quantile(values, q)
	type value struct {
		v     float64
		bound bool
	}
	high := make([]value, len(values))
	for i, x := range values {
		high[i] = value{x, atLeast[i]}
		if atLeast[i] {
			high[i].v = math.Inf(1)
		}
	}
	slices.SortFunc(high, func(a, b value) int { return cmp.Compare(a.v, b.v) })
	pos := q * float64(len(high)-1)
	i := int(math.Floor(pos))
	frac := pos - float64(i)
	if i+1 >= len(high) {
		i, frac = len(high)-1, 0
	}
	if high[i].bound || frac > 0 && high[i+1].bound {
		return low, true // the quantile rests on a value known only from below
	}
	hv := high[i].v
	if frac > 0 {
		hv += frac * (high[i+1].v - high[i].v)
	}
	return low, hv != low
}
