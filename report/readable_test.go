package report

import (
	"encoding/json"
	"html"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// Every shift is signed, and a p-value three decimals cannot show is
// "p < 0.001", never "p = 0.000". A count's shift (its baseline median 0,
// so no percentage) read "13" for +13: fmt's %+s adds no sign to a string.
func TestDeltasAreSignedAndSmallPValuesAreBounds(t *testing.T) {
	for _, c := range []struct {
		c    Comparison
		want string
	}{
		{Comparison{Metric: metric.Failovers, P: 0.008, Significant: true, Delta: 13, DeltaPercent: math.NaN()}, "+13"},
		{Comparison{Metric: metric.Failovers, P: 0.008, Significant: true, Delta: -2, DeltaPercent: math.NaN()}, "−2"},
		{Comparison{Metric: metric.ServerShedsPerS, P: 0.008, Significant: true, Delta: 2.634, DeltaPercent: math.NaN()}, "+2.63"},
		{Comparison{Metric: metric.RSSPeakBytes, P: 0.008, Significant: true, Delta: -(1 << 30), DeltaPercent: math.NaN()}, "−1 GiB"},
		{Comparison{Metric: metric.Availability, P: 0.008, Significant: true, Delta: -0.6, DeltaPercent: -61.54}, "−61.5 %"},
		{Comparison{Metric: metric.Availability, P: 0.3, Delta: -0.6, DeltaPercent: -61.54}, "~"},
	} {
		if got := FormatDelta(c.c); got != c.want {
			t.Errorf("FormatDelta(%s Δ %g, %g %%) = %q, want %q", c.c.Metric, c.c.Delta, c.c.DeltaPercent, got, c.want)
		}
	}
	for p, want := range map[float64]string{0.0001: "p < 0.001", 0.0004: "p < 0.001", 0.008: "p = 0.008", 0.0005: "p = 0.001", 1: "p = 1.000"} {
		if got := PValue(p); got != want {
			t.Errorf("PValue(%g) = %q, want %q", p, got, want)
		}
	}
	if got := FormatP(Comparison{P: 0.00002, N1: 12, N2: 12}); got != "p < 0.001, n = 12+12" {
		t.Errorf("FormatP = %q", got)
	}
}

// One rule of significant figures for every figure: three, never fewer
// than the whole number's digits, without trailing zeros. The report
// printed 143 beside 43.08 (two decimals below 100, none above).
func TestOneRuleOfSignificantFigures(t *testing.T) {
	for v, want := range map[float64]string{143.2: "143", 43.08: "43.1", 4.308: "4.31", 0.9531: "0.953", 1: "1", 0.0333333: "0.0333",
		5000: "5000", 12345: "12.3k", 2.5e6: "2.5M", -43.08: "-43.1", 0: "0", 99.96: "100"} {
		if got := metric.Number(v); got != want {
			t.Errorf("metric.Number(%g) = %q, want %q", v, got, want)
		}
	}
	if got := metric.Format(metric.CanaryP99Ms, 43.08); got != "43.1 ms" {
		t.Errorf("a latency: %q", got)
	}
}

// rawPage is a report page's chart options, raw.
func rawPage(t *testing.T, page []byte) map[string]map[string]any {
	t.Helper()
	s := string(page)
	i := strings.Index(s, "var options = ")
	var out map[string]map[string]any
	if i < 0 || json.NewDecoder(strings.NewReader(s[i+len("var options = "):])).Decode(&out) != nil {
		t.Fatal("no options in the page")
	}
	return out
}

// colourOf is the colour a series draws in: its own, its items' style's,
// else its chart's palette's i-th.
func colourOf(opt map[string]any, i int) string {
	series := opt["series"].([]any)
	s := series[i].(map[string]any)
	if c, ok := s["color"].(string); ok && c != "" {
		return c
	}
	if st, ok := s["itemStyle"].(map[string]any); ok {
		if c, ok := st["color"].(string); ok && c != "" {
			return c
		}
	}
	palette, _ := opt["color"].([]any)
	if len(palette) == 0 {
		return ""
	}
	return palette[i%len(palette)].(string)
}

// datumColours are the colours a series' items set for themselves.
func datumColours(s map[string]any) []string {
	var out []string
	data, _ := s["data"].([]any)
	for _, d := range data {
		if m, ok := d.(map[string]any); ok {
			if st, ok := m["itemStyle"].(map[string]any); ok {
				if c, ok := st["color"].(string); ok && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// On every chart of a report a colour means one thing: an arm's colour is
// that arm's (its lines, its bars), never a kind of thing's (admitted or
// killed, a stage) on the chart beside it; and a legend shows only
// swatches of the colour its series draw in (a bar series coloured arm by
// arm has no one swatch, so that chart has no legend).
func TestEveryColourMeansOneThingAndEverySwatchItsSeries(t *testing.T) {
	a := analyze(t, fixture(t))
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	trial := regexp.MustCompile(`^(.+)#\d+$`)
	armOf := func(name string) (string, bool) {
		if m := trial.FindStringSubmatch(name); m != nil {
			name = m[1]
		}
		return name, slices.Contains(a.In.Arms, name)
	}
	kinds := 0
	for id, opt := range rawPage(t, page) {
		legendShown := true
		if l, ok := opt["legend"].(map[string]any); !ok || l["show"] == false {
			legendShown = false
		}
		for i, raw := range opt["series"].([]any) {
			s := raw.(map[string]any)
			name, _ := s["name"].(string)
			colour := colourOf(opt, i)
			items := datumColours(s)
			if legendShown && (len(items) > 1 || len(items) == 1 && items[0] != colour) {
				t.Errorf("%s: series %q shows a %s swatch in its legend but draws in %v", id, name, colour, items)
			}
			if arm, ok := armOf(name); ok {
				if want := chart.ArmColor(slices.Index(a.In.Arms, arm)); colour != want {
					t.Errorf("%s: %s draws in %s, not its arm's %s", id, name, colour, want)
				}
				continue
			}
			if len(items) > 0 || colour == chart.Ink {
				continue // coloured item by item (by arm), or the ink of trial points
			}
			kinds++
			if slices.Contains(chart.ArmColors, colour) {
				t.Errorf("%s: series %q, a kind of thing, draws in %s, an arm's colour", id, name, colour)
			}
		}
	}
	if kinds == 0 {
		t.Error("no chart of kinds of thing was checked (departures, stages)")
	}
}

// Under the title, before any table: a sentence per arm against the
// baseline and the arms legend (name, build, description). Every shift in
// the verdict table carries a direction mark and a word, so it reads
// without colour.
func TestVerdictAndLegendComeFirstAndEveryShiftSaysItsDirection(t *testing.T) {
	a := analyze(t, fixture(t))
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := html.UnescapeString(string(page))
	h1, verdicts, legendAt, keyTable := strings.Index(s, "<h1>"), strings.Index(s, `<ul id="verdicts">`), strings.Index(s, `id="arms-legend"`), strings.Index(s, `id="verdict-table"`)
	if h1 < 0 || !(h1 < verdicts && verdicts < legendAt && legendAt < keyTable) {
		t.Errorf("order: title %d, verdicts %d, legend %d, key metrics %d; want them in that order", h1, verdicts, legendAt, keyTable)
	}
	for _, arm := range a.Arms {
		if arm.Name == a.Baseline {
			continue
		}
		li := regexp.MustCompile(`<li class="verdict v-\w+" data-arm="` + regexp.QuoteMeta(arm.Name) + `"><strong>([^<]*)</strong>`).FindStringSubmatch(s)
		if li == nil || !strings.HasPrefix(li[1], arm.Name+" ") || !strings.Contains(li[1], a.Baseline) {
			t.Errorf("no verdict sentence for %s against %s: %v", arm.Name, a.Baseline, li)
		}
	}
	legend := s[legendAt : strings.Index(s[legendAt:], "</table>")+legendAt]
	for _, want := range []string{"base build + killOp actor", "in-server inline shedder", "472d159296b6", "6ab306ad", "(baseline)"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the arms legend lacks %q:\n%s", want, legend)
		}
	}
	deltas := regexp.MustCompile(`<span class="delta (\w+)" title="([^"]*)">([^<]*)</span>`).FindAllStringSubmatch(s, -1)
	if len(deltas) == 0 {
		t.Fatal("the verdict table has no shift")
	}
	words := map[string]string{"better": "▲ ", "worse": "▼ ", "changed": "◆ ", "notjudged": "◇ ", "same": "≈ "}
	for _, d := range deltas {
		mark, ok := words[d[1]]
		word := strings.TrimSuffix(strings.TrimPrefix(d[1], "not"), "judged")
		if d[1] == "notjudged" {
			word = "not judged"
		}
		if d[1] == "same" {
			word = "within noise"
		}
		if !ok || !strings.HasPrefix(d[3], mark) || !strings.Contains(d[3], word) || d[2] == "" {
			t.Errorf("a shift without its direction's mark and word: class %s, %q (title %q)", d[1], d[3], d[2])
		}
	}
	if strings.Contains(s, "p=0.000") || strings.Contains(s, "p = 0.000") {
		t.Error("a p-value reads 0.000")
	}
}

// The gates table lists each arm's own gates only: a gate of another arm
// is no row of "not a gate of arm D".
func TestGatesOfOtherArmsAreNotListed(t *testing.T) {
	a := analyze(t, fixture(t))
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	if strings.Contains(s, "not a gate of arm") {
		t.Error("the page lists gates of other arms")
	}
	table := s[strings.Index(s, `id="gates-table"`):]
	table = table[:strings.Index(table, "</table>")]
	rows := strings.Count(table, "<tr>") - 1
	want := 0
	for _, arm := range a.Arms {
		for _, g := range arm.Gates {
			if !g.NotApplicable {
				want++
			}
		}
	}
	if rows != want || want == 0 {
		t.Errorf("gates table: %d rows, want one per arm's own gate (%d)", rows, want)
	}
}

// A merge_partial_write report's methods are its own: nothing of the
// spill_to_disk storm (open-loop storm ops, the model of E on Atlas M50s)
// and the trial count it has, not "at n = 5".
func TestMethodsAreTheWorkloadsOwn(t *testing.T) {
	in := &Input{Dirs: []string{"run"}, Arms: []string{"E", "G"}, Trials: map[string][]Trial{}, Simulated: true,
		Workload: store.WorkloadHead{Name: "merge_partial_write", Kind: "merge_partial_write", Merge: json.RawMessage(`{"shed_after_batches":1}`)}}
	for _, arm := range in.Arms {
		for i := range 3 {
			in.Trials[arm] = append(in.Trials[arm], Trial{Status: store.Valid, Trial: store.Trial{Arm: arm, Index: i + 1,
				Metrics: map[string]float64{metric.UnsafeSheds: float64(i), metric.MergeOps: 10}}})
		}
	}
	a, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	methods := s[strings.Index(s, `<h2 id="methods">`):strings.Index(s, "<dl>")]
	for _, bad := range []string{"Storm operations arrive open-loop", "Atlas M50s", "at n = 5", "queryMemory.loadShedding", "Queue growth"} {
		if strings.Contains(methods, bad) {
			t.Errorf("the merge workload's methods say %q:\n%s", bad, methods)
		}
	}
	for _, want := range []string{"n = 3 here", "$merge and $out operations", "unsafe"} {
		if !strings.Contains(methods, want) {
			t.Errorf("the merge workload's methods lack %q:\n%s", want, methods)
		}
	}
	// The spill_to_disk report keeps its own.
	storm, err := HTML(analyze(t, fixture(t)), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Storm operations arrive open-loop", "n = 3 here", "Atlas M50s"} {
		if !strings.Contains(string(storm), want) {
			t.Errorf("the storm's methods lack %q", want)
		}
	}
}

// The sharded per-case table is a data table like the others: borders,
// and its text columns aligned left, numbers right.
func TestMergeCaseTableIsADataTable(t *testing.T) {
	tbl := string(mergeCaseTable([]mergeCaseRow{{Case: store.MergeCaseOut, Arm: "E", Ops: 3, Shed: 3, ShedBy: []string{"sh0/m0"}}}))
	if !strings.HasPrefix(tbl, `<table class="data" id="merge-cases">`) {
		t.Errorf("the per-case table is not a data table: %.80s", tbl)
	}
	page, err := HTML(analyze(t, fixture(t)), "test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "#merge-cases td:nth-child(2)") || !strings.Contains(string(page), "#merge-cases td:last-child { text-align: left; }") {
		t.Error("the page does not align the per-case table's text columns left")
	}
}
