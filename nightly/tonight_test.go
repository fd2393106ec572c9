package nightly

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/history"
)

// storeOf writes nights of arm D's trial values of each metric (nights[m][n]
// is night n's values of m) into a fresh SQLite history.
func storeOf(t *testing.T, nights map[string][][]float64) history.Store {
	t.Helper()
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	count := 0
	for _, ns := range nights {
		count = max(count, len(ns))
	}
	for n := range count {
		r := history.Run{ID: fmt.Sprintf("night-%02d", n+1), Started: time.Date(2026, 1, 1+n, 2, 0, 0, 0, time.UTC), Workload: "w",
			Arms: []history.Arm{{Name: "D"}}}
		trials := map[int]map[string]float64{}
		for m, ns := range nights {
			for i, v := range ns[n] {
				if trials[i] == nil {
					trials[i] = map[string]float64{}
				}
				trials[i][m] = v
			}
		}
		for i := range len(trials) {
			r.Trials = append(r.Trials, history.Trial{Arm: "D", Index: i, Metrics: trials[i]})
		}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// steady is n nights of three trials spread around level (±3 %), a
// different order each night, then the newest night's values.
func steady(n int, level float64, newest ...float64) [][]float64 {
	var out [][]float64
	for i := range n {
		out = append(out, []float64{level * (1 + 0.01*float64(i%3-1)), level * (1 + 0.03*float64((i+1)%3-1)), level * (1 + 0.02*float64((i+2)%3-1))})
	}
	if len(newest) > 0 {
		out = append(out, newest)
	}
	return out
}

func TestTonightFailsTheNightOfARegression(t *testing.T) {
	ctx := context.Background()
	// Peak RSS (lower is better) 30 % up tonight; availability (higher is
	// better) unchanged.
	st := storeOf(t, map[string][][]float64{
		"rss_peak_bytes": steady(10, 1e9, 1.30e9, 1.31e9, 1.29e9),
		"availability":   steady(10, 0.9, 0.9, 0.91, 0.89),
	})
	res, err := Detect(ctx, st, DetectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Regressed() || res.RecentChangeRegressed() {
		t.Fatalf("Regressed %v, change point regressed %v; want tonight's check alone to fail the night: %+v", res.Regressed(), res.RecentChangeRegressed(), res.Tonight)
	}
	if res.Tonight.Tested != 2 || len(res.Tonight.Findings) != 1 {
		t.Fatalf("tested %d pairs, %d findings; want 2 and 1: %+v", res.Tonight.Tested, len(res.Tonight.Findings), res.Tonight)
	}
	f := res.Tonight.Findings[0]
	if f.Check != CheckTonight || f.Metric != "rss_peak_bytes" || f.Arm != "D" || f.RunID != "night-11" || f.Night != 11 {
		t.Errorf("finding %+v; want tonight's check on rss_peak_bytes of D at night-11", f)
	}
	if math.Abs(f.Shift-0.3e9) > 0.04e9 || math.Abs(f.Median-1.30e9) > 1 || math.Abs(f.BaselineMedian-1e9) > 0.02e9 {
		t.Errorf("shift %g, median %g, baseline median %g; want ≈ 0.3e9, 1.3e9, 1e9", f.Shift, f.Median, f.BaselineMedian)
	}
	// Three trials above all 21 of the baseline: the smallest p there is.
	if want := 1.0 / 2024; math.Abs(f.P-want) > 1e-9 || f.Trials != 3 || f.BaselineTrials != 21 {
		t.Errorf("p %g with %d vs %d trials; want %g with 3 vs 21", f.P, f.Trials, f.BaselineTrials, want)
	}
	if want := []string{"night-04", "night-05", "night-06", "night-07", "night-08", "night-09", "night-10"}; !slices.Equal(f.BaselineNights, want) {
		t.Errorf("baseline nights %v, want %v", f.BaselineNights, want)
	}
	var b strings.Builder
	if err := WriteText(&b, res, 1, false); err != nil {
		t.Fatal(err)
	}
	// The heading folds at 80 columns: read it as words.
	if out := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(out, "1 of 2 pairs regressed") || !strings.Contains(out, "+30.0%") {
		t.Errorf("text output does not name tonight's finding:\n%s", out)
	}
	b.Reset()
	if err := WriteText(&b, res, 1, true); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "tonight  ") || !strings.Contains(out, "night-04 … night-10 (7)") {
		t.Errorf("wide text output lacks the check and the baseline nights of tonight's finding:\n%s", out)
	}
	b.Reset()
	if err := WriteJSON(&b, res); err != nil || !strings.Contains(b.String(), `"check": "tonight"`) || !strings.Contains(b.String(), `"regressed": true`) {
		t.Errorf("JSON (%v):\n%s", err, b.String())
	}
}

func TestTonightIgnoresImprovementsSmallShiftsAndFlatMetrics(t *testing.T) {
	ctx := context.Background()
	st := storeOf(t, map[string][][]float64{
		"rss_peak_bytes": steady(10, 1e9, 0.7e9, 0.71e9, 0.69e9), // better, not worse
		"availability":   steady(10, 0.9, 0.87, 0.87, 0.87),      // worse at p 1/2024 but by ≈ 3 % only
		"failovers":      steady(10, 0, 0, 0, 0),                 // every value equal: not in the family
	})
	res, err := Detect(ctx, st, DetectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Regressed() || res.Tonight.Tested != 2 {
		t.Errorf("regressed %v, %d pairs tested; want no finding over 2 pairs: %+v", res.Regressed(), res.Tonight.Tested, res.Tonight)
	}
	// With no minimum size, the 3 % drop fails the night.
	res, err = Detect(ctx, st, DetectOptions{Tonight: TonightOptions{MinShift: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tonight.Findings) != 1 || res.Tonight.Findings[0].Metric != "availability" {
		t.Errorf("without a minimum shift: %+v; want availability alone", res.Tonight.Findings)
	}
	res, err = Detect(ctx, st, DetectOptions{Tonight: TonightOptions{Off: true}})
	if err != nil || res.Regressed() || res.Tonight.RunID != "" {
		t.Errorf("check off: %v %+v", err, res.Tonight)
	}
}

// The baseline holds only nights after the latest change point, so a past
// step is neither a baseline for tonight nor news tonight.
func TestTonightBaselineStartsAfterTheLatestChangePoint(t *testing.T) {
	nights := append(steady(6, 100), steady(5, 200)...)
	nights = append(nights, []float64{201, 203, 199})
	ids := make([]string, len(nights))
	at := make([]time.Time, len(nights))
	for i := range ids {
		ids[i] = fmt.Sprint("n", i)
	}
	one := segmentation{seg: make([]int, len(nights)), at: []boundary{{first: true}}, first: []int{0}, prev: []int{-1}}
	f, ok, _ := tonightOf("rss_peak_bytes", "D", nights, ids, at, one, [][]int{{6}}, 7)
	if !ok || f.BaselineTrials != 15 || f.BaselineNights[0] != "n6" || f.P < 0.1 {
		t.Fatalf("ok %v, baseline %v (%d trials), p %g; want the 5 nights after the change and no evidence", ok, f.BaselineNights, f.BaselineTrials, f.P)
	}
	// Without the change point the old nights would make tonight look worse.
	stable := f.P
	f, _, _ = tonightOf("rss_peak_bytes", "D", nights, ids, at, one, [][]int{nil}, 11)
	if f.BaselineTrials != 33 || f.P >= 0.05 || f.P > stable/2 {
		t.Errorf("no change point: %d baseline trials, p %g; want 33 and p below 0.05 and half the stable baseline's %g", f.BaselineTrials, f.P, stable)
	}
}

// Holm's step-down splits alpha over the family: a p that passes among
// ten pairs does not among a hundred.
func TestHolmHoldsTheFamilyWiseLevel(t *testing.T) {
	fam := func(n int) []Finding {
		out := []Finding{{Metric: "rss_peak_bytes", Arm: "D", Shift: 1, Relative: 0.5, P: 0.001}}
		for i := 1; i < n; i++ {
			out = append(out, Finding{Metric: "rss_peak_bytes", Arm: fmt.Sprint("X", i), Shift: 1, Relative: 0.5, P: 0.2 + 0.001*float64(i)})
		}
		return out
	}
	if got := holm(fam(10), 0.05, 0.05); len(got) != 1 || got[0].Threshold != 0.005 {
		t.Errorf("family of 10: %+v; want the p 0.001 pair at threshold 0.005", got)
	}
	if got := holm(fam(100), 0.05, 0.05); len(got) != 0 {
		t.Errorf("family of 100: %+v; want nothing (threshold 0.0005)", got)
	}
	// Step-down: the second smallest p is held to alpha/(m-1).
	two := []Finding{{Metric: "availability", Arm: "A", Shift: -1, Relative: 1, P: 0.02}, {Metric: "availability", Arm: "B", Shift: -1, Relative: 1, P: 0.01}}
	if got := holm(two, 0.05, 0.05); len(got) != 2 || got[0].Arm != "B" || got[1].Threshold != 0.05 {
		t.Errorf("two pairs: %+v; want both, B first, the second at 0.05", got)
	}
}
