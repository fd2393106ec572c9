package units

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"8388608": 8 << 20, "8MiB": 8 << 20, "8 MiB": 8 << 20, "8 mib": 8 << 20, "8MIB": 8 << 20,
		"512B": 512, "512 b": 512, "1KiB": 1024, "1.5MiB": 1572864, "2GiB": 2 << 30, "1TiB": 1 << 40, "0": 0,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// Decimal and bare prefixes are refused, naming the binary spelling.
	for in, hint := range map[string]string{"8MB": "8MiB", "8 mb": "8MiB", "8M": "8MiB", "4k": "4KiB", "1GB": "1GiB", "8Mi": "8MiB"} {
		_, err := ParseSize(in)
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("ParseSize(%q) = %v; want an error suggesting %s", in, err, hint)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "8 parsecs", "0.3B", "1.1.1KiB", "99999999999TiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestFormatSizeReadsBack(t *testing.T) {
	for _, n := range []int64{0, 1, 500, 1024, 1536, 8 << 20, 20 << 20, 3 << 30, 1<<40 + 1} {
		s := FormatSize(n)
		back, err := ParseSize(s)
		if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q reads back as %d, %v", n, s, back, err)
		}
	}
	if got := FormatSize(8 << 20); got != "8MiB" {
		t.Errorf("FormatSize(8MiB) = %q", got)
	}
}

func TestHumanBytes(t *testing.T) {
	for v, want := range map[float64]string{2.331e10: "21.7 GiB", 512: "512 B", 8 << 20: "8 MiB", 1536: "1.5 KiB",
		// Three figures, never fewer than the whole digits: no exponent
		// between 1000 and 1023 of a unit (it wrote "1.02e+03 MiB").
		1023 << 20: "1023 MiB", 999.7 * (1 << 20): "1000 MiB", 1000 << 30: "1000 GiB", 123.4 * (1 << 20): "123 MiB",
		// Rounding up to 1024 of a unit is 1 of the next.
		1023.7 * (1 << 20): "1 GiB", 1023.6: "1 KiB",
		// The figures the five formatters it replaced wrote apart.
		16 << 30: "16 GiB", 7.75 * (1 << 30): "7.75 GiB", 6 << 30: "6 GiB", 0.5 * (1 << 30): "512 MiB", 21.68 * (1 << 30): "21.7 GiB",
		-(1 << 30): "-1 GiB", 0: "0 B", 5 << 40: "5 TiB", 2048 << 40: "2048 TiB"} {
		if got := HumanBytes(v); got != want {
			t.Errorf("HumanBytes(%g) = %q, want %q", v, got, want)
		}
	}
	if got := HumanBytes(math.NaN()); got != "–" {
		t.Errorf("HumanBytes(NaN) = %q, want – (not reported)", got)
	}
}

func TestSizeYAML(t *testing.T) {
	var doc struct {
		A Size `yaml:"a"`
		B Size `yaml:"b"`
	}
	if err := yaml.Unmarshal([]byte("a: 8MiB\nb: 8388608\n"), &doc); err != nil || doc.A != doc.B || doc.A != Size(8<<20) {
		t.Fatalf("got %+v, %v", doc, err)
	}
	err := yaml.Unmarshal([]byte("a: 1KiB\nb: 8MB\n"), &doc)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "8MiB") {
		t.Errorf("8MB: %v; want an error at line 2 suggesting 8MiB", err)
	}
	out, err := yaml.Marshal(struct {
		A Size `yaml:"a"`
	}{Size(20 << 20)})
	if err != nil || strings.TrimSpace(string(out)) != "a: 20MiB" {
		t.Errorf("marshal: %q, %v", out, err)
	}
}

func TestSizeFlag(t *testing.T) {
	var s Size
	if err := s.Set("16 MiB"); err != nil || s.Bytes() != 16<<20 || s.String() != "16MiB" {
		t.Errorf("Set: %v, %d, %s", err, s, s)
	}
	if err := s.Set("16MB"); err == nil {
		t.Error("Set(16MB) accepted")
	}
}

func TestParseDuration(t *testing.T) {
	if d, err := ParseDuration("1m30s"); err != nil || d.Seconds() != 90 {
		t.Errorf("1m30s: %v %v", d, err)
	}
	_, err := ParseDuration("30 seconds")
	if err == nil || strings.Contains(err.Error(), "time.Duration") || !strings.Contains(err.Error(), "30s") {
		t.Errorf("error %v should say a duration like 30s", err)
	}
}

func TestFormatDurationAsPeopleWriteIt(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4 * time.Minute:                     "4m",
		time.Hour:                           "1h",
		time.Hour + 30*time.Minute:          "1h30m",
		90 * time.Second:                    "1m30s",
		24 * time.Second:                    "24s",
		250 * time.Millisecond:              "250ms",
		time.Minute + 1500*time.Millisecond: "1m1.5s",
		2*time.Hour + 5*time.Second:         "2h0m5s",
		0:                                   "0s",
	} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(got); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
}
