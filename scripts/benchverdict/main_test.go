package main

import (
	"math"
	"strings"
	"testing"
)

func TestVerdictNeedsTheWholeIntervalOnOneSide(t *testing.T) {
	cases := []struct {
		xs      []float64
		target  float64
		atLeast bool
		want    verdict
	}{
		{[]float64{91, 92, 95, 93, 99, 94}, 90, true, pass},
		{[]float64{80, 85, 82, 88, 81, 84}, 90, true, fail},
		// The flip: 89.5 % one run, 99.5 % another: neither verdict.
		{[]float64{89.5, 90.2, 99.5, 95, 93, 91}, 90, true, inconclusive},
		{[]float64{1.1, 1.3, 1.2, 1.9, 1.0, 1.4}, 2, false, pass},
		{[]float64{2.1, 2.3, 3, 2.2, 2.5, 2.4}, 2, false, fail},
		// Five runs are too few for a 95 % interval: never a verdict.
		{[]float64{99, 99, 99, 99, 99}, 90, true, inconclusive},
		{[]float64{10, 10, 10, 10, 10}, 90, true, inconclusive},
	}
	for _, c := range cases {
		if got := judge(summarize(c.xs), c.target, c.atLeast); got != c.want {
			t.Errorf("%v against %v (at least %v): %v, want %v", c.xs, c.target, c.atLeast, got, c.want)
		}
	}
}

func TestSixRunsGiveTheMinMaxInterval(t *testing.T) {
	s := summarize([]float64{3, 1, 6, 2, 5, 4})
	if s.median != 3.5 || s.lo != 1 || s.hi != 6 {
		t.Fatalf("median %v [%v, %v], want 3.5 [1, 6]", s.median, s.lo, s.hi)
	}
	if s := summarize([]float64{1, 2, 3, 4, 5}); !math.IsInf(s.lo, -1) || !math.IsInf(s.hi, 1) {
		t.Fatalf("five runs: [%v, %v], want unbounded", s.lo, s.hi)
	}
}

func TestPairsRunsInOrder(t *testing.T) {
	out := `goos: linux
BenchmarkFindByID/fixed-reply-2   	   1000	   10 ns/op	  2000 ops/s
BenchmarkFindByID/mongosim-2      	   1000	   20 ns/op	  1200 ops/s
BenchmarkFindByID/fixed-reply-2   	   1000	   10 ns/op	  1000 ops/s
BenchmarkFindByID/mongosim-2      	   1000	   20 ns/op	   700 ops/s
`
	rs, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := ratios(series(rs, "BenchmarkFindByID/mongosim", "ops/s"), series(rs, "BenchmarkFindByID/fixed-reply", "ops/s"))
	if len(got) != 2 || got[0] != 0.6 || got[1] != 0.7 {
		t.Fatalf("paired ratios %v, want [0.6 0.7] (each mongosim run against the fixed-reply run before it)", got)
	}
}

// A figure with too few runs for an interval says so; it never prints an
// interval of infinities.
func TestFormatSaysWhenThereIsNoInterval(t *testing.T) {
	if got := summarize([]float64{28}).format(1, "%.1f"); got != "28.0 (1 run: too few for an interval)" {
		t.Errorf("one run: %q", got)
	}
	if got := summarize([]float64{3, 1, 6, 2, 5, 4}).format(1, "%.1f"); got != "3.5 [1.0–6.0, 6 runs]" {
		t.Errorf("six runs: %q", got)
	}
}

// make bench names the two sweep test binaries' lines new and base, in
// alternating order; the sweep's target is their paired CPU-per-trial
// ratio, and the host-clock figures are the new engine's alone.
func TestTheSweepIsJudgedAgainstTheOldEngineSideBySide(t *testing.T) {
	out := `BenchmarkSweep/new-2    	 1	 1 ns/op	 0.10 cpu-s/trial	 45 s/900-trials-own-cpus
BenchmarkSweep/base-2   	 1	 1 ns/op	 0.30 cpu-s/trial	 135 s/900-trials-own-cpus
BenchmarkSweep/base-2   	 1	 1 ns/op	 0.40 cpu-s/trial	 180 s/900-trials-own-cpus
BenchmarkSweep/new-2    	 1	 1 ns/op	 0.16 cpu-s/trial	 72 s/900-trials-own-cpus
`
	rs, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]float64{}
	for _, tg := range targets(rs) {
		if strings.HasPrefix(tg.label, "sweep") {
			found[tg.label] = tg.xs
			if strings.Contains(tg.label, "paired") != tg.hasGoal {
				t.Errorf("%q: has a goal %v; only the paired ratio is judged", tg.label, tg.hasGoal)
			}
		}
	}
	var speed, own []float64
	for label, xs := range found {
		switch {
		case strings.Contains(label, "engine speed"):
			speed = xs
		case strings.Contains(label, "900 trials"):
			own = xs
		}
	}
	if len(speed) != 2 || math.Abs(speed[0]-3) > 1e-9 || math.Abs(speed[1]-2.5) > 1e-9 {
		t.Errorf("speed-up %v, want [3 2.5] (each new run against the base run beside it)", speed)
	}
	if len(own) != 2 || own[0] != 45 || own[1] != 72 {
		t.Errorf("900-trial seconds %v, want the new engine's [45 72]", own)
	}
}

// A host-timed benchmark that reports its own steal share per repetition
// has the repetitions the host stole from set aside: the start lag below
// would be inconclusive on all nine (three stalls of 4–7 ms) and is a PASS
// on the six quiet ones; with only five quiet ones there is no interval,
// and the host, not the code, is why.
func TestRepetitionsTheHostStoleFromAreSetAside(t *testing.T) {
	stalled := []string{"0.3", "0.4", "5.3", "0.3", "7.0", "0.5", "4.1", "0.3", "0.4"}
	slow := []string{"2.3", "2.4", "5.3", "2.3", "7.0", "2.5", "4.1", "2.3", "2.4"}
	lines := func(figures []string, steals ...string) string {
		var b strings.Builder
		for i, f := range figures {
			b.WriteString("BenchmarkGenerator/lag-2000-2  6  2050000000 ns/op  0.12 p50-lag-ms  " + f + " p99-lag-ms")
			if steals != nil {
				b.WriteString("  " + steals[i] + " steal-%")
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	lag := func(steals ...string) string { return lines(stalled, steals...) }
	lagTarget := func(out string) target {
		rs, err := parse(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets(rs) {
			if strings.HasPrefix(tg.label, "start lag") {
				return tg
			}
		}
		t.Fatal("no start lag target")
		return target{}
	}
	cases := []struct {
		name, out string
		want      verdict
		note      string
	}{
		{"no steal reported", lag(), inconclusive, ""},
		{"quiet host", lag("0", "0", "0", "0", "0.5", "0", "0", "0", "0"), inconclusive, ""},
		{"three stolen from", lag("0", "0", "8", "0", "12", "0", "4", "0", "0"), pass, "[3 of 9 repetitions set aside"},
		{"four stolen from", lag("0", "9", "8", "0", "12", "0", "4", "0", "0"), busy, "[4 of 9 repetitions set aside"},
		{"at the threshold", lag("0", "0", "3", "0", "3", "0", "3", "0", "0"), inconclusive, ""},
		// A slow generator fails on the quiet repetitions too: setting the
		// stolen-from ones aside never turns a FAIL into anything else.
		{"slow on a quiet host", lines(slow, "0", "0", "0", "0", "0", "0", "0", "0", "0"), fail, ""},
		{"slow, three stolen from", lines(slow, "0", "0", "8", "0", "12", "0", "4", "0", "0"), fail, "[3 of 9 repetitions set aside"},
	}
	for _, c := range cases {
		line, v := lagTarget(c.out).assess()
		if v != c.want || !strings.Contains(line, c.note) || (c.note == "" && strings.Contains(line, "set aside")) {
			t.Errorf("%s: %v, want %v, line %q", c.name, v, c.want, line)
		}
	}
	if busy.String() != "inconclusive (host busy)" {
		t.Errorf("busy prints %q", busy)
	}
	// make bench's output holds other lines (steal summaries of older
	// runs, go test's own); only benchmark lines are results.
	rs, err := parse(strings.NewReader("steal BenchmarkSweep 14.0\nok  \tgithub.com/x\t1.0s\n" + lag()))
	if err != nil || len(rs) != 9 {
		t.Fatalf("%d benchmark lines (%v), want 9", len(rs), err)
	}
}

// The ensemble's target is its own wall seconds (a host-clock figure, its
// stolen-from repetitions set aside); the single-point fit beside it is
// printed, and so is their paired ratio.
func TestTheEnsembleIsTimedBesideTheSinglePointFit(t *testing.T) {
	var b strings.Builder
	for i, secs := range []string{"80", "95", "88", "101", "90", "85"} {
		b.WriteString("BenchmarkEnsemble/ensemble-2  1  1 ns/op  " + secs + " s/ensemble  1100 trials  70 s-own-cpus  25 acceptable  0.5 steal-%\n")
		b.WriteString("BenchmarkEnsemble/single-point-2  1  1 ns/op  " + []string{"40", "50", "44", "50", "45", "50"}[i] + " s/fit  900 trials  60 s-own-cpus  0.5 steal-%\n")
	}
	rs, err := parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var judged, ratio bool
	for _, tg := range targets(rs) {
		switch {
		case strings.HasPrefix(tg.label, "calibrate --fit's default ensemble"):
			judged = true
			if line, v := tg.assess(); v != pass || !strings.Contains(line, "target <= 120 s") {
				t.Errorf("ensemble at 80–101 s against 120 s: %v, %q", v, line)
			}
		case strings.Contains(tg.label, "/ the single-point fit"):
			ratio = true
			if tg.hasGoal || len(tg.xs) != 6 || tg.xs[0] != 2 {
				t.Errorf("ratio %v (goal %v), want six printed pairs, the first 80/40", tg.xs, tg.hasGoal)
			}
		}
	}
	if !judged || !ratio {
		t.Errorf("ensemble target %v, ratio %v: both wanted", judged, ratio)
	}
}
