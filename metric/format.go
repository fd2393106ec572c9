package metric

import (
	"math"
	"strconv"

	"github.com/qmlsab/qmlsab/internal/units"
)

// Format writes a metric's value for people, in the metric's unit: bytes
// by units.HumanBytes (21.7 GiB, 512 MiB), latencies in ms, everything
// else as a plain Number. The terminal and the history's output use it.
func Format(name string, v float64) string { return FormatWith(name, v, Number) }

// FormatWith is Format with numbers (a latency's, a plain value's)
// written by number: the report and the trend page write them by their
// own rule of significant figures (report.Number). Bytes are always
// units.HumanBytes', so a size reads the same everywhere.
func FormatWith(name string, v float64, number func(float64) string) string {
	switch Lookup(name).Unit {
	case "B":
		return units.HumanBytes(v)
	case "ms":
		return number(v) + " ms"
	}
	return number(v)
}

// Number formats a plain number compactly: three significant digits or
// so, k/M/G (decimal) above ten thousand, "–" for NaN.
func Number(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 0):
		return "∞"
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
