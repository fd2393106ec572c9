package metric

import "testing"

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
