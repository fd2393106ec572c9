package sweep

import (
	"bytes"
	"strings"
	"testing"
)

// The summary gives each arm's lowest and highest median of a metric and
// the cell of each, named by its settings; a byte metric in binary units.
func TestWriteSummaryNamesTheCellsOfTheExtremes(t *testing.T) {
	r := &Result{
		Arms:    []ArmOut{{Name: "E"}},
		Axes:    []AxisOut{{Name: "param.x", Labels: []string{"1", "2", "3"}}},
		Metrics: []MetricOut{{Name: "availability", Title: "availability"}, {Name: "rss", Title: "peak RSS", Unit: "B"}},
		Cells: []Cell{
			{Arm: "E", Index: []int{0}, Median: map[string]float64{"availability": 0.5, "rss": 2 << 30}},
			{Arm: "E", Index: []int{1}, Median: map[string]float64{"availability": 0.25, "rss": 1 << 30}},
			{Arm: "E", Index: []int{2}, Median: map[string]float64{"availability": 0.75}},
		},
	}
	var b bytes.Buffer
	WriteSummary(&b, r)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "arm") {
		t.Fatalf("summary:\n%s", b.String())
	}
	for _, want := range []string{"0.25 at param.x=2", "0.75 at param.x=3", "1 GiB at param.x=2", "2 GiB at param.x=1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
