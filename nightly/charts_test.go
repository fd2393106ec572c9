package nightly

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/chartcheck"
)

// Every chart of the trend page: each series has data, every point and
// change-point mark lies on one of the nights, and values fit the unit
// the value axis names (peak RSS in GiB, not bytes; availability a
// share; latencies in ms).
func TestTrendChartsHoldTheNights(t *testing.T) {
	st, _ := trendHistory(t)
	out := filepath.Join(t.TempDir(), "trend.html")
	if err := WriteTrend(context.Background(), st, out, TrendOptions{Metrics: []string{"availability", "canary_p99_ms", "rss_peak_bytes"}}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	charts, err := chartcheck.Options(page, `var d = {"options":`)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) == 0 {
		t.Fatal("no charts")
	}
	for id, c := range charts {
		effect := strings.HasSuffix(id, "-effect")
		var r chartcheck.Range
		switch {
		case strings.Contains(id, "-availability-") && c.YName == "":
			r = chartcheck.Range{Min: 0, Max: 1}
		case strings.Contains(id, "-canary_p99_ms-") && c.YName == "ms":
			r = chartcheck.Range{Min: 0, Max: 1e6}
		case strings.Contains(id, "-rss_peak_bytes-") && c.YName == "GiB":
			r = chartcheck.Range{Min: 0.01, Max: 1024}
		default:
			t.Errorf("%s: value axis %q is not its metric's unit", id, c.YName)
			continue
		}
		if effect { // shifts are differences: either sign, up to the scale
			r = chartcheck.Range{Min: -math.Max(r.Max, 1), Max: math.Max(r.Max, 1)}
		}
		nights := len(c.XCategories)
		if nights == 0 {
			t.Errorf("%s: no nights on the x axis", id)
		}
		for _, s := range c.Series {
			pts := s.Present()
			if len(pts) == 0 {
				t.Errorf("%s: series %q has no data", id, s.Name)
			}
			if len(s.Points) > nights {
				t.Errorf("%s: series %q has %d points for %d nights", id, s.Name, len(s.Points), nights)
			}
			for _, x := range s.MarkXs {
				if x < 0 || int(x) >= nights || x != float64(int(x)) {
					t.Errorf("%s: %q marks x = %g, not one of the %d nights", id, s.Name, x, nights)
				}
			}
			var ys []float64
			for _, p := range pts {
				ys = append(ys, p.Y)
			}
			// The band's span series is stacked on the min line: its
			// values are widths, still in the unit.
			if err := r.Check(ys); err != nil {
				t.Errorf("%s: series %q in %q: %v", id, s.Name, c.YName, err)
			}
		}
	}
}
