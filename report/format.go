package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/qmlsab/qmlsab/metric"
)

// Warning is a caveat about a figure, shown as a footnote.
type Warning struct {
	Arm    string `json:"arm,omitempty"`
	Metric string `json:"metric,omitempty"`
	Text   string `json:"text"`
}

// sampleWarnings are a summary's caveats.
func sampleWarnings(metric, arm string, s Summary) []Warning {
	var w []Warning
	if s.N > 0 && !s.MedianCI {
		w = append(w, Warning{Arm: arm, Metric: metric,
			Text: fmt.Sprintf("need >= 6 trials for a %.0f%% confidence interval of the median; min–max shown", 100*s.Confidence)})
	}
	return w
}

// FormatDelta is a comparison's change as people read it: "~" when it
// is not significant, else the Hodges-Lehmann shift as a percentage of
// the baseline's median (or absolute when that median is 0).
func FormatDelta(c Comparison) string {
	switch {
	case math.IsNaN(c.P):
		return "n/a"
	case !c.Significant:
		return "~"
	case !math.IsNaN(c.DeltaPercent):
		return fmt.Sprintf("%+.1f%%", c.DeltaPercent)
	}
	return fmt.Sprintf("%+s", Number(c.Delta))
}

// FormatP is "p=0.008 n=5+5".
func FormatP(c Comparison) string {
	if math.IsNaN(c.P) {
		return "n=" + strconv.Itoa(c.N1) + "+" + strconv.Itoa(c.N2)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.N1, c.N2)
}

// Number formats a metric value compactly (metric.Number).
func Number(v float64) string { return metric.Number(v) }
