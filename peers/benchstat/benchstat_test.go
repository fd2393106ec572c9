// Package benchstat_test holds qmlsab's bench.txt to the reader it is
// written for: golang.org/x/perf's benchstat, built from this nested
// module's tool dependency (so it never reaches the product's go.mod).
package benchstat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A D-vs-E run's bench.txt, read by real benchstat with the arms as
// columns: it parses (both arms' columns, a row per metric), the units
// it knows it scales (bytes with binary prefixes: Gi, Mi), and every
// figure is in the unit its name says (the _ms latencies in ms; they once
// held seconds).
func TestBenchstatReadsAndScalesBenchTxt(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "qmlsab")
	run(t, filepath.Join("..", ".."), "go", "build", "-o", bin, "./cmd/qmlsab")
	dir := filepath.Join(tmp, "run")
	run(t, tmp, bin, "run", "--arms", "D,E", "--n", "3", "--profile", "quick", "--seed", "3", "--out", dir)
	run(t, tmp, bin, "report", "--format", "bench", dir)
	out := run(t, ".", "go", "tool", "benchstat", "-col", "/arm", filepath.Join(dir, "bench.txt"))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`│\s+D\s+│\s+E\s+│`),                                     // the arms as columns
		regexp.MustCompile(`metric=rss_peak_bytes\s+[0-9.]+Gi\b`),                   // bytes, binary prefix
		regexp.MustCompile(`metric=victim_tracked_bytes_p50\s+[0-9.]+(Ki|Mi|Gi)\b`), // likewise
		regexp.MustCompile(`│\s+ms\s+│\s+ms\s+vs base`),                             // the latencies' table, in ms
		regexp.MustCompile(`metric=canary_p50_ms\s+[0-9.]+k?\s`),                    // a figure of ms (the p50: under the storm the p99 is a timeout's bound, kept out of bench.txt)
		regexp.MustCompile(`metric=availability\s`),
		regexp.MustCompile(`note: SIMULATED`), // the configuration line benchstat keeps
	} {
		if !want.MatchString(out) {
			t.Errorf("benchstat's output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "benchstat:") {
		t.Errorf("benchstat complained:\n%s", out)
	}
}
