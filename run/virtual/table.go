package virtual

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// Summary is one calibration trial: an arm, its seed and its metrics,
// computed by the metric registry from the trial's records as a run's
// trials are.
type Summary struct {
	Arm     string
	Seed    uint64
	Metrics map[string]float64
	// Extra are figures the calibration table shows beside the metrics.
	KillShare    float64 // low-priority queue kills ÷ departures
	WindowShare  float64 // share of the storm's victims that were $setWindowFields
	HasKillShare bool
}

// RunMatrix runs every arm for seeds base.Seed … base.Seed+n−1, trials in
// parallel, and summarizes each.
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
	out := make([]Summary, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := base
			cfg.Seed = j.seed
			t, err := Run(ctx, cfg, j.arm)
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = summarize(j.arm.Name, j.seed, t.Records)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Summarize is one trial's summary: its metrics from the metric registry
// and the calibration table's extra figures.
func Summarize(arm string, seed uint64, t Trial) Summary { return summarize(arm, seed, t.Records) }

func summarize(arm string, seed uint64, r store.Records) Summary {
	s := Summary{Arm: arm, Seed: seed, Metrics: metric.Summarize(r)}
	a, k := s.Metrics[metric.AdmissionsPerS], s.Metrics[metric.KillsPerS]
	if a+k > 0 {
		s.KillShare, s.HasKillShare = k/(a+k), true
	}
	if v := metric.VictimSummary(r.Results, r.Kills); v != nil && v.Count > 0 {
		s.WindowShare = float64(v.Stages["$setWindowFields"]) / float64(v.Count)
	}
	return s
}

// row is one printed line: how to read it from a trial, and what the
// sweeper investigation reported for arms D and E (empty where it says
// nothing).
type row struct {
	name      string
	get       func(Summary) float64
	format    string
	observedD string
	observedE string
}

func m(name string, scale float64) func(Summary) float64 {
	return func(s Summary) float64 { return s.Metrics[name] * scale }
}

var rows = []row{
	{"availability", m(metric.Availability, 1), "%.2f", "0.97", "0.41"},
	{"failovers", m(metric.Failovers, 1), "%.0f", "0", "crash-looping"},
	{"restarts (OOM)", m(metric.Restarts, 1), "%.0f", "0", "crash-looping"},
	{"read tickets min", m(metric.ReadTicketsMin, 1), "%.0f", "~10", "~10"},
	{"read tickets median", m(metric.ReadTicketsMed, 1), "%.0f", "10-14", "10-14"},
	{"low-pri admissions/s", m(metric.AdmissionsPerS, 1), "%.0f", "160", "~180"},
	{"low-pri kills/s", m(metric.KillsPerS, 1), "%.0f", "142", "0"},
	{"kills/departures", func(s Summary) float64 { return s.KillShare }, "%.2f", "0.47", "0"},
	{"sheds/s (server+actor)", m(metric.ShedsPerS, 1), "%.0f", "", ""},
	{"peak RSS GiB", m(metric.RSSPeakBytes, 1.0/(1<<30)), "%.1f", "", "OOM"},
	{"low-pri queue p95", m(metric.LowQueueP95, 1), "%.0f", "", "grows"},
	{"low-pri queue slope/s", m(metric.LowQueueSlope, 1), "%.1f", "bounded", "grows"},
	{"victim tracked p50 MiB", m(metric.VictimTrackedP50, 1.0/(1<<20)), "%.0f", "21", "21"},
	{"victims $setWindowFields", func(s Summary) float64 { return s.WindowShare }, "%.2f", "most", "most"},
	{"canary p99 ms", m(metric.CanaryP99Ms, 1), "%.0f", "", ""},
}

// Range is a figure's median and range over an arm's trials.
type Range struct{ Median, Min, Max float64 }

// Over returns the range of f over the trials of arm.
func Over(trials []Summary, arm string, f func(Summary) float64) Range {
	var xs []float64
	for _, t := range trials {
		if t.Arm == arm {
			xs = append(xs, f(t))
		}
	}
	if len(xs) == 0 {
		return Range{}
	}
	return Range{Median: metric.Quantile(xs, 0.5), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// WriteTable prints per arm the median [min–max] of each figure, with the
// investigation's figures for D and E beside them.
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
		for _, n := range names {
			s := Over(trials, n, r.get)
			med := fmt.Sprintf(r.format, s.Median)
			if s.Min != s.Max {
				med += " [" + fmt.Sprintf(r.format, s.Min) + "–" + fmt.Sprintf(r.format, s.Max) + "]"
			}
			fmt.Fprintf(tw, "%s\t", med)
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", dash(r.observedD), dash(r.observedE))
	}
	tw.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
