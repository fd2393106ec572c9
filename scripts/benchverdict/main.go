// Command benchverdict reads the output of make bench's benchmarks (go
// test -bench … -count N) and prints each target's verdict from the
// repeated measurements: the median of the per-repetition figures (a
// paired ratio where the target is one: the i-th run of A against the
// i-th run of B, which -count runs back to back), its 95 % distribution-
// free confidence interval (order statistics, as benchstat computes it),
// and
//
//   - PASS when the whole interval clears the target,
//   - FAIL when the whole interval lies on the wrong side,
//   - "inconclusive (noisy)" otherwise.
//
// A benchmark timed by the host's clock (a latency, seconds, not a paired
// ratio) reports each repetition's steal: the share of the machine's CPU
// time the hypervisor gave to other tenants meanwhile (unit "steal-%",
// internal/benchhost). A repetition above busyStealPercent says more
// about the host than about the code and is set aside; the verdict is
// taken on the rest, "[k of n repetitions set aside: …]" saying how many,
// and with too few left for an interval it is "inconclusive (host busy)".
//
// It exits 1 only when some verdict is FAIL (2 when results are missing).
//
//	go run ./scripts/benchverdict BENCH-OUTPUT-FILE
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	ms "github.com/aclements/go-moremath/stats"

	"github.com/qmlsab/qmlsab/internal/benchhost"
)

// confidence is the interval's level; with 6 repetitions the widest
// interval, the sample's min–max, is 1 − 2·0.5⁶ ≈ 96.9 %: 6 is the fewest
// repetitions for which a 95 % interval for the median exists at all.
const confidence = 0.95

// busyStealPercent is the steal share above which a host-timed repetition
// is set aside: above what a quiet host steals, below where the host-timed
// figures were seen to move (docs/benchmarks.md, "A busy host", has the
// measurements).
const busyStealPercent = 3

// result is one benchmark line: its name (without the -GOMAXPROCS
// suffix) and its metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
}

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// parse reads the benchmark lines of make bench's output, in order.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		res := result{name: m[1], metrics: map[string]float64{}}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				res.metrics[f[i+1]] = v
			}
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// series is the unit's figure from every line whose name starts with
// prefix, in order (one per repetition).
func series(rs []result, prefix, unit string) []float64 {
	xs, _ := seriesWithSteal(rs, prefix, unit)
	return xs
}

// seriesWithSteal is series and, beside each figure, its repetition's
// steal share (NaN where its line has none); steal is nil where no line
// of the benchmark reports one.
func seriesWithSteal(rs []result, prefix, unit string) (xs, steal []float64) {
	reported := false
	for _, r := range rs {
		v, ok := r.metrics[unit]
		if !ok || !strings.HasPrefix(r.name, prefix) {
			continue
		}
		xs = append(xs, v)
		st, ok := r.metrics[benchhost.Unit]
		if !ok {
			st = math.NaN()
		}
		reported = reported || ok
		steal = append(steal, st)
	}
	if !reported {
		steal = nil
	}
	return xs, steal
}

// summary is a figure's median and confidence interval over its
// repetitions; lo and hi are infinite when there are too few.
type summary struct {
	n              int
	median, lo, hi float64
}

func summarize(xs []float64) summary {
	s := ms.Sample{Xs: append([]float64(nil), xs...)}
	sort.Float64s(s.Xs)
	s.Sorted = true
	q, lo, hi := ms.QuantileCI(len(xs), 0.5, confidence).SampleCI(s)
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		// Too few runs for the interval: no bound at either end, so no
		// verdict either way (one open end alone would favour one side).
		lo, hi = math.Inf(-1), math.Inf(1)
	}
	return summary{n: len(xs), median: q, lo: lo, hi: hi}
}

type verdict int

const (
	pass verdict = iota
	inconclusive
	fail
	busy // too few host-timed repetitions the host did not steal from
)

func (v verdict) String() string {
	return [...]string{"PASS", "inconclusive (noisy)", "FAIL", "inconclusive (host busy)"}[v]
}

// judge: atLeast says the figure must be ≥ target (else ≤).
func judge(s summary, target float64, atLeast bool) verdict {
	lo, hi := s.lo, s.hi
	if !atLeast {
		lo, hi = -hi, -lo
		target = -target
	}
	switch {
	case lo >= target:
		return pass
	case hi < target:
		return fail
	}
	return inconclusive
}

func (s summary) format(scale float64, f string) string {
	if math.IsInf(s.lo, 0) || math.IsInf(s.hi, 0) {
		runs := "runs"
		if s.n == 1 {
			runs = "run"
		}
		return fmt.Sprintf(f+" (%d %s: too few for an interval)", s.median*scale, s.n, runs)
	}
	return fmt.Sprintf(f+" [%s–%s, %d runs]", s.median*scale, fmt.Sprintf(f, s.lo*scale), fmt.Sprintf(f, s.hi*scale), s.n)
}

// ratios pairs the i-th figure of a with the i-th of b: a/b per pair.
func ratios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

type target struct {
	label   string // what is measured
	xs      []float64
	scale   float64
	format  string // printf verb for one figure
	unit    string // printed after the figures
	target  float64
	atLeast bool
	hasGoal bool // false: a figure printed without a verdict
	// steal is each repetition's own steal share, beside xs (NaN where a
	// line did not report one); nil for paired ratios and sizes.
	steal []float64
}

// quiet is t's figures from the repetitions the host did not steal more
// than busyStealPercent from, and how many were set aside.
func (t target) quiet() (xs []float64, setAside int) {
	if t.steal == nil {
		return t.xs, 0
	}
	for i, x := range t.xs {
		if t.steal[i] > busyStealPercent {
			setAside++
			continue
		}
		xs = append(xs, x)
	}
	return xs, setAside
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchverdict BENCH-OUTPUT-FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchverdict:", err)
		os.Exit(2)
	}
	rs, err := parse(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchverdict: reading the results:", err)
		os.Exit(2)
	}
	ts := targets(rs)
	failed, missing := false, false
	fmt.Println()
	for _, t := range ts {
		if len(t.xs) == 0 {
			fmt.Printf("%s: no results\n", t.label)
			missing = true
			continue
		}
		line, v := t.assess()
		failed = failed || v == fail
		fmt.Println(line)
	}
	switch {
	case missing:
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// assess is t's line and verdict.
func (t target) assess() (string, verdict) {
	v := pass
	xs, setAside := t.quiet()
	s := summarize(xs)
	if len(xs) == 0 {
		s = summarize(t.xs) // every repetition stolen from: still print the figures
	}
	line := fmt.Sprintf("%s: median %s%s", t.label, s.format(t.scale, t.format), t.unit)
	if t.hasGoal {
		op := "<="
		if t.atLeast {
			op = ">="
		}
		v = judge(s, t.target/t.scale, t.atLeast)
		if setAside > 0 && (len(xs) == 0 || math.IsInf(s.lo, 0)) {
			v = busy // too few quiet repetitions for an interval
		}
		line += fmt.Sprintf(" (target %s "+t.format+"%s): %s", op, t.target, t.unit, v)
	}
	if setAside > 0 {
		line += fmt.Sprintf(" [%d of %d repetitions set aside: host steal above %d %% in each]", setAside, len(t.xs), busyStealPercent)
	}
	return line, v
}

func targets(rs []result) []target {
	s := func(prefix, unit string) []float64 { return series(rs, prefix, unit) }
	// hostTimed is t with its figures and their repetitions' steal.
	hostTimed := func(prefix, unit string, t target) target {
		t.xs, t.steal = seriesWithSteal(rs, prefix, unit)
		return t
	}
	scaled := func(xs []float64, k float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x * k
		}
		return out
	}
	return []target{
		{label: "find-by-_id through the Go driver, mongosim ÷ fixed-reply server (paired)",
			xs:    ratios(s("BenchmarkFindByID/mongosim", "ops/s"), s("BenchmarkFindByID/fixed-reply", "ops/s")),
			scale: 100, format: "%.1f", unit: " %", target: 50, atLeast: true, hasGoal: true},
		{label: "generator throughput, open loop ÷ bare driver loop side by side",
			xs: s("BenchmarkGenerator/throughput", "generator-%-of-bare"), scale: 1, format: "%.1f", unit: " %", target: 90, atLeast: true, hasGoal: true},
		hostTimed("BenchmarkGenerator/lag-2000", "p99-lag-ms", target{label: "start lag p99 at 2000 scheduled ops/s against mongosim",
			scale: 1, format: "%.2f", unit: " ms", target: 2, hasGoal: true}),
		{label: "collector, 3 out-of-process members sampled at 1 Hz: the sampler's CPU",
			xs: s("BenchmarkCollectorCPU", "3-members-1Hz-cpu-ms/s"), scale: 1, format: "%.2f", unit: " ms per s of run"},
		hostTimed("BenchmarkRender", "s/report", target{label: "report of 3 arms x 5 trials x 1 h of 1 Hz samples",
			scale: 1, format: "%.2f", unit: " s", target: 2, hasGoal: true}),
		{label: "report HTML size",
			xs: scaled(s("BenchmarkRender", "MiB-html"), 1.048576), scale: 1, format: "%.2f", unit: " MB", target: 5, hasGoal: true},
		hostTimed("BenchmarkDetect/nights=1000/", "ns/op", target{label: "history detect, E-Divisive over 20 series, 1000 nights",
			scale: 1e-9, format: "%.2f", unit: " s", target: 2, hasGoal: true}),
		{label: "sweep engine speed, CPU per trial of the engine before issue 37 (d3bbfab) ÷ this one's (paired)",
			xs:    ratios(s("BenchmarkSweep/base", "cpu-s/trial"), s("BenchmarkSweep/new", "cpu-s/trial")),
			scale: 1, format: "%.2f", unit: "x", target: 1.4, atLeast: true, hasGoal: true},
		{label: "sweep (virtual time, host model), wall rate on the machine as shared",
			xs: s("BenchmarkSweep/new", "trials/s"), scale: 1, format: "%.2f", unit: " trials/s"},
		{label: "sweep CPU per trial", xs: s("BenchmarkSweep/new", "cpu-s/trial"), scale: 1, format: "%.3f", unit: " s"},
		{label: "sweep, 900 trials (3 arms x 100 cells x 3 seeds) on its workers' CPUs of its own, host as it was",
			xs: s("BenchmarkSweep/new", "s/900-trials-own-cpus"), scale: 1, format: "%.0f", unit: " s"},
		hostTimed("BenchmarkEnsemble/ensemble", "s/ensemble", target{label: "calibrate --fit's default ensemble (at least 20 acceptable points x 5 seeds for F and G)",
			scale: 1, format: "%.0f", unit: " s", target: 120, hasGoal: true}),
		{label: "the ensemble on the CPUs of its own (CPU seconds / workers)", xs: s("BenchmarkEnsemble/ensemble", "s-own-cpus"), scale: 1, format: "%.0f", unit: " s"},
		{label: "the ensemble's trials", xs: s("BenchmarkEnsemble/ensemble", "trials"), scale: 1, format: "%.0f", unit: ""},
		{label: "the ensemble's acceptable points", xs: s("BenchmarkEnsemble/ensemble", "acceptable"), scale: 1, format: "%.0f", unit: ""},
		{label: "the single-point fit it replaced (calibrate --fit before issue 37)", xs: s("BenchmarkEnsemble/single-point", "s/fit"), scale: 1, format: "%.0f", unit: " s"},
		{label: "the ensemble / the single-point fit, wall seconds (paired)",
			xs: ratios(s("BenchmarkEnsemble/ensemble", "s/ensemble"), s("BenchmarkEnsemble/single-point", "s/fit")), scale: 1, format: "%.2f", unit: "x"},
		{label: "FTDC decode throughput", xs: s("BenchmarkDecode", "MB/s"), scale: 1, format: "%.1f", unit: " MB/s"},
		{label: "FTDC decode, samples x metrics", xs: scaled(s("BenchmarkDecode", "values/s"), 1e-6), scale: 1, format: "%.1f", unit: " million/s"},
	}
}
