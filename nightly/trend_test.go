package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/changepoint"
	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/store"
)

const (
	trendNightsN = 24
	trendStep    = 12 // first night after the step
	evilLabel    = "<script>alert(1)</script>"
	evilID       = "n07-<img src=x onerror=alert(7)>" // night 7's run id
)

// trendHistory is a history of 24 simulated nights, arms A (baseline) and
// B with 5 trials each: B's availability drops from night 12 on, A's does
// not, so B's values and its effect against A both change there. Canary
// p99 is flat for both. Every night carries a label written like markup.
func trendHistory(t *testing.T) (history.Store, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	var ids []string
	for n := range trendNightsN {
		id := fmt.Sprintf("n%02d", n)
		if n == 7 {
			id = evilID
		}
		ids = append(ids, id)
		r := history.Run{ID: id, Started: start.Add(time.Duration(n) * 24 * time.Hour), Workload: "spill-to-disk", Baseline: "A",
			Arms: []history.Arm{{Name: "A", Build: "base"}, {Name: "B", Build: "candidate"}}, Simulated: true,
			Labels: map[string]string{"branch": "master", "note": evilLabel}, Host: history.Host{Name: "ci", TargetKind: "embedded"}}
		level := 0.99
		if n >= trendStep {
			level = 0.90
		}
		var shifts []float64
		for _, arm := range []string{"A", "B"} {
			for i := range 5 {
				av := 0.99 + 0.004*(rng.Float64()-0.5)
				if arm == "B" {
					av = level + 0.004*(rng.Float64()-0.5)
				}
				p99 := 200 + 20*rng.Float64()
				r.Trials = append(r.Trials, history.Trial{Arm: arm, Index: i, Metrics: map[string]float64{"availability": av, "canary_p99_ms": p99}})
			}
		}
		shifts = append(shifts, level-0.99+0.002*(rng.Float64()-0.5))
		r.Effects = []history.Effect{{Arm: "B", Metric: "availability", Shift: shifts[0], P: 0.008},
			{Arm: "B", Metric: "canary_p99_ms", Shift: 5 * (rng.Float64() - 0.5), P: 0.6}}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return st, ids
}

// trendPageData is the page's JSON, as the page's script reads it.
type trendPageData struct {
	Options map[string]struct {
		Series []struct {
			Name     string `json:"name"`
			Data     []any  `json:"data"`
			MarkLine *struct {
				Data []struct {
					XAxis *int `json:"xAxis"`
					Label struct {
						Formatter string `json:"formatter"`
					} `json:"label"`
				} `json:"data"`
			} `json:"markLine"`
		} `json:"series"`
	} `json:"options"`
	Tips   map[string][]string `json:"tips"`
	Nights []string            `json:"nights"`
	Links  [][2]string         `json:"links"`
}

func readTrend(t *testing.T, path string) (string, trendPageData) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	m := regexp.MustCompile(`(?m)^  var d = (.*);$`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no chart data in the page")
	}
	var d trendPageData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	return page, d
}

// changeNights lists the nights a chart marks as change points, with
// their labels.
func changeNights(d trendPageData, chart string) map[int]string {
	out := map[int]string{}
	for _, s := range d.Options[chart].Series {
		if s.MarkLine == nil {
			continue
		}
		for _, it := range s.MarkLine.Data {
			if it.XAxis != nil {
				out[*it.XAxis] = it.Label.Formatter
			}
		}
	}
	return out
}

func TestTrendPage(t *testing.T) {
	st, ids := trendHistory(t)
	root := filepath.Join(t.TempDir(), "results")
	// Two nights have a report beside the page, the evil one among them.
	for _, id := range []string{ids[3], evilID} {
		os.MkdirAll(filepath.Join(root, id), 0o755)
		os.WriteFile(filepath.Join(root, id, "report.html"), []byte("<p>report</p>"), 0o644)
	}
	os.MkdirAll(filepath.Join(root, ids[5]), 0o755) // a run folder without a report: no link
	out := filepath.Join(root, "trend.html")
	// A stricter level than the default keeps the flat series' false
	// positives (5 % each at the default) out of the test.
	opts := TrendOptions{RunsRoot: root, Detect: DetectOptions{ChangePoint: changepoint.Options{PValue: 0.01, Permutations: 199}}}
	if err := WriteTrend(context.Background(), st, out, opts); err != nil {
		t.Fatal(err)
	}
	page, d := readTrend(t, out)
	if !strings.Contains(page, "permutation p ≤ 0.01 (199 permutations") {
		t.Error("the header does not show the change-point options")
	}

	// Default metrics: the key metrics the history holds; every chart has
	// its container, and the baseline has no effect chart.
	want := []string{"trend-availability-0-values", "trend-availability-1-values", "trend-availability-1-effect",
		"trend-canary_p99_ms-0-values", "trend-canary_p99_ms-1-values", "trend-canary_p99_ms-1-effect"}
	var got []string
	for id := range d.Options {
		got = append(got, id)
	}
	slices.Sort(got)
	if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Errorf("charts %v, want %v", got, w)
	}
	for _, id := range want {
		if !strings.Contains(page, `<div class="chart `) || !strings.Contains(page, `data-chart="`+id+`"`) {
			t.Errorf("no container for chart %s", id)
		}
		if n := len(d.Tips[id]); n != trendNightsN {
			t.Errorf("chart %s has %d tooltips, want one per night (%d)", id, n, trendNightsN)
		}
		for _, s := range d.Options[id].Series {
			if len(s.Data) != trendNightsN {
				t.Errorf("chart %s series %s has %d points, want %d", id, s.Name, len(s.Data), trendNightsN)
			}
		}
	}
	for _, table := range []string{`id="trend-availability-table"`, `id="trend-canary_p99_ms-table"`} {
		if !strings.Contains(page, table) {
			t.Errorf("no table %s", table)
		}
	}
	if !slices.Equal(d.Nights, ids) {
		t.Errorf("x axis nights %v, want %v", d.Nights, ids)
	}

	// The band: min and span stacked, median on top, at a night before the step.
	av := d.Options["trend-availability-1-values"].Series
	if len(av) != 3 || av[0].Name != "min" || av[1].Name != "min–max" || av[2].Name != "median" {
		t.Fatalf("values chart series: %+v", av)
	}
	lo, span, med := av[0].Data[0].(float64), av[1].Data[0].(float64), av[2].Data[0].(float64)
	if !(lo <= med && med <= lo+span && span > 0 && span < 0.005 && med > 0.98) {
		t.Errorf("night 0 band: min %v span %v median %v", lo, span, med)
	}

	// B's step is marked at night 12, in its values and in its effect, as
	// a regression of availability; A and the flat metric have none.
	for _, chart := range []string{"trend-availability-1-values", "trend-availability-1-effect"} {
		cn := changeNights(d, chart)
		if len(cn) != 1 || !strings.Contains(cn[trendStep], "regression p=") {
			t.Errorf("%s change points %v, want one regression at night %d", chart, cn, trendStep)
		}
	}
	for _, chart := range []string{"trend-availability-0-values", "trend-canary_p99_ms-0-values", "trend-canary_p99_ms-1-values"} {
		if cn := changeNights(d, chart); len(cn) != 0 {
			t.Errorf("%s marks change points %v on a flat series", chart, cn)
		}
	}
	row := regexp.MustCompile(`(?s)<tr><td>13</td>.*?</tr>`).FindString(page)
	if !strings.Contains(row, "change point, values: regression") || !strings.Contains(row, "change point, effect: regression") {
		t.Errorf("the table does not mark night 13's change points:\n%s", row)
	}

	// Links: only the two nights with a report, relative, escaped.
	wantLinks := [][2]string{{ids[3], "./n03/report.html"}, {evilID, "./n07-%3Cimg%20src=x%20onerror=alert%287%29%3E/report.html"}}
	if !slices.Equal(d.Links, wantLinks) {
		t.Errorf("links %q, want %q", d.Links, wantLinks)
	}
	hrefs := regexp.MustCompile(`<a href="([^"]*)"`).FindAllStringSubmatch(page, -1)
	seen := map[string]int{}
	for _, h := range hrefs {
		seen[h[1]]++
	}
	if len(seen) != 2 || seen["./n03/report.html"] != 2 || seen["./n07-%3Cimg%20src=x%20onerror=alert%287%29%3E/report.html"] != 2 {
		t.Errorf("table links %v, want the 2 reachable nights in each of the 2 tables", seen)
	}

	// User strings are text, never markup.
	for _, raw := range []string{evilLabel, "<img src=x", "</script>alert"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page carries %q raw", raw)
		}
	}
	if !strings.Contains(page, "note=&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the label is not shown escaped in the header")
	}
	if !strings.Contains(page, "n07-&lt;img src=x onerror=alert(7)&gt;</a>") {
		t.Error("the evil run id is not shown escaped in the table")
	}
	if !strings.Contains(page, `"n07-\u003cimg src=x onerror=alert(7)\u003e"`) {
		t.Error("the evil run id is not escaped in the chart data")
	}

	// Simulated nights say so: banner, title, charts, rows.
	if !strings.Contains(page, `<div class="banner" id="simulated">SIMULATED — 24 of 24 nights`) {
		t.Error("no SIMULATED banner")
	}
	if !strings.Contains(page, "<title>qmlsab trend: spill-to-disk (SIMULATED)</title>") {
		t.Error("the title does not say SIMULATED")
	}
	if n := strings.Count(page, `<span class="sim">SIMULATED</span>`); n != 2*trendNightsN {
		t.Errorf("%d table rows say SIMULATED, want %d", n, 2*trendNightsN)
	}
	if !strings.Contains(page, `(SIMULATED)","textStyle"`) {
		t.Error("chart titles do not say SIMULATED")
	}

	// Self-contained, and written atomically (no temporary file left).
	if strings.Contains(strings.ToLower(page), "<script src") || !strings.Contains(page, "echarts") {
		t.Error("the page is not self-contained")
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if strings.Contains(page, "fewer than 2") {
		t.Error("a footnote says a series is too short, but every series has 24 nights")
	}
}

// A page in another folder links up to the run folders.
func TestTrendLinksFromAnotherFolder(t *testing.T) {
	st, ids := trendHistory(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "results")
	os.MkdirAll(filepath.Join(root, ids[20]), 0o755)
	os.WriteFile(filepath.Join(root, ids[20], "report.html"), nil, 0o644)
	// A night whose manifest records its run id is found in whatever
	// folder holds it (a merged run is in "merged" every night).
	merged := filepath.Join(root, "merged")
	os.MkdirAll(merged, 0o755)
	os.WriteFile(filepath.Join(merged, "report.html"), nil, 0o644)
	if err := store.WriteJSON(filepath.Join(merged, store.ManifestFile), store.Manifest{Schema: store.ManifestSchema, RunID: ids[21]}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "site", "nightly", "trend.html")
	if err := WriteTrend(context.Background(), st, out, TrendOptions{RunsRoot: root, Metrics: []string{"availability"}, Arms: []string{"B"}}); err != nil {
		t.Fatal(err)
	}
	_, d := readTrend(t, out)
	if want := [][2]string{{ids[20], "../../results/n20/report.html"}, {ids[21], "../../results/merged/report.html"}}; !slices.Equal(d.Links, want) {
		t.Errorf("links %q, want %q", d.Links, want)
	}
	if len(d.Options) != 2 {
		t.Errorf("charts %d, want B's values and effect only", len(d.Options))
	}
}

// One night: charts still draw, a footnote says there is nothing to detect.
func TestTrendFootnoteForShortSeries(t *testing.T) {
	st, _ := trendHistory(t)
	out := filepath.Join(t.TempDir(), "trend.html")
	opts := TrendOptions{Metrics: []string{"availability"}, Filter: history.Filter{Last: 1, Labels: map[string]string{"branch": "master"}}}
	if err := WriteTrend(context.Background(), st, out, opts); err != nil {
		t.Fatal(err)
	}
	page, d := readTrend(t, out)
	if len(d.Nights) != 1 || len(d.Options) != 3 {
		t.Fatalf("%d nights, %d charts; want 1 night, 3 charts", len(d.Nights), len(d.Options))
	}
	for _, note := range []string{"availability of A: 1 night with values, fewer than 2", "availability of B: 1 night with values, fewer than 2",
		"Effect of B vs A on availability: 1 night, fewer than 2"} {
		if !strings.Contains(page, note) {
			t.Errorf("no footnote %q", note)
		}
	}
	if !strings.Contains(page, "labels branch=master; last 1 nights") {
		t.Error("the header does not show the filter")
	}
	if len(d.Links) != 0 || strings.Contains(page, "<a href") {
		t.Error("a night is linked with no RunsRoot")
	}
}

// A history of real nights has no SIMULATED label anywhere; an empty
// selection still writes a page.
func TestTrendRealAndEmpty(t *testing.T) {
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for n := range 3 {
		r := history.Run{ID: fmt.Sprintf("real%d", n), Started: time.Date(2025, 1, 1+n, 0, 0, 0, 0, time.UTC), Workload: "w",
			Baseline: "A", Arms: []history.Arm{{Name: "A"}}}
		for i := range 5 {
			r.Trials = append(r.Trials, history.Trial{Arm: "A", Index: i, Metrics: map[string]float64{"rss_peak_bytes": float64(4+n) * (1 << 30)}})
		}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "trend.html")
	if err := WriteTrend(ctx, st, out, TrendOptions{}); err != nil {
		t.Fatal(err)
	}
	page, d := readTrend(t, out)
	if strings.Contains(page, "SIMULATED") {
		t.Error("a page of real nights says SIMULATED")
	}
	if _, ok := d.Options["trend-rss_peak_bytes-0-values"]; !ok || len(d.Options) != 1 {
		t.Errorf("charts %v, want A's peak RSS only", d.Options)
	}
	if med := d.Options["trend-rss_peak_bytes-0-values"].Series[2].Data[2]; med != 6.0 {
		t.Errorf("peak RSS charted as %v, want 6 (GiB)", med)
	}
	if !strings.Contains(page, "6 GiB [6 GiB–6 GiB]") {
		t.Error("the table does not show peak RSS in GiB")
	}
	if err := WriteTrend(ctx, st, out, TrendOptions{Filter: history.Filter{Workload: "none"}}); err != nil {
		t.Fatal(err)
	}
	if page, d = readTrend(t, out); !strings.Contains(page, `id="empty"`) || len(d.Options) != 0 {
		t.Error("an empty selection does not say so")
	}
}
