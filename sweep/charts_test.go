package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/chartcheck"
)

// metricRange is what a sweep metric's cells may plausibly hold in the
// unit the chart names: peak RSS in GiB (not MiB or bytes), availability
// a share, failovers a whole count.
func metricRange(m MetricOut) chartcheck.Range {
	switch {
	case m.Unit == "B":
		return chartcheck.Range{Min: 0.01, Max: 1024}
	case m.Name == "availability":
		return chartcheck.Range{Min: 0, Max: 1}
	case m.Name == "failovers":
		return chartcheck.Range{Min: 0, Max: 1000, Whole: true}
	case m.Unit == "/s":
		return chartcheck.Range{Min: -1e5, Max: 1e5}
	}
	return chartcheck.Range{Min: -1e9, Max: 1e9}
}

// checkSweepCharts checks every chart of a sweep page: one per arm and
// metric (heatmaps) or per metric (lines); each series has data; every
// cell lies in the grid; each chart names its metric's unit and holds
// values plausible for it.
func checkSweepCharts(t *testing.T, r *Result) {
	t.Helper()
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	charts, err := chartcheck.Options(page, "var options = ")
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.ChartIDs(); len(charts) != len(ids) {
		t.Errorf("%d charts embedded, want %d (%v)", len(charts), len(ids), ids)
	}
	inGrid := func(axis int, v any) bool {
		i, ok := v.(float64)
		return ok && i >= 0 && int(i) < len(r.Axes[axis].Labels) && i == float64(int(i))
	}
	for id, c := range charts {
		var m *MetricOut
		for i := range r.Metrics {
			if strings.HasSuffix(c.Title, title(r.Metrics[i])) || strings.HasSuffix(c.YName, title(r.Metrics[i])) {
				m = &r.Metrics[i]
			}
		}
		if m == nil {
			t.Errorf("%s (%q): names no metric with its unit", id, c.Title)
			continue
		}
		if !slices.Equal(c.XCategories, r.Axes[0].Labels) {
			t.Errorf("%s: x categories %v, want the grid's %v", id, c.XCategories, r.Axes[0].Labels)
		}
		place := func(p chartcheck.Point) string {
			switch x := p.X.(type) {
			case []any: // a heatmap cell
				if !inGrid(0, x[0]) || len(r.Axes) < 2 || !inGrid(1, x[1]) {
					return fmt.Sprintf("cell %v outside the %d×%d grid", x, len(r.Axes[0].Labels), len(r.Axes[len(r.Axes)-1].Labels))
				}
			case float64:
				if !inGrid(0, x) {
					return fmt.Sprintf("point at %v outside the grid's %d settings", x, len(r.Axes[0].Labels))
				}
			}
			return ""
		}
		for _, s := range c.Series {
			for _, problem := range s.Problems(metricRange(*m), place) {
				t.Errorf("%s (%q): %s", id, title(*m), problem)
			}
			if s.Type == "line" && len(s.Points) != len(r.Axes[0].Labels) {
				t.Errorf("%s: line %q has %d points for %d settings", id, s.Name, len(s.Points), len(r.Axes[0].Labels))
			}
		}
	}
}

func TestSweepChartsHoldTheGrid(t *testing.T) {
	checkSweepCharts(t, runSmall(t))
}

func TestSweepLineChartsHoldTheGrid(t *testing.T) {
	cfg := Config{Arms: builtins(t, "D", "E"), Base: short(), Seed: 1, Seeds: 1, Axes: []Axis{mustVary(t, "workload.stormRate=100,150,200")}}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkSweepCharts(t, r)
	if len(r.Cells) != 2*3 {
		t.Errorf("%d cells: %v", len(r.Cells), fmt.Sprint(r.Cells))
	}
}
