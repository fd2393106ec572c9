package changepoint

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func loadJSON(t *testing.T, name string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v []float64
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// relErr is |got−want| relative to |want|, or absolute when want is 0.
func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// naiveQ is q̂ straight from its definition, O(n²) per split.
func naiveQ(x, y []float64) float64 {
	m, n := float64(len(x)), float64(len(y))
	var cross, wx, wy float64
	for _, a := range x {
		for _, b := range y {
			cross += math.Abs(a - b)
		}
	}
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			wx += math.Abs(x[i] - x[j])
		}
	}
	for i := range y {
		for j := i + 1; j < len(y); j++ {
			wy += math.Abs(y[i] - y[j])
		}
	}
	e := 2 * cross / (m * n)
	if len(x) > 1 {
		e -= 2 * wx / (m * (m - 1))
	}
	if len(y) > 1 {
		e -= 2 * wy / (n * (n - 1))
	}
	return m * n / (m + n) * e
}

func TestQHatMatchesMongoDBCurrentFixture(t *testing.T) {
	series := loadJSON(t, "robust_series.json")
	want := loadJSON(t, "expected_result_robust_series_proper_division.json")
	if len(series) != 173 || len(want) != len(series) {
		t.Fatalf("fixture lengths %d and %d, want 173", len(series), len(want))
	}
	got := QHat(series, 1)
	worst := 0.0
	for i := range want {
		e := relErr(got[i], want[i])
		if e > 1e-6 {
			t.Errorf("q̂[%d] = %.10g, want %.10g (relative error %.2g)", i, got[i], want[i], e)
		}
		worst = max(worst, e)
	}
	t.Logf("173 indices, largest relative error %.2g", worst)
	if argmax(got) != 114 {
		t.Errorf("best split at %d, want 114", argmax(got))
	}
}

func TestQHatMatchesMongoDBLegacyFixture(t *testing.T) {
	series := loadJSON(t, "robust_series.json")
	want := loadJSON(t, "expected_result_robust_series.json")
	if len(want) != len(series) {
		t.Fatalf("fixture lengths %d and %d", len(series), len(want))
	}
	N := len(series)
	got := QHat(series, 2)
	for _, i := range []int{0, 1, N - 1} {
		if got[i] != 0 || want[i] != 0 {
			t.Errorf("index %d: got %v, fixture %v, both should be 0", i, got[i], want[i])
		}
	}
	worst := 0.0
	for i := 2; i <= N-3; i++ {
		m, n := float64(i), float64(N-i)
		c := m * n / (m + n)
		legacy := got[i] * math.Floor(c) / c // the original floored the coefficient
		e := relErr(legacy, want[i])
		if e > 1e-6 {
			t.Errorf("q̂[%d]·⌊c⌋/c = %.10g, want %.10g (relative error %.2g)", i, legacy, want[i], e)
		}
		worst = max(worst, e)
	}
	t.Logf("indices 2..%d, largest relative error %.2g", N-3, worst)
	if argmax(want) != 115 {
		t.Errorf("legacy best split at %d, want 115", argmax(want))
	}
}

// TestQHatSmallKnownAnswers uses the 12-value series both versions of
// MongoDB's continuity test check.
func TestQHatSmallKnownAnswers(t *testing.T) {
	series := []float64{1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3}
	current := []float64{0, 1.03333333, 2.2962963, 3.875, 5.9047619, 4.33333333, 3.6, 3.41666667, 3.80952381, 5.25, 3.11111111, 1.4}
	legacy := []float64{0, 0, 1.3777777777777778, 3.4444444444444438, 4.428571428571429, 2.971428571428571, 3.599999999999999, 2.342857142857143, 2.857142857142857, 4.666666666666666, 0, 0}
	got := QHat(series, 1)
	for i := range current {
		if e := relErr(got[i], current[i]); e > 1e-7 {
			t.Errorf("q̂[%d] = %v, want %v", i, got[i], current[i])
		}
	}
	N := len(series)
	for i := 2; i <= N-3; i++ {
		m, n := float64(i), float64(N-i)
		c := m * n / (m + n)
		if e := relErr(got[i]*math.Floor(c)/c, legacy[i]); e > 1e-9 {
			t.Errorf("legacy q̂[%d] = %v, want %v", i, got[i]*math.Floor(c)/c, legacy[i])
		}
	}
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func TestQHatAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{2, 3, 4, 5, 9, 31, 64} {
		for _, minSize := range []int{0, 1, 2, 3} {
			x := make([]float64, n)
			for i := range x {
				x[i] = 1e4 + 50*rng.NormFloat64()
				if i > n/2 {
					x[i] += 80
				}
			}
			got := QHat(x, minSize)
			ms := max(minSize, 1)
			for tau := range x {
				want := 0.0
				if tau >= ms && n-tau >= ms {
					want = naiveQ(x[:tau], x[tau:])
				}
				if math.Abs(got[tau]-want) > 1e-9*max(1, math.Abs(want)) {
					t.Errorf("n=%d min=%d τ=%d: got %v, want %v", n, minSize, tau, got[tau], want)
				}
			}
		}
	}
}

func randomGroups(rng *rand.Rand, nights int, sizes func(int) int) [][]float64 {
	g := make([][]float64, nights)
	for i := range g {
		k := sizes(i)
		g[i] = make([]float64, k)
		for j := range g[i] {
			g[i][j] = 100 + rng.NormFloat64() + 0.5*float64(i%3)
		}
	}
	return g
}

// TestGroupQHatAgainstDefinition checks both ways of computing grouped q̂
// (with and without the night-level distance matrix) against the
// definition over the pooled samples.
func TestGroupQHatAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	groups := randomGroups(rng, 17, func(i int) int { return 1 + i%5 })
	for _, matrix := range []bool{true, false} {
		saved := maxMatrixUnits
		if !matrix {
			maxMatrixUnits = 0
		}
		got := GroupQHat(groups, 2)
		maxMatrixUnits = saved
		for b := range groups {
			want := 0.0
			if b >= 2 && len(groups)-b >= 2 {
				want = naiveQ(flatten(groups[:b]), flatten(groups[b:]))
			}
			if math.Abs(got[b]-want) > 1e-9*max(1, math.Abs(want)) {
				t.Errorf("matrix=%v b=%d: got %v, want %v", matrix, b, got[b], want)
			}
		}
	}
}

func flatten(groups [][]float64) []float64 {
	var out []float64
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func TestGroupQHatOfSingletonsIsQHat(t *testing.T) {
	series := loadJSON(t, "robust_series.json")
	groups := make([][]float64, len(series))
	for i, v := range series {
		groups[i] = []float64{v}
	}
	a, b := QHat(series, 3), GroupQHat(groups, 3)
	for i := range a {
		if relErr(b[i], a[i]) > 1e-12 {
			t.Fatalf("index %d: %v vs %v", i, b[i], a[i])
		}
	}
}

func TestQHatDegenerate(t *testing.T) {
	for _, s := range [][]float64{nil, {}, {3}, {5, 5}, {5, 5, 5, 5, 5, 5}} {
		for _, q := range QHat(s, 1) {
			if q != 0 {
				t.Errorf("QHat(%v) has %v, want all zero", s, q)
			}
		}
	}
	if got := QHat([]float64{1, 2}, 1); len(got) != 2 || got[1] != 1 {
		// X={1}, Y={2}: (1·1/2)·(2·1/1) = 1.
		t.Errorf("QHat([1 2]) = %v, want [0 1]", got)
	}
	if got := QHat([]float64{1, 2, 3}, 2); got[1] != 0 || got[2] != 0 {
		t.Errorf("QHat with no admissible split = %v, want zeros", got)
	}
	// Empty nights: no division by zero, zero where a side has no sample.
	got := GroupQHat([][]float64{{}, {1, 2}, {}, {3}}, 1)
	for i, q := range got {
		if math.IsNaN(q) || math.IsInf(q, 0) {
			t.Errorf("GroupQHat with empty nights: element %d is %v", i, q)
		}
	}
	if got[1] != 0 {
		t.Errorf("split with no sample on the left = %v, want 0", got[1])
	}
}
