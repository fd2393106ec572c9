package report

import (
	"fmt"
	"slices"

	"github.com/qmlsab/qmlsab/metric"
)

// Options shape an analysis.
type Options struct {
	// Baseline is the arm the others are compared with (default: the
	// first arm of the run).
	Baseline string
	Alpha    float64 // default 0.05
	Gates    *GateSet
}

// Arm is one arm's statistics.
type Arm struct {
	Name    string
	N       int // valid trials
	Invalid int
	Metrics map[string]Summary
	Gates   []GateResult
}

// Analysis is a report's content, before rendering.
type Analysis struct {
	In          *Input
	Baseline    string
	Alpha       float64
	MetricNames []string
	Arms        []Arm
	Comparisons []Comparison
	GateSet     *GateSet
	Warnings    []Warning
	// Hosts are per-host statistics and Stratified the arm comparisons
	// stratified by host (hosts.go); both empty when one host ran every
	// trial.
	Hosts      []HostStats
	Stratified []StratifiedComparison
}

// GatesPass reports whether every gate passed for every arm.
func (a *Analysis) GatesPass() bool {
	for _, arm := range a.Arms {
		for _, g := range arm.Gates {
			if !g.Pass {
				return false
			}
		}
	}
	return true
}

// Arm finds an arm's statistics.
func (a *Analysis) Arm(name string) *Arm {
	for i := range a.Arms {
		if a.Arms[i].Name == name {
			return &a.Arms[i]
		}
	}
	return nil
}

// Comparison finds an arm's comparison on a metric.
func (a *Analysis) Comparison(arm, metric string) (Comparison, bool) {
	for _, c := range a.Comparisons {
		if c.Arm == arm && c.Metric == metric {
			return c, true
		}
	}
	return Comparison{}, false
}

// Analyze computes the statistics of an input.
func Analyze(in *Input, opts Options) (*Analysis, error) {
	a := &Analysis{In: in, Baseline: opts.Baseline, Alpha: opts.Alpha, GateSet: opts.Gates, MetricNames: metricNames(in)}
	if a.Alpha <= 0 || a.Alpha >= 1 {
		a.Alpha = 0.05
	}
	if len(in.Arms) == 0 {
		return nil, fmt.Errorf("%s: the run has no trials", in.Dirs[0])
	}
	if a.Baseline == "" {
		a.Baseline = in.Arms[0]
	} else if !slices.Contains(in.Arms, a.Baseline) {
		return nil, fmt.Errorf("--baseline %q: the run's arms are %v", a.Baseline, in.Arms)
	}
	values := func(arm, metric string) []float64 {
		var v []float64
		for _, t := range in.Valid(arm) {
			if x, ok := t.Metrics[metric]; ok {
				v = append(v, x)
			}
		}
		return v
	}
	for _, name := range in.Arms {
		arm := Arm{Name: name, N: len(in.Valid(name)), Invalid: len(in.Trials[name]) - len(in.Valid(name)), Metrics: map[string]Summary{}}
		for _, m := range a.MetricNames {
			if v := values(name, m); len(v) > 0 {
				arm.Metrics[m] = Summarize(v, 0.95)
			}
		}
		if arm.Invalid > 0 {
			a.Warnings = append(a.Warnings, Warning{Arm: name, Text: fmt.Sprintf("%d invalid trial(s) left out (harness faults; reasons in the appendix)", arm.Invalid)})
		}
		if arm.N == 0 {
			a.Warnings = append(a.Warnings, Warning{Arm: name, Text: "no valid trials"})
		} else if s, ok := arm.Metrics["availability"]; ok {
			a.Warnings = append(a.Warnings, sampleWarnings("", name, s)...)
		} else {
			for _, m := range a.MetricNames {
				if s, ok := arm.Metrics[m]; ok {
					a.Warnings = append(a.Warnings, sampleWarnings("", name, s)...)
					break
				}
			}
		}
		if opts.Gates != nil {
			for _, g := range opts.Gates.Gates {
				arm.Gates = append(arm.Gates, g.Evaluate(name, arm.Metrics))
			}
		}
		a.Arms = append(a.Arms, arm)
	}
	for _, name := range in.Arms {
		if name == a.Baseline {
			continue
		}
		for _, m := range a.MetricNames {
			base, v := values(a.Baseline, m), values(name, m)
			if len(base) == 0 || len(v) == 0 {
				continue
			}
			c := Compare(m, a.Baseline, name, base, v, a.Alpha)
			a.Comparisons = append(a.Comparisons, c)
		}
		if n1, n2 := len(in.Valid(a.Baseline)), len(in.Valid(name)); n1 > 0 && n2 > 0 && MinP(n1, n2) > a.Alpha {
			a.Warnings = append(a.Warnings, Warning{Arm: name, Text: fmt.Sprintf("with %d vs %d trials no U test can reach p ≤ %.2f (the smallest possible p is %.3f)", n1, n2, a.Alpha, MinP(n1, n2))})
		}
	}
	if in.Runs > 1 {
		a.Warnings = append(a.Warnings, Warning{Text: fmt.Sprintf("%d runs combined; their trials are pooled per arm", in.Runs)})
	}
	for _, n := range in.Notes {
		a.Warnings = append(a.Warnings, Warning{Text: n})
	}
	a.analyzeHosts()
	if in.Unfinished > 0 {
		a.Warnings = append(a.Warnings, Warning{Text: fmt.Sprintf("%d trial(s) unfinished (run interrupted or still writing); only finished trials are reported", in.Unfinished)})
	}
	a.Warnings = append(a.Warnings, importWarnings(in)...) // imported.go
	if in.Simulated {
		a.Warnings = append(a.Warnings, Warning{Text: "SIMULATED: the trials ran against mongosim, a model of mongod; these are not measurements of a real server"})
	}
	return a, nil
}

// metricNames are the metrics present in any trial, in the registry's
// order, then unknown ones sorted.
func metricNames(in *Input) []string {
	present := map[string]bool{}
	for _, ts := range in.Trials {
		for _, t := range ts {
			for k := range t.Metrics {
				present[k] = true
			}
		}
	}
	return metric.Ordered(present)
}
