package calibrate

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/qmlsab/qmlsab/arms"
)

// RunMatrix runs every arm for seeds 1..n (base+i), trials in parallel.
func RunMatrix(base Config, armList []arms.Arm, seeds int) ([]Trial, error) {
	type job struct {
		arm  arms.Arm
		seed uint64
	}
	var jobs []job
	for _, a := range armList {
		for i := 0; i < seeds; i++ {
			jobs = append(jobs, job{a, base.Seed + uint64(i)})
		}
	}
	trials := make([]Trial, len(jobs))
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
			trials[i], errs[i] = Run(cfg, j.arm)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return trials, nil
}

// row is one printed metric: how to read it from a trial, and what the
// seed document reported for arms D and E (empty where it says nothing).
type row struct {
	name   string
	get    func(Metrics) float64
	format string
	seedD  string
	seedE  string
}

var rows = []row{
	{"availability", func(m Metrics) float64 { return m.Availability }, "%.2f", "0.97", "0.41"},
	{"failovers", func(m Metrics) float64 { return float64(m.Failovers) }, "%.0f", "0", "crash-looping"},
	{"restarts (OOM)", func(m Metrics) float64 { return float64(m.Restarts) }, "%.0f", "0", "crash-looping"},
	{"read tickets min", func(m Metrics) float64 { return float64(m.ReadTicketsMin) }, "%.0f", "~10", "~10"},
	{"read tickets median", func(m Metrics) float64 { return m.ReadTicketsMedian }, "%.0f", "10-14", "10-14"},
	{"low-pri admissions/s", func(m Metrics) float64 { return m.AdmissionsPerSec }, "%.0f", "160", "~180"},
	{"low-pri kills/s", func(m Metrics) float64 { return m.KillsPerSec }, "%.0f", "142", "0"},
	{"kills/departures", func(m Metrics) float64 { return share(m) }, "%.2f", "0.47", "0"},
	{"sheds/s (server+actor)", func(m Metrics) float64 { return m.ShedsPerSec }, "%.0f", "", ""},
	{"peak RSS GiB", func(m Metrics) float64 { return float64(m.RSSPeakBytes) / (1 << 30) }, "%.1f", "", "OOM"},
	{"low-pri queue p95", func(m Metrics) float64 { return m.LowQueueP95 }, "%.0f", "", "grows"},
	{"low-pri queue slope/s", func(m Metrics) float64 { return m.LowQueueSlope }, "%.1f", "bounded", "grows"},
	{"victim tracked p50 MiB", func(m Metrics) float64 { return float64(m.VictimTrackedP50) / (1 << 20) }, "%.0f", "21", "21"},
	{"victims $setWindowFields", func(m Metrics) float64 { return stageShare(m, "$setWindowFields") }, "%.2f", "most", "most"},
	{"canary p99 ms", func(m Metrics) float64 { return float64(m.CanaryP99.Milliseconds()) }, "%.0f", "", ""},
}

func share(m Metrics) float64 {
	d := m.LowAdmissions + m.LowKills
	if d == 0 {
		return 0
	}
	return float64(m.LowKills) / float64(d)
}

func stageShare(m Metrics, stage string) float64 {
	total := 0
	for _, n := range m.VictimStages {
		total += n
	}
	if total == 0 {
		return 0
	}
	return float64(m.VictimStages[stage]) / float64(total)
}

// Summary is a metric's median and range over an arm's trials.
type Summary struct{ Median, Min, Max float64 }

// Summarize returns the summary of metric f over the trials of arm.
func Summarize(trials []Trial, arm string, f func(Metrics) float64) Summary {
	var xs []float64
	for _, t := range trials {
		if t.Arm == arm {
			xs = append(xs, f(t.Metrics))
		}
	}
	if len(xs) == 0 {
		return Summary{}
	}
	return Summary{Median: quantile(xs, 0.5), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// WriteTable prints per arm the median [min–max] of each metric, with the
// seed document's figures for D and E beside them.
func WriteTable(w io.Writer, trials []Trial) {
	var names []string
	seeds := map[string]int{}
	for _, t := range trials {
		if !slices.Contains(names, t.Arm) {
			names = append(names, t.Arm)
		}
		seeds[t.Arm]++
	}
	fmt.Fprintf(w, "mongosim calibration (SIMULATED: a model of mongod, not a measurement), spill_to_disk storm, %d seeds per arm\n\n", seeds[names[0]])
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "metric\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw, "seed D\tseed E\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.name)
		for _, n := range names {
			s := Summarize(trials, n, r.get)
			med := fmt.Sprintf(r.format, s.Median)
			if s.Min != s.Max {
				med += " [" + fmt.Sprintf(r.format, s.Min) + "–" + fmt.Sprintf(r.format, s.Max) + "]"
			}
			fmt.Fprintf(tw, "%s\t", med)
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", dash(r.seedD), dash(r.seedE))
	}
	tw.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
