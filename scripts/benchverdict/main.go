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
// A target timed by the host's clock (a latency, seconds or CPU seconds,
// not a paired ratio) cannot FAIL while the hypervisor gave more than
// busyStealPercent of the machine's CPU time to other tenants during its
// benchmark (make bench writes a "steal BENCHMARK PERCENT" line after each
// one): a slow figure then says more about the host than about the code,
// so the verdict is "inconclusive (host busy)", followed by "[host steal
// N %]". A PASS stands: a busy host only makes such a figure worse.
// Where a host-timed benchmark reports its own steal share per
// repetition (unit "steal-%", internal/benchhost), the repetitions above
// busyStealPercent are set aside first and the verdict is taken on the
// rest, "[k of n set aside: …]" saying how many; with too few left for an
// interval it is "inconclusive (host busy)".
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

// busyStealPercent is the steal share above which a host-timed FAIL is
// withheld. A quiet run of this project's 2-core machine steals 0–2.4 %
// per benchmark; at 14 % steal the generator's start lag p99 went from
// 1.2 ms to 2.2–8.6 ms.
const busyStealPercent = 3

// result is one benchmark line: its name (without the -GOMAXPROCS
// suffix) and its metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
}

var (
	lineRE  = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)
	stealRE = regexp.MustCompile(`^steal (Benchmark\S+) ([0-9.]+)$`)
)

// results is what make bench's output holds: the benchmark lines and the
// host's steal share (percent) while each benchmark ran, by name.
type results struct {
	lines []result
	steal map[string]float64
}

func parse(r io.Reader) (results, error) {
	out := results{steal: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := stealRE.FindStringSubmatch(sc.Text()); m != nil {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				out.steal[m[1]] = v
			}
			continue
		}
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
		out.lines = append(out.lines, res)
	}
	return out, sc.Err()
}

// series is the unit's figure from every line whose name starts with
// prefix, in order (one per repetition).
func series(rs []result, prefix, unit string) []float64 {
	var xs []float64
	for _, r := range rs {
		if strings.HasPrefix(r.name, prefix) {
			if v, ok := r.metrics[unit]; ok {
				xs = append(xs, v)
			}
		}
	}
	return xs
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
	busy // a host-timed FAIL while the host was busy
)

func (v verdict) String() string {
	return [...]string{"PASS", "inconclusive (noisy)", "FAIL", "inconclusive (host busy)"}[v]
}

// onHost is judge for a target timed by the host's clock, whose benchmark
// ran while the hypervisor stole steal percent of the CPU time.
func onHost(v verdict, steal float64) verdict {
	if v == fail && steal > busyStealPercent {
		return busy
	}
	return v
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
	// bench names the benchmark whose steal share counts for a target
	// timed by the host's clock; empty for paired ratios and sizes.
	bench string
	// steal is each repetition's own steal share, beside xs (NaN where a
	// line did not report one); nil where the benchmark reports none.
	steal []float64
}

// quiet is t's figures from the repetitions the host did not steal more
// than busyStealPercent from, and how many were set aside.
func (t target) quiet() (xs []float64, setAside int) {
	if t.steal == nil {
		return t.xs, 0
	}
	for i, x := range t.xs {
		if i < len(t.steal) && t.steal[i] > busyStealPercent {
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
		line, v := t.assess(rs.steal[t.bench]) // 0 for a paired ratio (no bench)
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

// assess is t's line and verdict; steal is the host's share stolen
// during t's whole benchmark (0 where t is not timed by the host's clock).
func (t target) assess(steal float64) (string, verdict) {
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
		if t.bench != "" {
			v = onHost(v, steal)
		}
		if setAside > 0 && (len(xs) == 0 || math.IsInf(s.lo, 0)) {
			v = busy // too few quiet repetitions for an interval
		}
		line += fmt.Sprintf(" (target %s "+t.format+"%s): %s", op, t.target, t.unit, v)
		if t.bench != "" && steal > busyStealPercent {
			line += fmt.Sprintf(" [host steal %.1f %%]", steal)
		}
	}
	if setAside > 0 {
		line += fmt.Sprintf(" [%d of %d repetitions set aside: host steal above %d %% in each]", setAside, len(t.xs), busyStealPercent)
	}
	return line, v
}

func targets(rs results) []target {
	s := func(prefix, unit string) []float64 { return series(rs.lines, prefix, unit) }
	// stolen is each repetition's own steal share beside the unit's
	// figure; nil when no line of the benchmark reports one.
	stolen := func(prefix, unit string) []float64 {
		var xs []float64
		reported := false
		for _, r := range rs.lines {
			if _, ok := r.metrics[unit]; !ok || !strings.HasPrefix(r.name, prefix) {
				continue
			}
			v, ok := r.metrics[benchhost.Unit]
			if !ok {
				v = math.NaN()
			}
			reported = reported || ok
			xs = append(xs, v)
		}
		if !reported {
			return nil
		}
		return xs
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
		{label: "start lag p99 at 2000 scheduled ops/s against mongosim",
			xs: s("BenchmarkGenerator/lag-2000", "p99-lag-ms"), scale: 1, format: "%.2f", unit: " ms", target: 2, hasGoal: true, bench: "BenchmarkGenerator",
			steal: stolen("BenchmarkGenerator/lag-2000", "p99-lag-ms")},
		{label: "collector, 3 out-of-process members sampled at 1 Hz: the sampler's CPU",
			xs: s("BenchmarkCollectorCPU", "3-members-1Hz-cpu-ms/s"), scale: 1, format: "%.2f", unit: " ms per s of run"},
		{label: "report of 3 arms x 5 trials x 1 h of 1 Hz samples",
			xs: s("BenchmarkRender", "s/report"), scale: 1, format: "%.2f", unit: " s", target: 2, hasGoal: true, bench: "BenchmarkRender",
			steal: stolen("BenchmarkRender", "s/report")},
		{label: "report HTML size",
			xs: scaled(s("BenchmarkRender", "MiB-html"), 1.048576), scale: 1, format: "%.2f", unit: " MB", target: 5, hasGoal: true},
		{label: "history detect, E-Divisive over 20 series, 1000 nights",
			xs: scaled(s("BenchmarkDetect/nights=1000/", "ns/op"), 1e-9), scale: 1, format: "%.2f", unit: " s", target: 2, hasGoal: true, bench: "BenchmarkDetect",
			steal: stolen("BenchmarkDetect/nights=1000/", "ns/op")},
		{label: "sweep engine speed, CPU per trial of the engine before issue 24 ÷ this one's (paired)",
			xs:    ratios(s("BenchmarkSweep/base", "cpu-s/trial"), s("BenchmarkSweep/new", "cpu-s/trial")),
			scale: 1, format: "%.2f", unit: "x", target: 2, atLeast: true, hasGoal: true},
		{label: "sweep (virtual time, host model), wall rate on the machine as shared",
			xs: s("BenchmarkSweep/new", "trials/s"), scale: 1, format: "%.2f", unit: " trials/s"},
		{label: "sweep CPU per trial", xs: s("BenchmarkSweep/new", "cpu-s/trial"), scale: 1, format: "%.3f", unit: " s"},
		{label: "sweep, 900 trials (3 arms x 100 cells x 3 seeds) on its workers' CPUs of its own, host as it was",
			xs: s("BenchmarkSweep/new", "s/900-trials-own-cpus"), scale: 1, format: "%.0f", unit: " s"},
		{label: "FTDC decode throughput", xs: s("BenchmarkDecode", "MB/s"), scale: 1, format: "%.1f", unit: " MB/s"},
		{label: "FTDC decode, samples x metrics", xs: scaled(s("BenchmarkDecode", "values/s"), 1e-6), scale: 1, format: "%.1f", unit: " million/s"},
	}
}
