package report

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Exact two-sided U p-values for 5 vs 5, computed by enumerating all
// C(10,5) = 252 splits: complete separation gives 2/252.
func TestMannWhitneyExactFiveVersusFive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		base    []float64
		arm     []float64
		wantP   float64
		wantSig bool
	}{
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252, true},
		{"one swap", []float64{1, 2, 3, 4, 6}, []float64{5, 7, 8, 9, 10}, 4.0 / 252, true},
		// U = 2 of 25: 4 of the 252 splits have U <= 2 (U=0: 1, U=1: 1,
		// U=2: 2) and as many U >= 23, so the two-sided p is 8/252.
		{"two swaps", []float64{1, 2, 3, 5, 6}, []float64{4, 7, 8, 9, 10}, 8.0 / 252, true},
		{"interleaved", []float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, 0.6904761904761905, false},
	} {
		c := Compare("m", "B", "A", tc.base, tc.arm, 0.05)
		if !near(c.P, tc.wantP, 1e-9) || c.Significant != tc.wantSig {
			t.Errorf("%s: p=%.6f significant=%v, want p=%.6f significant=%v", tc.name, c.P, c.Significant, tc.wantP, tc.wantSig)
		}
	}
}

// With ties the exact distribution conditions on the tie pattern: for
// {1,1,2,2,3} vs {3,4,4,5,5} no split is more extreme than the
// observed one, and as extreme are the two separations each way (either
// 3 on the low side), p = 4/252 — checked against a brute-force enumeration
// of all 252 splits of the pooled values (scipy's method='exact' agrees
// only without ties, so the reference is the enumeration itself).
func TestMannWhitneyWithTiesMatchesEnumeration(t *testing.T) {
	base := []float64{1, 1, 2, 2, 3}
	arm := []float64{3, 4, 4, 5, 5}
	want := enumerateP(base, arm)
	if !near(want, 4.0/252, 1e-12) {
		t.Fatalf("enumeration p=%.9f, want the 4/252 worked out above", want)
	}
	c := Compare("m", "B", "A", base, arm, 0.05)
	if !near(c.P, want, 1e-9) {
		t.Errorf("p=%.9f, enumeration %.9f", c.P, want)
	}
	if !c.Significant {
		t.Errorf("p=%.4f should be significant at 0.05", c.P)
	}
	// Every value equal: no difference, p = 1, not significant.
	c = Compare("m", "B", "A", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0}, 0.05)
	if c.P != 1 || c.Significant || c.Delta != 0 {
		t.Errorf("identical zero samples: %+v", c)
	}
}

// enumerateP is the exact two-sided p of the rank-sum statistic by
// enumerating every way to split the pooled values into the two sizes,
// with midranks for ties.
func enumerateP(x, y []float64) float64 {
	pooled := append(append([]float64(nil), x...), y...)
	n := len(pooled)
	rank := make([]float64, n)
	for i := range pooled {
		less, equal := 0, 0
		for j := range pooled {
			switch {
			case pooled[j] < pooled[i]:
				less++
			case pooled[j] == pooled[i]:
				equal++
			}
		}
		rank[i] = float64(less) + float64(equal+1)/2
	}
	observed := 0.0
	for i := range x {
		observed += rank[i]
	}
	mean := float64(len(x)*(n+1)) / 2
	dev := math.Abs(observed - mean)
	extreme, total := 0, 0
	var rec func(start, left int, sum float64)
	rec = func(start, left int, sum float64) {
		if left == 0 {
			total++
			if math.Abs(sum-mean) >= dev-1e-9 {
				extreme++
			}
			return
		}
		for i := start; i <= n-left; i++ {
			rec(i+1, left-1, sum+rank[i])
		}
	}
	rec(0, len(x), 0)
	return float64(extreme) / float64(total)
}

func TestHodgesLehmann(t *testing.T) {
	// Pairwise differences of {1,2,3} and {4,6}: 3,2,1,5,4,3 → median 3.
	if got := HodgesLehmann([]float64{1, 2, 3}, []float64{4, 6}); got != 3 {
		t.Errorf("HL = %v, want 3", got)
	}
	// Robust to one wild value: the shift of {10,11,12,13,14} to
	// {20,21,22,23,1000} is 10 by HL, though the means differ by 201.
	if got := HodgesLehmann([]float64{10, 11, 12, 13, 14}, []float64{20, 21, 22, 23, 1000}); got != 10 {
		t.Errorf("HL = %v, want 10", got)
	}
	c := Compare("m", "B", "A", []float64{10, 11, 12, 13, 14}, []float64{20, 21, 22, 23, 1000}, 0.05)
	if c.Delta != 10 || !near(c.DeltaPercent, 100*10.0/12, 1e-9) {
		t.Errorf("delta %v (%v%%)", c.Delta, c.DeltaPercent)
	}
}

func TestNotSignificantAboveAlpha(t *testing.T) {
	c := Compare("m", "B", "A", []float64{1, 2, 3, 4, 6}, []float64{5, 7, 8, 9, 10}, 0.01)
	if c.Significant || FormatDelta(c) != "~" {
		t.Errorf("p=%.4f at α=0.01: significant=%v delta=%q, want ~", c.P, c.Significant, FormatDelta(c))
	}
	c.Alpha = 0.05
	c.Significant = c.P <= c.Alpha
	if FormatDelta(c) == "~" {
		t.Errorf("p=%.4f at α=0.05 should show a delta", c.P)
	}
}

func TestSmallSamplesWarn(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5}, 0.95)
	if s.MedianCI {
		t.Error("n=5 has no finite 95% CI of the median")
	}
	if s6 := Summarize([]float64{1, 2, 3, 4, 5, 6}, 0.95); !s6.MedianCI {
		t.Error("n=6 has one")
	}
	if s.Median != 3 || s.Min != 1 || s.Max != 5 || s.Mean != 3 {
		t.Errorf("summary %+v", s)
	}
	// t(0.975, 4) = 2.776; sd = 1.5811; half-width = 2.776·1.5811/√5 = 1.963.
	if !near(s.MeanHi-s.Mean, 1.963, 0.001) {
		t.Errorf("mean CI half-width %v, want 1.963", s.MeanHi-s.Mean)
	}
	w := sampleWarnings("availability", "D", s)
	if len(w) == 0 || w[0].Text != "need >= 6 trials for a 95% confidence interval of the median; min–max shown" {
		t.Errorf("warnings %v", w)
	}
	if MinP(5, 5) != 2.0/252 || MinP(3, 3) != 0.1 {
		t.Errorf("MinP(5,5)=%v MinP(3,3)=%v", MinP(5, 5), MinP(3, 3))
	}
}

func TestDownsampleKeepsPeaks(t *testing.T) {
	var pts [][2]float64
	for i := range 3600 {
		y := float64(i % 7)
		switch i {
		case 1234:
			y = 1000 // one-second spike
		case 2345:
			y = -50 // one-second dip
		}
		pts = append(pts, [2]float64{float64(i), y})
	}
	out := downsample(pts, 800)
	if len(out) > 800 {
		t.Fatalf("%d points, want at most 800", len(out))
	}
	var hi, lo float64
	for i, p := range out {
		hi, lo = max(hi, p[1]), min(lo, p[1])
		if i > 0 && p[0] < out[i-1][0] {
			t.Fatalf("x goes backwards at %d", i)
		}
	}
	if hi != 1000 || lo != -50 {
		t.Errorf("peak %v and trough %v, want 1000 and -50 kept", hi, lo)
	}
	if short := pts[:100]; len(downsample(short, 800)) != 100 {
		t.Error("a short series must be kept whole")
	}
}
