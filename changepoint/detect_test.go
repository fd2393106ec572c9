package changepoint

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/qmlsab/qmlsab/internal/race"
)

func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func indices(cps []ChangePoint) []int {
	out := make([]int, len(cps))
	for i, c := range cps {
		out[i] = c.Index
	}
	return out
}

// TestMongoDBDetectionCases runs the series of MongoDB's detection tests
// (p 0.01, 100 permutations) and checks the indices and q̂ they expect. Their
// p-values are 0 there because their p-value has no +1; here the smallest
// possible one, 1/101, is expected, except in "regression and recovery".
// There the split at 33 is found first, and about 1.7 % of shuffles reach its
// q̂ (measured with 10,000): a true p-value above 0.01, which MongoDB's run
// passes only because none of its 100 shuffles happened to reach it. That
// case runs at p 0.05, where the first two change points found are
// MongoDB's two and a third (30, p ≈ 0.04) follows.
func TestMongoDBDetectionCases(t *testing.T) {
	type want struct {
		index int
		qhat  float64 // 0: not stated
	}
	withAt := func(s []float64, v float64, at ...int) []float64 {
		for _, i := range at {
			s[i] = v
		}
		return s
	}
	setRange := func(s []float64, from, to int, v float64) []float64 {
		for i := from; i < to; i++ {
			s[i] = v
		}
		return s
	}
	noisy := []float64{
		41, 18, 23, 3, 32, 11, 40, 13, 29, 48, 47, 35, 18, 21, 6, 2, 23, 3, 4, 7,
		120, 103, 102, 81, 71, 62, 115, 61, 108, 63, 70, 98, 65, 96, 64, 74, 70, 113, 90, 114,
		208, 196, 153, 150, 225, 179, 206, 165, 177, 151, 218, 217, 244, 245, 229, 195, 225, 229, 176, 250,
	}
	// want is in index order; the first case also states the order of
	// discovery (40 first), checked through Order.
	cases := []struct {
		name   string
		series []float64
		want   []want
	}{
		{"random-ish data", noisy, []want{{20, 893.578947368421}, {40, 2848.1169590643276}}},
		{"simple regression", setRange(fill(30, 50), 15, 30, 100), []want{{15, 0}}},
		{"ahead", append(append(fill(14, 50), 74), fill(15, 100)...), []want{{15, 0}}},
		{"behind", withAt(setRange(fill(30, 50), 15, 30, 100), 76, 14), []want{{14, 0}}},
		{"simple regression 2", withAt(setRange(fill(30, 50), 15, 30, 100), 100, 2), []want{{15, 649.9999999999999}}},
		{"regression and recovery", withAt(setRange(fill(45, 50), 15, 30, 100), 100, 2, 32), []want{{15, 544.7415329768271}, {33, 226.66666666666674}}},
		{"two regressions", withAt(setRange(setRange(fill(45, 50), 15, 30, 100), 30, 45, 150), 100, 2), []want{{15, 649.9999999999999}, {30, 1209.1954022988505}}},
		{"no regression", fill(30, 50), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, minSeg := range []int{1, 2} {
				p := 0.01
				if tc.name == "regression and recovery" {
					p = 0.05
				}
				cps, err := Detect(tc.series, Options{PValue: p, MinSegment: minSeg})
				if err != nil {
					t.Fatal(err)
				}
				if p != 0.01 {
					// Keep the change points found first, as many as expected.
					cps = slices.DeleteFunc(cps, func(c ChangePoint) bool { return c.Order > len(tc.want) })
				}
				if len(cps) != len(tc.want) {
					t.Fatalf("MinSegment %d: got %+v, want indices %v", minSeg, cps, tc.want)
				}
				for i, w := range tc.want {
					c := cps[i]
					if c.Index != w.index {
						t.Errorf("MinSegment %d: change point %d at %d, want %d", minSeg, i+1, c.Index, w.index)
					}
					if w.qhat != 0 && relErr(c.QHat, w.qhat) > 1e-9 {
						t.Errorf("MinSegment %d: change point %d q̂ %.13g, want %.13g", minSeg, i+1, c.QHat, w.qhat)
					}
					if c.PValue != 1.0/101 && p == 0.01 {
						t.Errorf("MinSegment %d: change point %d p-value %v, want 1/101", minSeg, i+1, c.PValue)
					}
				}
				if tc.name == "random-ish data" && cps[1].Order != 1 {
					t.Errorf("MinSegment %d: 40 found second, want first", minSeg)
				}
			}
		})
	}
}

// TestMongoDBTwoLevelSanity: n zeros then n ones has its one change point at
// n, for n from 4 to 99, with the defaults (MongoDB's default-implementation
// sanity test).
func TestMongoDBTwoLevelSanity(t *testing.T) {
	for n := 4; n < 100; n++ {
		s := append(fill(n, 0), fill(n, 1)...)
		cps, err := Detect(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(indices(cps), []int{n}) {
			t.Errorf("n=%d: got %+v, want [%d]", n, cps, n)
		}
	}
}

// TestRobustSeriesDetection pins this package's result on the fixture
// series (MongoDB's tests state none): the level rises at 25, falls back in
// two steps at 64 and 69, and rises again at 114, the fixture's best split.
func TestRobustSeriesDetection(t *testing.T) {
	series := loadJSON(t, "robust_series.json")
	cps, err := Detect(series, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", cps)
	if got, want := indices(cps), []int{25, 64, 69, 114}; !reflect.DeepEqual(got, want) {
		t.Fatalf("change points at %v, want %v", got, want)
	}
	for _, c := range cps {
		if c.Order == 1 && c.Index != 114 {
			t.Errorf("first change point at %d, want 114", c.Index)
		}
		if c.PValue != 1.0/101 {
			t.Errorf("change point %d p-value %v, want 1/101", c.Index, c.PValue)
		}
	}
	// Each q̂ is the one QHat gives inside the segment that was split.
	bounds := []int{0, len(series)}
	byOrder := slices.Clone(cps)
	slices.SortFunc(byOrder, func(a, b ChangePoint) int { return a.Order - b.Order })
	for _, c := range byOrder {
		i, _ := slices.BinarySearch(bounds, c.Index)
		lo, hi := bounds[i-1], bounds[i]
		if q := QHat(series[lo:hi], 2)[c.Index-lo]; relErr(c.QHat, q) > 1e-9 {
			t.Errorf("change point %d: q̂ %v, QHat of [%d,%d) gives %v", c.Index, c.QHat, lo, hi, q)
		}
		bounds = slices.Insert(bounds, i, c.Index)
	}
}

// nights returns count nights of perNight samples: N(0,1) noise around 100,
// plus shift from night shiftAt on, plus a per-night offset N(0, nightSD²).
func nights(seed uint64, count, perNight, shiftAt int, shift, nightSD float64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0xC0FFEE))
	g := make([][]float64, count)
	for i := range g {
		level := 100 + nightSD*rng.NormFloat64()
		if i >= shiftAt {
			level += shift
		}
		g[i] = make([]float64, perNight)
		for j := range g[i] {
			g[i][j] = level + rng.NormFloat64()
		}
	}
	return g
}

// TestStepChange: 24 nights of 5 samples, the mean up 3 noise SDs from the
// 13th night (index 12) on. Every one of 20 series must show a change point
// at boundary 12±1.
func TestStepChange(t *testing.T) {
	extra := 0
	for seed := uint64(1); seed <= 20; seed++ {
		cps, err := DetectGroups(nights(seed, 24, 5, 12, 3, 0), Options{})
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, c := range cps {
			if c.Index >= 11 && c.Index <= 13 {
				hit = true
			} else {
				extra++
			}
		}
		if !hit {
			t.Errorf("seed %d: %+v, want a change point at 12±1", seed, cps)
		}
		if seed == 1 {
			t.Logf("seed 1: %+v", cps)
		}
	}
	t.Logf("20 series with a step at 12: all found; %d change points elsewhere", extra)
	if extra > 2 {
		t.Errorf("%d change points away from the step in 20 series, want at most 2", extra)
	}
}

// TestFalsePositives: 20 series of 24 unchanged nights (5 samples, normal
// noise). At p 0.05 at most one may show a change point.
func TestFalsePositives(t *testing.T) {
	flagged := 0
	for seed := uint64(1); seed <= 20; seed++ {
		cps, err := DetectGroups(nights(seed, 24, 5, 24, 0, 0), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) > 0 {
			flagged++
			t.Logf("seed %d: %+v", seed, cps)
		}
	}
	t.Logf("%d of 20 unchanged series flagged", flagged)
	if flagged > 1 {
		t.Errorf("%d of 20 unchanged series flagged, want at most 1", flagged)
	}
}

// TestFalsePositiveRate measures the rate on 2000 unchanged series, for
// nights of 5 samples and for single values. The test is exact under
// exchangeability, so the rate should be 5/101 ≈ 4.95 %; the bound allows
// three standard errors.
func TestFalsePositiveRate(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("4000 detections, statistics only")
	}
	for _, perNight := range []int{5, 1} {
		const n = 2000
		flagged := 0
		for seed := uint64(1); seed <= n; seed++ {
			g := nights(seed+1e6, 24, perNight, 24, 0, 0)
			var cps []ChangePoint
			var err error
			if perNight == 1 {
				cps, err = Detect(flatten(g), Options{})
			} else {
				cps, err = DetectGroups(g, Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cps) > 0 {
				flagged++
			}
		}
		rate := float64(flagged) / n
		t.Logf("%d samples per night: %d of %d unchanged series flagged (%.2f %%)", perNight, flagged, n, 100*rate)
		if rate > 0.065 {
			t.Errorf("false-positive rate %.3f, want about 0.05", rate)
		}
	}
}

// TestWholeNightPermutation: when each night has its own offset (as real
// nights do: build, machine, data), shuffling single samples mistakes that
// for change, shuffling nights does not.
func TestWholeNightPermutation(t *testing.T) {
	const n = 40
	byNight, bySample := 0, 0
	for seed := uint64(1); seed <= n; seed++ {
		g := nights(seed+500, 24, 5, 24, 0, 1)
		cps, err := DetectGroups(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) > 0 {
			byNight++
		}
		if cps, _ := Detect(flatten(g), Options{}); len(cps) > 0 {
			bySample++
		}
	}
	t.Logf("unchanged series with night-to-night variation flagged: %d of %d shuffling nights, %d of %d shuffling samples", byNight, n, bySample, n)
	if byNight > 5 {
		t.Errorf("%d of %d flagged shuffling nights, want at most 5", byNight, n)
	}
	if bySample < n/4 {
		t.Errorf("only %d of %d flagged shuffling samples; the contrast this test documents is gone", bySample, n)
	}
}

func TestDeterminism(t *testing.T) {
	series := loadJSON(t, "robust_series.json")
	groups := nights(3, 60, 5, 30, 0.8, 0)
	var first []ChangePoint
	var firstG []ChangePoint
	for i, o := range []Options{{}, {Seed: DefaultSeed}, {Workers: 1}, {Workers: 3}, {Workers: 8}} {
		a, err := Detect(series, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := DetectGroups(groups, o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first, firstG = a, b
			continue
		}
		if !reflect.DeepEqual(a, first) || !reflect.DeepEqual(b, firstG) {
			t.Errorf("options %+v: results differ:\n%+v\n%+v\n%+v\n%+v", o, a, first, b, firstG)
		}
	}
	// Another seed draws other shuffles: a p-value that is not at its floor
	// moves (MongoDB's "regression and recovery" series, change at 33).
	s := fill(45, 50)
	for i := 15; i < 30; i++ {
		s[i] = 100
	}
	s[2], s[32] = 100, 100
	a, _ := Detect(s, Options{})
	b, _ := Detect(s, Options{Seed: 1})
	t.Logf("seed 1234: %+v; seed 1: %+v", a, b)
	at33 := func(cps []ChangePoint) float64 {
		for _, c := range cps {
			if c.Index == 33 {
				return c.PValue
			}
		}
		return -1
	}
	if at33(a) < 0 || at33(b) < 0 || at33(a) == at33(b) {
		t.Errorf("want the p-value at 33 to depend on the seed: %+v vs %+v", a, b)
	}
}

// segmentsOK checks that every segment the change points make holds at
// least minSeg units.
func segmentsOK(t *testing.T, cps []ChangePoint, units, minSeg int) {
	t.Helper()
	if len(cps) == 0 {
		return
	}
	prev := 0
	for _, c := range append(cps, ChangePoint{Index: units}) {
		if c.Index-prev < minSeg {
			t.Errorf("segment [%d,%d) shorter than %d: %+v", prev, c.Index, minSeg, cps)
		}
		prev = c.Index
	}
}

func TestMinSegment(t *testing.T) {
	// Level 0, then 5 from 10, then 9 for the last three values.
	s := make([]float64, 40)
	for i := range s {
		s[i] = 0.1 * math.Sin(float64(i))
		if i >= 10 {
			s[i] += 5
		}
		if i >= 37 {
			s[i] += 4
		}
	}
	for _, minSeg := range []int{1, 2, 3, 4, 5, 11} {
		cps, err := Detect(s, Options{MinSegment: minSeg})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("MinSegment %d: %v", minSeg, indices(cps))
		segmentsOK(t, cps, len(s), minSeg)
		if found := slices.Contains(indices(cps), 10); found != (minSeg <= 10) {
			t.Errorf("MinSegment %d: change at 10 found=%v: %v", minSeg, found, indices(cps))
		}
		if found := slices.Contains(indices(cps), 37); found != (minSeg <= 3) {
			t.Errorf("MinSegment %d: change at 37 found=%v: %v", minSeg, found, indices(cps))
		}
	}
	g := nights(4, 30, 5, 27, 4, 0) // a 4-SD jump in the last three nights
	for _, minSeg := range []int{2, 3, 4, 6} {
		cps, err := DetectGroups(g, Options{MinSegment: minSeg})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("nights, MinSegment %d: %v", minSeg, indices(cps))
		segmentsOK(t, cps, len(g), minSeg)
		if found := slices.Contains(indices(cps), 27); found != (minSeg <= 3) {
			t.Errorf("nights, MinSegment %d: %v", minSeg, indices(cps))
		}
	}
}

func TestDegenerateInputs(t *testing.T) {
	for _, s := range [][]float64{nil, {}, {1}, {1, 2}, {1, 2, 3}, fill(50, 7), fill(1000, -3)} {
		for _, minSeg := range []int{0, 1, 2} {
			cps, err := Detect(s, Options{MinSegment: minSeg})
			if err != nil || len(cps) != 0 {
				t.Errorf("Detect(%d values, MinSegment %d) = %v, %v; want none", len(s), minSeg, cps, err)
			}
		}
	}
	for _, g := range [][][]float64{nil, {}, {{1, 2, 3}}, {{1}, {2}}, {{4, 4}, {4}, {4, 4, 4}, {4}}, nights(1, 40, 5, 40, 0, 0)[:3]} {
		cps, err := DetectGroups(g, Options{})
		if err != nil || len(cps) != 0 {
			t.Errorf("DetectGroups(%v) = %v, %v; want none", g, cps, err)
		}
	}
	constant := make([][]float64, 30)
	for i := range constant {
		constant[i] = fill(5, 12.5)
	}
	if cps, err := DetectGroups(constant, Options{}); err != nil || len(cps) != 0 {
		t.Errorf("constant nights: %v, %v", cps, err)
	}
	for _, bad := range [][]float64{{1, math.NaN(), 3}, {math.Inf(1), 1, 2}} {
		if _, err := Detect(bad, Options{}); err == nil {
			t.Errorf("Detect(%v) accepted", bad)
		}
		if _, err := DetectGroups([][]float64{{1, 2}, bad}, Options{}); err == nil {
			t.Errorf("DetectGroups with %v accepted", bad)
		}
	}
	if _, err := DetectGroups([][]float64{{1, 2}, {}, {3}}, Options{}); err == nil {
		t.Error("DetectGroups with an empty night accepted")
	}
	for _, o := range []Options{
		{PValue: -0.1}, {PValue: 1}, {PValue: math.NaN()}, {Permutations: -1},
		{Permutations: 10}, // 1/11 > 0.05
		{MinSegment: -1}, {Workers: -2},
	} {
		if _, err := Detect([]float64{1, 2, 3, 4, 5}, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// FuzzDetect: whatever the values, detection neither panics nor breaks its
// guarantees.
func FuzzDetect(f *testing.F) {
	f.Add([]byte{}, uint8(2), uint8(1))
	f.Add([]byte{1, 1, 1, 1, 9, 9, 9, 9, 1, 1}, uint8(1), uint8(3))
	f.Add([]byte{0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255}, uint8(3), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, minSeg, perNight uint8) {
		if len(data) > 600 {
			data = data[:600]
		}
		s := make([]float64, len(data))
		for i, b := range data {
			s[i] = float64(b) * 1e3
		}
		o := Options{MinSegment: int(minSeg%5) + 1, Permutations: 39}
		cps, err := Detect(s, o)
		if err != nil {
			t.Fatal(err)
		}
		check := func(cps []ChangePoint, units int) {
			segmentsOK(t, cps, units, o.MinSegment)
			for i, c := range cps {
				if i > 0 && c.Index <= cps[i-1].Index {
					t.Fatalf("not ordered: %+v", cps)
				}
				if !(c.QHat > 0) || !(c.PValue > 0 && c.PValue <= 0.05) || c.Order < 1 || c.Order > len(cps) {
					t.Fatalf("bad change point %+v", c)
				}
			}
		}
		check(cps, len(s))
		k := int(perNight%4) + 1
		var g [][]float64
		for i := 0; i+k <= len(s); i += k {
			g = append(g, s[i:i+k])
		}
		cps, err = DetectGroups(g, o)
		if err != nil {
			t.Fatal(err)
		}
		check(cps, len(g))
	})
}

// TestGroupPathsAgree: the night-matrix computation and the sample-level one
// give the same detections.
func TestGroupPathsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		g := nights(seed, 40, 1+int(seed), 20, 1.2, 0.3)
		a, err := DetectGroups(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		saved := maxMatrixUnits
		maxMatrixUnits = 0
		b, err := DetectGroups(g, Options{})
		maxMatrixUnits = saved
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("seed %d: matrix %+v, samples %+v; want the same, non-empty", seed, a, b)
		}
		for i := range a {
			if a[i].Index != b[i].Index || a[i].PValue != b[i].PValue || a[i].Order != b[i].Order || relErr(b[i].QHat, a[i].QHat) > 1e-9 {
				t.Errorf("seed %d: matrix %+v, samples %+v", seed, a[i], b[i])
			}
		}
	}
}
