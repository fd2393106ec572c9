package metric

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Median is the middle value, or the mean of the two middle values of an
// even count, whatever the input's order; with nothing to take it from it
// is NaN, never a zero that would read as a measurement.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{3, 1}, 2}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

// Quantile is montanaflynn/stats' percentile, and it gives, bit for bit,
// what the tree's hand-written linear interpolation gave at every
// quantile the tree asks for (the trial metrics' p95 and p99, the
// report's censored median, minimum and maximum), so no figure moved when
// it replaced that code. Its empty and out-of-range cases are NaN, never
// a panic (the hand-written one indexed s[-1] on an empty slice).
func TestQuantileIsTheInterpolationTheTreeUsed(t *testing.T) {
	handWritten := func(xs []float64, q float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		pos := q * float64(len(s)-1)
		i := int(math.Floor(pos))
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (pos-float64(i))*(s[i+1]-s[i])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		xs := make([]float64, 1+rng.IntN(40))
		for i := range xs {
			switch trial % 3 {
			case 0:
				xs[i] = rng.Float64()
			case 1:
				xs[i] = math.Round(rng.ExpFloat64() * 1e6) // bytes, counts
			default:
				xs[i] = rng.NormFloat64() * 1e3 // latencies, shifts
			}
		}
		for _, q := range []float64{0, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1} {
			if got, want := Quantile(xs, q), handWritten(xs, q); got != want {
				t.Fatalf("Quantile(%v, %v) = %v, the hand-written interpolation gave %v", xs, q, got, want)
			}
		}
	}
	for _, c := range []struct {
		xs []float64
		q  float64
	}{{nil, 0.5}, {[]float64{}, 0}, {[]float64{}, 1}, {[]float64{1, 2}, -0.1}, {[]float64{1, 2}, 1.1}, {[]float64{1, math.NaN()}, 0.5}} {
		if got := Quantile(c.xs, c.q); !math.IsNaN(got) {
			t.Errorf("Quantile(%v, %v) = %v, want NaN", c.xs, c.q, got)
		}
	}
	if v, bound := CensoredQuantile(nil, nil, 0.5); !math.IsNaN(v) || bound {
		t.Errorf("CensoredQuantile of nothing = %v (lower bound %v), want NaN, not a bound", v, bound)
	}
}
