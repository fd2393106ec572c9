package virtual

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/parallel"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// Summary is one calibration trial: an arm, its seed and its figures —
// the metric registry's metrics, computed from the trial's records as a
// run's trials are, and the investigation's derived figures
// (investigation.KillShare, WindowShare, the queue-growth flows).
type Summary struct {
	Arm     string
	Seed    uint64
	Metrics map[string]float64
	// KillShare and WindowShare are Metrics' derived figures, kept as
	// fields for callers that read them directly.
	KillShare    float64 // low-priority queue kills ÷ departures
	WindowShare  float64 // share of the storm's victims that were $setWindowFields
	HasKillShare bool
}

// RunMatrix runs every arm for seeds base.Seed … base.Seed+n−1, trials in
// parallel (one per CPU), and summarizes each, in arm then seed order.
// The first trial to fail stops the matrix: no trial starts after it, the
// running ones are cancelled, and its error is RunMatrix's.
func RunMatrix(ctx context.Context, base Config, armList []arms.Arm, seeds int) ([]Summary, error) {
	type job struct {
		arm  arms.Arm
		seed uint64
	}
	var jobs []job
	for _, a := range armList {
		for i := range seeds {
			jobs = append(jobs, job{a, base.Seed + uint64(i)})
		}
	}
	out, err := parallel.Map(ctx, len(jobs), 0, func(ctx context.Context, i int) (Summary, error) {
		j := jobs[i]
		cfg := base
		cfg.Seed = j.seed
		t, err := Run(ctx, cfg, j.arm)
		if err != nil {
			return Summary{}, err
		}
		return summarize(j.arm.Name, j.seed, t.Records), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Summarize is one trial's summary: its metrics from the metric registry
// and the investigation's derived figures.
func Summarize(arm string, seed uint64, t Trial) Summary { return summarize(arm, seed, t.Records) }

func summarize(arm string, seed uint64, r store.Records) Summary {
	s := Summary{Arm: arm, Seed: seed, Metrics: metric.Summarize(r)}
	a, k := s.Metrics[metric.AdmissionsPerS], s.Metrics[metric.KillsPerS]
	if a+k > 0 {
		s.KillShare, s.HasKillShare = k/(a+k), true
		s.Metrics[investigation.KillShare] = s.KillShare
	}
	if v := metric.VictimSummary(r.Results, r.Kills); v != nil && v.Count > 0 {
		s.WindowShare = float64(v.Stages["$setWindowFields"]) / float64(v.Count)
		s.Metrics[investigation.WindowShare] = s.WindowShare
	}
	if d, ok := s.Metrics[metric.DeparturesPerS]; ok {
		s.Metrics[investigation.StormArrivalsPerS] = d + s.Metrics[metric.LowQueueSlope]
	}
	if arr, adm, secs, ok := growthFlows(r); ok {
		s.Metrics[investigation.GrowthArrivalsPerS] = arr
		s.Metrics[investigation.GrowthAdmissionsPerS] = adm
		s.Metrics[investigation.GrowthSeconds] = secs
	}
	return s
}

// growthFlows are the low-priority read queue's arrivals and admissions
// per second over the storm's sample intervals in which the primary's
// queue grew (both ends the same primary process): the flows "while the
// queue grows" that the investigation reported for E. ok is false when
// the queue never grew.
func growthFlows(r store.Records) (arrivals, admissions, seconds float64, ok bool) {
	from, to := r.PhaseStarts[store.PhaseStorm], r.PhaseStarts[store.PhaseRecovery]
	var prev *store.Sample
	var added, admitted float64
	for i := range r.Samples {
		smp := &r.Samples[i]
		if !smp.Up || !smp.Primary || smp.At.Before(from) || smp.At.After(to) {
			continue
		}
		if prev != nil && prev.Member == smp.Member && prev.ProcessID == smp.ProcessID {
			v, w := prev.Values, smp.Values
			if w["read.low.queueLength"] > v["read.low.queueLength"] {
				added += w["read.low.addedToQueue"] - v["read.low.addedToQueue"]
				admitted += (w["read.low.removedFromQueue"] - v["read.low.removedFromQueue"]) - (w["read.low.canceled"] - v["read.low.canceled"])
				seconds += smp.At.Sub(prev.At).Seconds()
			}
		}
		prev = smp
	}
	if seconds <= 0 {
		return 0, 0, 0, false
	}
	return added / seconds, admitted / seconds, seconds, true
}

// row is one printed line: how to read it from a trial; what the
// investigation reported beside it is investigation.Reported[name].
type row struct {
	name   string
	metric string
	scale  float64
	format string
}

var rows = []row{
	{"availability", metric.Availability, 1, "%.2f"},
	{"failovers", metric.Failovers, 1, "%.0f"},
	{"restarts (OOM)", metric.Restarts, 1, "%.0f"},
	{"read tickets min", metric.ReadTicketsMin, 1, "%.0f"},
	{"read tickets median", metric.ReadTicketsMed, 1, "%.0f"},
	{"low-pri admissions/s (with a primary)", metric.AdmissionsPerS, 1, "%.0f"},
	{"low-pri admissions/s (of storm)", metric.AdmissionsPerStormS, 1, "%.0f"},
	{"low-pri queue kills/s", metric.KillsPerS, 1, "%.0f"},
	{"kills/departures", investigation.KillShare, 1, "%.2f"},
	{"server sheds/s", metric.ServerShedsPerS, 1, "%.0f"},
	{"  of them the sweeper's", metric.ServerShedsQueuedPerS, 1, "%.0f"},
	{"actor kills/s", metric.ActorKillsPerS, 1, "%.0f"},
	{"  of low-pri queued ops", metric.ActorKillsLowQueuePerS, 1, "%.0f"},
	{"low-pri arrivals/s (storm)", investigation.StormArrivalsPerS, 1, "%.0f"},
	{"arrivals/s while growing", investigation.GrowthArrivalsPerS, 1, "%.0f"},
	{"admissions/s while growing", investigation.GrowthAdmissionsPerS, 1, "%.0f"},
	{"peak RSS GiB", metric.RSSPeakBytes, 1.0 / (1 << 30), "%.1f"},
	{"low-pri queue p95", metric.LowQueueP95, 1, "%.0f"},
	{"low-pri queue trend/s", metric.LowQueueSlope, 1, "%.1f"},
	{"victim tracked p50 MiB", metric.VictimTrackedP50, 1.0 / (1 << 20), "%.0f"},
	{"victims $setWindowFields", investigation.WindowShare, 1, "%.2f"},
	{"canary p99 ms", metric.CanaryP99Ms, 1, "%.0f"},
}

// Range is a figure's median and range over an arm's trials.
type Range struct{ Median, Min, Max float64 }

// Over returns the range of f over the trials of arm.
func Over(trials []Summary, arm string, f func(Summary) float64) Range {
	var xs []float64
	for _, t := range trials {
		if t.Arm == arm {
			if v := f(t); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
	}
	if len(xs) == 0 {
		return Range{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	return Range{Median: metric.Median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// Figures are the summaries' figures (Metrics), one map per trial, as the
// investigation's rules read them.
func Figures(trials []Summary) []investigation.Trial {
	out := make([]investigation.Trial, len(trials))
	for i, t := range trials {
		out[i] = t.Metrics
	}
	return out
}

// WriteTable prints per arm the median [min–max] of each figure, with the
// investigation's figures for D and E beside them; a figure a trial's
// records could not give is "–".
func WriteTable(w io.Writer, trials []Summary) {
	var names []string
	seeds := map[string]int{}
	for _, t := range trials {
		if !slices.Contains(names, t.Arm) {
			names = append(names, t.Arm)
		}
		seeds[t.Arm]++
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(w, "qmlsab calibration (SIMULATED: a model of mongod, not a measurement), spill_to_disk storm, %d seeds per arm\n\n", seeds[names[0]])
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "metric\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw, "observed D\tobserved E\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.name)
		get := func(s Summary) float64 {
			v, ok := s.Metrics[r.metric]
			if !ok {
				return math.NaN()
			}
			return v * r.scale
		}
		for _, n := range names {
			s := Over(trials, n, get)
			med := "–"
			if !math.IsNaN(s.Median) {
				med = fmt.Sprintf(r.format, s.Median)
				if s.Min != s.Max {
					med += " [" + fmt.Sprintf(r.format, s.Min) + "–" + fmt.Sprintf(r.format, s.Max) + "]"
				}
			}
			fmt.Fprintf(tw, "%s\t", med)
		}
		obs := investigation.Reported[r.metric]
		fmt.Fprintf(tw, "%s\t%s\t\n", dash(obs[0]), dash(obs[1]))
	}
	tw.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// reviewerCheck is a figure a reviewer of the model would hold against
// the investigation though the fit does not score it: what the
// investigation says of it, and how to read it.
type reviewerCheck struct {
	arm, name, observed string
	get                 func(trials []investigation.Trial) (float64, bool)
	format              string
	// lo…hi is the observed range when there is one (NaN: none to compare).
	lo, hi float64
}

func medianOf(name string, scale float64) func([]investigation.Trial) (float64, bool) {
	return func(ts []investigation.Trial) (float64, bool) {
		v := investigation.Observation{Metric: name, Scale: scale}.Value(ts)
		return v, !math.IsNaN(v)
	}
}

var reviewerChecks = []reviewerCheck{
	{arm: "D", name: "D low-pri queue slope after the fill, /s", observed: "bounded", get: medianOf(metric.LowQueueSlope, 1), format: "%+.2f", lo: math.NaN()},
	{arm: "D", name: "D trials flagged for sustained queue growth", observed: "none (bounded)", get: func(ts []investigation.Trial) (float64, bool) {
		n, seen := 0.0, false
		for _, t := range ts {
			if v, ok := t[metric.LowQueueGrowth]; ok {
				n, seen = n+v, true
			}
		}
		return n, seen
	}, format: "%.0f", lo: 0, hi: 0},
	{arm: "D", name: "D availability in the storm window", observed: "0.97 (window not reported)", get: medianOf(metric.AvailabilityStorm, 1), format: "%.3f", lo: math.NaN()},
	{arm: "E", name: "E availability in the storm window", observed: "0.41 (window not reported)", get: medianOf(metric.AvailabilityStorm, 1), format: "%.3f", lo: math.NaN()},
	{arm: "E", name: "E read tickets (median)", observed: "10–14", get: medianOf(metric.ReadTicketsMed, 1), format: "%.0f", lo: 10, hi: 14},
	{arm: "E", name: "E victims' tracked p50 MiB", observed: "21 (alike D's)", get: medianOf(metric.VictimTrackedP50, 1.0/(1<<20)), format: "%.1f", lo: 21, hi: 21},
	{arm: "F", name: "F availability (prediction)", observed: "the fix's target: > 0.9", get: medianOf(metric.Availability, 1), format: "%.2f", lo: 0.9, hi: 1},
	{arm: "F", name: "F failovers, most in a trial (prediction)", observed: "the fix's target: 0", get: func(ts []investigation.Trial) (float64, bool) {
		v := investigation.Observation{Metric: metric.Failovers, Reduce: investigation.Max}.Value(ts)
		return v, !math.IsNaN(v)
	}, format: "%.0f", lo: 0, hi: 0},
}

// WriteResiduals prints the investigation whole beside the trials: every
// observation the fit scores, with its residual and whether it is within
// tolerance, then the figures a reviewer would check that the fit does
// not score (D's queue trend, E's read tickets and victims, availability
// in the storm window, F's outcome), each with its residual where the
// investigation gives a figure. An arm that did not run is "–".
func WriteResiduals(w io.Writer, trials []Summary) {
	of := func(arm string) []investigation.Trial {
		var out []investigation.Trial
		for _, t := range trials {
			if t.Arm == arm {
				out = append(out, t.Metrics)
			}
		}
		return out
	}
	fmt.Fprintln(w, "\nThe investigation's observations, scored by the fit (residual: relative to the observed figure or the nearer end of its range):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "observation\tsimulated\tobserved\tresidual\ttolerance\tmatch\t")
	for _, o := range investigation.Observations {
		ts := of(o.Arm)
		if len(ts) == 0 {
			fmt.Fprintf(tw, "%s\t–\t%s\t–\t±%.2f\t(%s not run)\t\n", o.Name, o.Observed, o.Tol, o.Arm)
			continue
		}
		v := o.Value(ts)
		r := o.Residual(v)
		match := "NO"
		if o.Matches(r) {
			match = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%+.2f\t±%.2f\t%s\t\n", o.Name, o.FormatValue(v), o.Observed, r, o.Tol, match)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nWhat a reviewer would also check (not scored by the fit):")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tsimulated\tinvestigation\tresidual\t")
	for _, c := range reviewerChecks {
		ts := of(c.arm)
		v, ok := c.get(ts)
		sim, res := "–", "–"
		if len(ts) == 0 {
			sim = "(" + c.arm + " not run)"
		} else if ok {
			sim = fmt.Sprintf(c.format, v)
			if !math.IsNaN(c.lo) {
				res = fmt.Sprintf("%+.2f", investigation.Observation{Lo: c.lo, Hi: c.hi, Absolute: c.lo == 0}.Residual(v))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", c.name, sim, c.observed, res)
	}
	tw.Flush()
}
