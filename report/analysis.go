package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// FieldBaseline is Options.Baseline, as an error names it
// (internal/field): a command maps it to the flag that sets it.
const FieldBaseline = "Options.Baseline"

// Options shape an analysis.
type Options struct {
	// Baseline is the arm the others are compared with (default: the
	// first arm of the run).
	Baseline string
	Alpha    float64 // default 0.05
	Gates    *GateSet
	// AllowPartial lets the gates judge an incomplete run (unfinished
	// trials, missing shards) on its finished trials; without it such a
	// run fails the gate set (GateFailures).
	AllowPartial bool
	// GatePredictions lets the gates of predicted arms decide the gate
	// set (GateResult.Prediction); without it they are reported only.
	GatePredictions bool
}

// Arm is one arm's statistics.
type Arm struct {
	Name    string
	N       int // valid trials
	Invalid int
	Metrics map[string]Summary
	// Absent says, by metric, why the arm has no value of a metric the
	// report shows (its trials' reasons, metric.Explain): shown as "–"
	// with the reason, never as zero.
	Absent map[string]string
	// Censored are the metrics some of whose valid trials hold only a
	// lower bound (store.Trial.AtLeast: a latency a client timeout cut
	// short): summarized apart, never in Metrics, so no mean, test or
	// gate reads a bound as a measurement.
	Censored map[string]Censored
	Gates    []GateResult
	// Outage is how much of their storms the arm's valid trials had no
	// primary for.
	Outage Outage
}

// Censored is an arm's summary of a metric whose trial values are partly
// lower bounds: the median, minimum and maximum over the trials, each
// marked when it is itself only a lower bound (metric.CensoredQuantile's
// rule), and how many of the values are bounds.
type Censored struct {
	Values                                []float64
	AtLeast                               []bool
	Bounds                                int
	Median, Min, Max                      float64
	MedianAtLeast, MinAtLeast, MaxAtLeast bool
}

// censoredSummary summarizes values of which those marked are bounds.
func censoredSummary(values []float64, atLeast []bool) Censored {
	c := Censored{Values: values, AtLeast: atLeast}
	for _, b := range atLeast {
		if b {
			c.Bounds++
		}
	}
	c.Median, c.MedianAtLeast = metric.CensoredQuantile(values, atLeast, 0.5)
	c.Min, c.MinAtLeast = metric.CensoredQuantile(values, atLeast, 0)
	c.Max, c.MaxAtLeast = metric.CensoredQuantile(values, atLeast, 1)
	return c
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
	// AllowPartial is Options.AllowPartial.
	AllowPartial bool
	Warnings     []Warning
	// Hosts are per-host statistics and Stratified the arm comparisons
	// stratified by host (hosts.go); both empty when one host ran every
	// trial.
	Hosts      []HostStats
	Stratified []StratifiedComparison
}

// GatesPass reports whether the gate set passes: GateFailures is empty.
func (a *Analysis) GatesPass() bool { return len(a.GateFailures()) == 0 }

// GateFailures are the reasons the gate set fails, each naming the arm,
// the gate and the metric where there is one. The set fails closed: a
// gate that did not meet its expectation (a failure, or an expected
// failure that passed), a gate with no data (its metric absent, or only
// a lower bound), an arm of the run a gate applies to without a valid
// trial, a run without a finished trial, and an incomplete run (trials
// unfinished, shards missing) unless AllowPartial. A prediction's gate
// (GateResult.Informational) is reported and decides nothing. Nil without
// a gate set.
func (a *Analysis) GateFailures() []string {
	if a.GateSet == nil {
		return nil
	}
	var out []string
	if a.In.Finished == 0 && a.In.Planned > 0 || len(a.In.Trials) == 0 {
		out = append(out, fmt.Sprintf("no trial finished (%d planned): there is nothing to judge", a.In.Planned))
	}
	if inc := a.In.Incomplete(); inc != "" && !a.AllowPartial {
		out = append(out, fmt.Sprintf("the run is incomplete (%s): its gates are not judged on part of it; finish the run (resume it), or let the gates judge the finished trials (allow a partial run)", inc))
	}
	for _, arm := range a.Arms {
		var gates []string
		for _, g := range arm.Gates {
			// An arm that measured nothing fails even a gate of the model's
			// account: a night whose run died never passes.
			if !g.NotApplicable {
				gates = append(gates, fmt.Sprintf("%q", g.Gate.Name))
			}
		}
		if arm.N == 0 && len(gates) > 0 {
			out = append(out, fmt.Sprintf("arm %s has no valid trial (%s): its gates %s cannot be judged", arm.Name, armTrialCounts(a.In, arm), strings.Join(gates, ", ")))
			continue
		}
		for _, g := range arm.Gates {
			switch {
			case g.NotApplicable, g.Informational, g.AsExpected():
			case g.NoData:
				out = append(out, fmt.Sprintf("arm %s, gate %q: no data (%s); a gate that cannot be judged fails", arm.Name, g.Gate.Name, g.Reason))
			default:
				out = append(out, fmt.Sprintf("arm %s, gate %q: %s", arm.Name, g.Gate.Name, g.Line()))
			}
		}
	}
	return out
}

// armTrialCounts says what became of an arm's trials: "2 invalid, 3
// unfinished", or "none finished".
func armTrialCounts(in *Input, arm Arm) string {
	unfinished := 0
	for _, m := range in.Manifests {
		for _, ts := range m.Trials {
			if ts.Arm == arm.Name && ts.Status != store.Valid && ts.Status != store.Invalid {
				unfinished++
			}
		}
	}
	var parts []string
	if arm.Invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d invalid", arm.Invalid))
	}
	if unfinished > 0 {
		parts = append(parts, fmt.Sprintf("%d unfinished", unfinished))
	}
	if len(parts) == 0 {
		return "none finished"
	}
	return strings.Join(parts, ", ")
}

// AbsentNote is the 1-based number of the warning that says why an arm
// has no value of a metric, and the reason; 0 and "" when it has one.
func (a *Analysis) AbsentNote(arm, metric string) (int, string) {
	ar := a.Arm(arm)
	if ar == nil || ar.Absent[metric] == "" {
		return 0, ""
	}
	why := ar.Absent[metric]
	for i, w := range a.Warnings {
		if w.Arm == arm && w.Metric == absentMetrics && strings.HasSuffix(w.Text, ": "+why) {
			return i + 1, why
		}
	}
	return 0, why
}

// absentMetrics marks the warnings that list an arm's absent metrics.
const absentMetrics = "(absent)"

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
	a := &Analysis{In: in, Baseline: opts.Baseline, Alpha: opts.Alpha, GateSet: opts.Gates, AllowPartial: opts.AllowPartial, MetricNames: metricNames(in)}
	if a.Alpha <= 0 || a.Alpha >= 1 {
		a.Alpha = 0.05
	}
	if len(in.Arms) == 0 {
		return nil, fmt.Errorf("%s: the run has no trials", in.Dirs[0])
	}
	if a.Baseline == "" {
		a.Baseline = in.Arms[0]
	} else if !slices.Contains(in.Arms, a.Baseline) {
		return nil, field.Errorf(FieldBaseline, strconv.Quote(a.Baseline), "the run's arms are %v", in.Arms)
	}
	if opts.Gates != nil {
		if err := opts.Gates.CheckArms(in.Arms); err != nil {
			return nil, err
		}
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
	// bounds are an arm's trial values of a metric with, for each,
	// whether it is only a lower bound; none when no trial's is.
	bounds := func(arm, metric string) (v []float64, atLeast []bool) {
		censored := false
		for _, t := range in.Valid(arm) {
			if x, ok := t.Metrics[metric]; ok {
				v, atLeast = append(v, x), append(atLeast, false)
			} else if x, ok := t.AtLeast[metric]; ok {
				v, atLeast, censored = append(v, x), append(atLeast, true), true
			}
		}
		if !censored {
			return nil, nil
		}
		return v, atLeast
	}
	censoredIn := map[string]bool{} // "arm\x00metric"
	for _, name := range in.Arms {
		arm := Arm{Name: name, N: len(in.Valid(name)), Invalid: len(in.Trials[name]) - len(in.Valid(name)), Metrics: map[string]Summary{},
			Outage: outageOf(in.Valid(name))}
		arm.Absent, arm.Censored = map[string]string{}, map[string]Censored{}
		for _, m := range a.MetricNames {
			if v, atLeast := bounds(name, m); v != nil {
				c := censoredSummary(v, atLeast)
				arm.Censored[m] = c
				censoredIn[name+"\x00"+m] = true
				a.Warnings = append(a.Warnings, Warning{Arm: name, Metric: m, Text: fmt.Sprintf("%s: %d of %d trials give only a lower bound (a canary the client's timeout cut short): summarized as \"≥ …\", never averaged, tested or gated as a measurement",
					metric.Lookup(m).Title, c.Bounds, len(v))})
			} else if v := values(name, m); len(v) > 0 {
				arm.Metrics[m] = Summarize(v, 0.95)
			} else {
				arm.Absent[m] = absentReason(in.Valid(name), m)
			}
		}
		a.Warnings = append(a.Warnings, absentWarnings(name, arm.Absent)...)
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
				if !opts.Gates.AppliesTo(g, name) {
					arm.Gates = append(arm.Gates, GateResult{Gate: g, Arm: name, NotApplicable: true})
					continue
				}
				r := g.Evaluate(name, arm.Metrics)
				// On the model, F's and G's outcomes are its predictions; and
				// while the model does not reproduce the investigation
				// (investigation.Fitted), the built-in set's expectations of
				// D and E (hold, fall) on simulated trials test the model's
				// fit, not a build: both are reported, not gated, unless
				// --gate-predictions.
				unreproduced := !investigation.Fitted.Reproduced && opts.Gates.Name == SweeperAcceptance.Name && investigation.Observed(name)
				r.Prediction = (investigation.PredictedArm(name) || unreproduced) && armSimulated(in, name)
				r.Informational = r.Prediction && !opts.GatePredictions
				if r.NoData && arm.N == 0 && !r.Informational {
					r.Reason = "no valid trial: the arm measured nothing, which fails the gate set"
					a.Warnings = append(a.Warnings, Warning{Arm: name, Metric: g.Metric,
						Text: fmt.Sprintf("gate %q: %s", g.Name, r.Reason)})
				} else if r.NoData {
					r.Reason = noDataReason(g, arm)
					a.Warnings = append(a.Warnings, Warning{Arm: name, Metric: g.Metric,
						Text: fmt.Sprintf("gate %q has no data (%s): a gate that cannot be judged fails the gate set", g.Name, r.Reason)})
				}
				arm.Gates = append(arm.Gates, r)
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
			if len(base) == 0 || len(v) == 0 || censoredIn[a.Baseline+"\x00"+m] || censoredIn[name+"\x00"+m] {
				continue // a lower bound is no value to compare
			}
			c := Compare(m, a.Baseline, name, base, v, a.Alpha)
			c.OverOutage = primaryOnly[m] && (a.Arm(a.Baseline).Outage.Any() || a.Arm(name).Outage.Any())
			c.Direction = direction(c, c.OverOutage)
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

// armSimulated reports whether an arm's trials ran on a model: it is an
// embedded arm of a run, or one of its trials says it was simulated (a
// local target running cmd/mongosim).
func armSimulated(in *Input, arm string) bool {
	for _, m := range in.Manifests {
		for _, a := range m.ArmList {
			if a.Name == arm && a.Target == "embedded" {
				return true
			}
		}
	}
	return slices.ContainsFunc(in.Trials[arm], func(t Trial) bool { return t.Trial.Simulated })
}

// metricNames are the metrics present in any trial, or absent from one
// with a reason (a metric the server never reported is shown as "–" with
// the reason, not left out), in the registry's order, then unknown ones
// sorted.
func metricNames(in *Input) []string {
	present := map[string]bool{}
	for _, ts := range in.Trials {
		for _, t := range ts {
			for k := range t.Metrics {
				present[k] = true
			}
			for k := range t.Absent {
				present[k] = true
			}
			for k := range t.AtLeast {
				present[k] = true
			}
		}
	}
	return metric.Ordered(present)
}

// absentReason is why none of an arm's valid trials has a metric: their
// reasons, each once, or that there is no valid trial.
func absentReason(trials []Trial, m string) string {
	if len(trials) == 0 {
		return "no valid trials"
	}
	var reasons []string
	for _, t := range trials {
		if why := t.Absent[m]; why != "" && !slices.Contains(reasons, why) {
			reasons = append(reasons, why)
		}
	}
	if len(reasons) == 0 {
		if metric.IsRetired(m) {
			return "retired: " + metric.Lookup(m).Definition
		}
		return "no trial recorded it"
	}
	return strings.Join(reasons, "; ")
}

// absentWarnings are an arm's absent metrics as footnotes, one per reason
// ("E: absent, sheds/s, …: the server reported no queryMemory.loadShedding").
func absentWarnings(arm string, absent map[string]string) []Warning {
	byReason := map[string][]string{}
	var order []string
	for _, m := range metric.Ordered(boolKeys(absent)) {
		why := absent[m]
		if why == "no valid trials" {
			continue // the arm's own warning says so
		}
		if byReason[why] == nil {
			order = append(order, why)
		}
		byReason[why] = append(byReason[why], metric.Lookup(m).Title)
	}
	var out []Warning
	for _, why := range order {
		out = append(out, Warning{Arm: arm, Metric: absentMetrics,
			Text: fmt.Sprintf("absent (shown –), %s: %s", strings.Join(byReason[why], ", "), why)})
	}
	return out
}

func boolKeys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// noDataReason is why a gate has no data for an arm.
func noDataReason(g Gate, arm Arm) string {
	for _, m := range []string{g.Metric, g.Than} {
		if m == "" {
			continue
		}
		if _, ok := arm.Metrics[m]; !ok {
			if c, ok := arm.Censored[m]; ok {
				return fmt.Sprintf("%s: %d of %d trials give only a lower bound (a client timeout), which no gate reads as a measurement", m, c.Bounds, len(c.Values))
			}
			if metric.IsRetired(m) {
				return m + ": retired, no longer computed (" + metric.Lookup(m).Definition + ")"
			}
			if why := arm.Absent[m]; why != "" {
				return m + ": " + why
			}
			return m + ": no valid trial has it"
		}
	}
	return ""
}
