// Package units reads and writes the sizes and durations people write in
// qmlsab's YAML files and flags, and names the units its outputs use.
//
// A size is a whole number of bytes, written plain (8388608) or with a
// binary prefix: B, KiB, MiB, GiB or TiB (8MiB, 1.5 GiB, 512B). The unit's
// letters may be in any case and a space may stand between the number and
// the unit, so "8 mib" is 8MiB. Decimal and bare prefixes (8MB, 8M, 8k) are
// refused with the binary spelling they most likely meant: the figures
// qmlsab works with (buffers, resident memory) are powers of two, and a
// silently decimal "8MB" would be 5% short of the 8MiB its writer wanted.
// A fractional figure must come to whole bytes (1.5MiB is 1572864).
//
// A duration is Go's (and mongosh's) syntax: 30s, 1m30s, 250ms, 2h.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Binary prefixes, in bytes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// SizeHint and DurationHint are how errors say what was wanted.
const (
	SizeHint     = "a size like 8MiB (or a number of bytes)"
	DurationHint = "a duration like 30s or 1m30s"
)

var binaryUnits = []struct {
	name  string
	bytes int64
}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}, {"B", 1}}

// decimalMeant maps a decimal or bare prefix (lower case) to the binary
// unit an error suggests instead.
var decimalMeant = map[string]string{
	"k": "KiB", "kb": "KiB", "m": "MiB", "mb": "MiB", "g": "GiB", "gb": "GiB", "t": "TiB", "tb": "TiB",
	"ki": "KiB", "mi": "MiB", "gi": "GiB", "ti": "TiB",
}

// ParseSize reads a size as the package documents it.
func ParseSize(s string) (int64, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return 0, fmt.Errorf("empty size: want %s", SizeHint)
	}
	i := 0
	for i < len(text) && (text[i] >= '0' && text[i] <= '9' || text[i] == '.' || (i == 0 && (text[i] == '-' || text[i] == '+'))) {
		i++
	}
	num, unit := text[:i], strings.TrimSpace(text[i:])
	if num == "" {
		return 0, fmt.Errorf("%q: want %s", s, SizeHint)
	}
	mult := int64(1)
	if unit != "" {
		found := false
		for _, u := range binaryUnits {
			if strings.EqualFold(unit, u.name) {
				mult, found = u.bytes, true
				break
			}
		}
		if !found {
			if meant, ok := decimalMeant[strings.ToLower(unit)]; ok {
				return 0, fmt.Errorf("%q: %s is not a unit qmlsab reads (decimal or ambiguous); write %s%s for binary, or the number of bytes", s, unit, num, meant)
			}
			return 0, fmt.Errorf("%q: unknown unit %q: want %s", s, unit, SizeHint)
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q: a size cannot be negative", s)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%q: too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want %s", s, SizeHint)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q: a size cannot be negative", s)
	}
	b := f * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("%q: not a whole number of bytes (%g)", s, b)
	}
	return int64(b), nil
}

// FormatSize writes a size in the largest binary unit that divides it
// (8388608 → 8MiB, 1536 → 1536B), so that ParseSize reads back the same
// number of bytes.
func FormatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range binaryUnits[:4] {
		if n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// HumanBytes writes bytes for a person to read, qmlsab's one rule for a
// size in text (the report, the terminal, the trend and sweep pages, the
// workload's bounds): in the largest binary unit not above the value, to
// three significant figures but never fewer than the whole number's
// digits, without trailing zeros (23312345678 → "21.7 GiB", 1536 →
// "1.5 KiB", 8388608 → "8 MiB", 1072693248 → "1023 MiB"; a value that
// rounds to 1024 of a unit is 1 of the next). NaN, a size not reported,
// is "–". It does not read back exactly; FormatSize does.
func HumanBytes(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	i := len(binaryUnits) - 1 // B
	for j, u := range binaryUnits[:4] {
		if math.Abs(v) >= float64(u.bytes) {
			i = j
			break
		}
	}
	x := v / float64(binaryUnits[i].bytes)
	if i > 0 && math.Abs(math.Round(x)) >= 1024 {
		i--
		x = v / float64(binaryUnits[i].bytes)
	}
	return Figures(x) + " " + binaryUnits[i].name
}

// Figures writes v by qmlsab's one rule of significant figures: three,
// but never fewer than the whole number's digits (143 and 43.1, not 143
// and 43.08; 1023, not 1.02e+03), without trailing zeros (1, not 1.00).
// Sizes (HumanBytes) and every other figure in text (metric.Number) are
// written by it.
func Figures(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	// 'g' keeps three significant figures and drops trailing zeros (its
	// exponent form only shows under 1e-4).
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Size is a number of bytes that YAML and flags read as ParseSize does
// and YAML writes as FormatSize does. JSON sees the plain number.
type Size int64

// Bytes is the size as a plain number of bytes.
func (s Size) Bytes() int64 { return int64(s) }

// String writes the size as FormatSize does.
func (s Size) String() string { return FormatSize(int64(s)) }

// Set reads a flag's value.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// UnmarshalYAML reads a scalar as ParseSize does; a problem is a
// yaml.TypeError carrying the node's line, so file:line errors name it.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want %s", n.Line, SizeHint)}}
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*s = Size(v)
	return nil
}

// MarshalYAML writes the size as FormatSize does.
func (s Size) MarshalYAML() (any, error) { return FormatSize(int64(s)), nil }

// ParseDuration reads a duration in Go's syntax, with an error that says
// what was wanted rather than naming a Go type.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: want %s", s, DurationHint)
	}
	return d, nil
}

// FormatDuration writes a duration as people write one: whole units
// without the zero parts Go's String adds (4m, not 4m0s; 1h30m; 90ms),
// and as String does otherwise (1m30.5s). ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if d == 0 || d%time.Second != 0 {
		return s
	}
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Symbols are the unit symbols qmlsab's prose puts after a figure
// ("2^30 B", "125 MiB/s", "30 s"): text folded into lines keeps each on
// the line of its figure.
var Symbols = []string{"B", "KiB", "MiB", "GiB", "TiB", "B/s", "KiB/s", "MiB/s", "GiB/s",
	"ns", "µs", "us", "ms", "s", "min", "h", "model-s", "%"}
