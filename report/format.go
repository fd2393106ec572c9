package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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

// minus is the sign of a negative figure as the report prints it (U+2212,
// not a hyphen).
const minus = "−"

// signed is s (a formatted magnitude) with the sign of v: "+" above zero,
// "−" below, none at zero.
func signed(v float64, s string) string {
	s = strings.TrimPrefix(s, "-")
	switch {
	case v > 0:
		return "+" + s
	case v < 0:
		return minus + s
	}
	return s
}

// FormatDelta is a comparison's change as people read it: "~" when it is
// not significant, else the Hodges-Lehmann shift as a percentage of the
// baseline's median (or in the metric's unit when that median is 0),
// always signed: "−61.5 %", "+2.63 /s", "+13".
func FormatDelta(c Comparison) string {
	switch {
	case math.IsNaN(c.P):
		return "n/a"
	case !c.Significant:
		return "~"
	case !math.IsNaN(c.DeltaPercent):
		return signed(c.DeltaPercent, metric.Number(math.Abs(c.DeltaPercent))) + " %"
	}
	return signed(c.Delta, metric.Format(c.Metric, math.Abs(c.Delta)))
}

// FormatP is "p = 0.008, n = 5+5", "p < 0.001, …" below what three
// decimals can show.
func FormatP(c Comparison) string {
	if math.IsNaN(c.P) {
		return "n = " + strconv.Itoa(c.N1) + "+" + strconv.Itoa(c.N2)
	}
	return fmt.Sprintf("%s, n = %d+%d", PValue(c.P), c.N1, c.N2)
}

// PValue is a p-value as every table prints it: "p = 0.008", and
// "p < 0.001" where three decimals would print 0.000.
func PValue(p float64) string {
	if p < 0.0005 {
		return "p < 0.001"
	}
	return fmt.Sprintf("p = %.3f", p)
}
