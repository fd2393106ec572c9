package metric

import (
	"math"
	"testing"
)

func TestSlopeTest(t *testing.T) {
	var rising, flat [][2]float64
	for i := range 60 {
		x := float64(i)
		rising = append(rising, [2]float64{x, 2*x + float64(i%3)})
		flat = append(flat, [2]float64{x, 50 + float64(i%5)})
	}
	if s, p, ok := SlopeTest(rising); !ok || s < 1.9 || s > 2.1 || p > 1e-6 {
		t.Errorf("rising: slope %v p %v ok %v", s, p, ok)
	}
	if s, p, ok := SlopeTest(flat); !ok || p < 0.01 {
		t.Errorf("flat: slope %v p %v: a flat queue is not growth", s, p)
	}
	if _, _, ok := SlopeTest(rising[:2]); ok {
		t.Error("two points give no test")
	}
}

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
