package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/history"
)

// markLabels are a chart's mark lines' labels by night (x index).
func markLabels(t *testing.T, path, chart string) map[int][]string {
	t.Helper()
	_, d := readTrend(t, path)
	out := map[int][]string{}
	for _, s := range d.Options[chart].Series {
		if s.MarkLine == nil {
			continue
		}
		for _, it := range s.MarkLine.Data {
			if it.XAxis != nil {
				out[*it.XAxis] = append(out[*it.XAxis], it.Label.Formatter)
			}
		}
	}
	return out
}

// The trend page marks the nights that redefined a series (the workload
// for every arm, an arm's definition for that arm only) and tonight's
// check's finding on the newest night, in the charts and in the tables.
func TestTrendMarksRedefinitionsAndTonightsFindings(t *testing.T) {
	var nights []night
	nights = append(nights, steadyNights(4, "nightly", 150, 70, 1e9)...)
	nights = append(nights, steadyNights(4, "nightly", 271.5, 70, 1e9)...)
	nights = append(nights, night{workload: "nightly", rate: 271.5, threshold: 80, rss: []float64{1.30e9, 1.31e9, 1.29e9}})
	st := historyOf(t, nights)
	out := filepath.Join(t.TempDir(), "trend.html")
	if err := WriteTrend(context.Background(), st, out, TrendOptions{Metrics: []string{"rss_peak_bytes"}}); err != nil {
		t.Fatal(err)
	}
	// Arms in the history's order: E (index 0), D (index 1).
	d := markLabels(t, out, "trend-rss_peak_bytes-1-values")
	if !slices.Equal(d[4], []string{"redefined: workload storm_rate 150 → 271.5"}) {
		t.Errorf("D's chart at night 5: %q; want the workload's redefinition", d[4])
	}
	if len(d[8]) != 2 || !strings.HasPrefix(d[8][0], "redefined: arm D actors[0].killop.rssHighPercent 70 → 80") ||
		!strings.HasPrefix(d[8][1], "tonight: regression p=") {
		t.Errorf("D's chart at night 9: %q; want D's redefinition and tonight's finding", d[8])
	}
	e := markLabels(t, out, "trend-rss_peak_bytes-0-values")
	if len(e[4]) != 1 || len(e[8]) != 0 {
		t.Errorf("E's chart: %v; want the workload's redefinition only (D's is not E's)", e)
	}
	page, _ := readTrend(t, out)
	for _, want := range []string{"tonight&#39;s check: regression p=", "redefined: workload storm_rate 150 → 271.5 (a change point by construction, never a regression)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the tables lack %q", want)
		}
	}
}

// A share's value axis ends at 1 however flat its values (ECharts would
// draw flat availability 1.0 on an axis from 0.4 to 1.6).
func TestTrendShareAxisEndsAtOne(t *testing.T) {
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for n := range 3 {
		r := history.Run{ID: fmt.Sprint("n", n), Started: time.Date(2026, 1, 1+n, 2, 0, 0, 0, time.UTC), Workload: "w", Arms: []history.Arm{{Name: "D"}}}
		for i := range 3 {
			r.Trials = append(r.Trials, history.Trial{Arm: "D", Index: i, Metrics: map[string]float64{"availability": 1, "rss_peak_bytes": 1e9}})
		}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "trend.html")
	if err := WriteTrend(ctx, st, out, TrendOptions{Metrics: []string{"availability", "rss_peak_bytes"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	m := regexp.MustCompile(`(?m)^  var d = (.*);$`).FindSubmatch(b)
	var d struct {
		Options map[string]struct {
			YAxis struct {
				Max *float64 `json:"max"`
			} `json:"yAxis"`
		} `json:"options"`
	}
	if m == nil || json.Unmarshal(m[1], &d) != nil {
		t.Fatal("no chart data in the page")
	}
	if y := d.Options["trend-availability-0-values"].YAxis.Max; y == nil || *y != 1 {
		t.Errorf("availability's axis max %v, want 1", y)
	}
	if y := d.Options["trend-rss_peak_bytes-0-values"].YAxis.Max; y != nil {
		t.Errorf("peak RSS's axis max %v, want none (not a share)", *y)
	}
}

// Nights are labelled by their dates; only nights that share a date carry
// a time, to the minute or, when that is shared too, the second.
func TestTrendAxisLabelsAreDates(t *testing.T) {
	at := func(day, h, m, s int) history.RunSummary {
		return history.RunSummary{Started: time.Date(2026, 3, day, h, m, s, 0, time.UTC)}
	}
	got := trendAxisLabels([]history.RunSummary{at(1, 2, 0, 0), at(2, 2, 0, 0), at(3, 2, 0, 0), at(3, 9, 15, 0), at(4, 1, 1, 1), at(4, 1, 1, 2)})
	want := []string{"2026-03-01", "2026-03-02", "03-03 02:00", "03-03 09:15", "03-04 01:01:01", "03-04 01:01:02"}
	if !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
}
