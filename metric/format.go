package metric

import (
	"math"

	"github.com/qmlsab/qmlsab/internal/units"
)

// Format writes a metric's value for people, in the metric's unit: bytes
// by units.HumanBytes (21.7 GiB, 512 MiB), latencies in ms, everything
// else as a plain Number. The report, the trend page and the history's
// output all use it, so one value reads the same everywhere.
func Format(name string, v float64) string {
	switch Lookup(name).Unit {
	case "B":
		return units.HumanBytes(v)
	case "ms":
		return Number(v) + " ms"
	}
	return Number(v)
}

// Number formats a plain number by one rule of significant figures,
// whatever the metric (units.Figures: three significant figures, never
// fewer than the whole number's digits, 143 and 43.1, not 143 and 43.08;
// without trailing zeros, 1, not 1.00), k/M/G (decimal) from ten
// thousand (5000, not 5.00k; 12.3k), "–" for NaN, "∞" for an infinity.
func Number(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 0):
		return "∞"
	case a >= 1e9:
		return units.Figures(v/1e9) + "G"
	case a >= 1e6:
		return units.Figures(v/1e6) + "M"
	case a >= 1e4:
		return units.Figures(v/1e3) + "k"
	}
	return units.Figures(v)
}
