package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qmlsab/qmlsab/internal/yamlfile"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// Gate is a check over an arm's trial metrics: Of (median, mean, min,
// max) of Metric, compared by Op with Value or with the same statistic of
// metric Than.
type Gate struct {
	Name   string  `yaml:"name"`
	Metric string  `yaml:"metric"`
	Of     string  `yaml:"of,omitempty"`
	Op     string  `yaml:"op"`
	Value  float64 `yaml:"value,omitempty"`
	Than   string  `yaml:"than,omitempty"`
	// Why explains the gate in the report.
	Why string `yaml:"why,omitempty"`
	// Arms are the arms the gate applies to; "*" stands for every arm no
	// other gate of the set names. Empty: every arm.
	Arms []string `yaml:"arms,omitempty"`
	// Expect is the gate's expected outcome: "pass" (the default) or
	// "fail" — a known-bad control, like an expected test failure. A gate
	// meets its expectation when it passes as expected or fails as
	// expected; an expected failure that passes fails the set.
	Expect string `yaml:"expect,omitempty"`
	// Condition, on a built-in gate of the fix's acceptance, names the
	// investigation's condition it checks (investigation.FAcceptance), so
	// that a report of the model quotes what the ensemble predicts of it.
	Condition string `yaml:"-"`

	// armsLine is where the gate's arms list is written in its file (0
	// for a built-in gate), for CheckArms's errors.
	armsLine int
}

// Expected outcomes of a gate.
const (
	ExpectPass = "pass"
	ExpectFail = "fail"
)

// AppliesTo reports whether gate g of the set applies to arm.
func (gs GateSet) AppliesTo(g Gate, arm string) bool {
	if len(g.Arms) == 0 || slices.Contains(g.Arms, arm) {
		return true
	}
	if !slices.Contains(g.Arms, "*") {
		return false
	}
	for _, o := range gs.Gates {
		if slices.Contains(o.Arms, arm) {
			return false
		}
	}
	return true
}

// GateSet is a named list of gates.
type GateSet struct {
	Name  string `yaml:"name"`
	Gates []Gate `yaml:"gates"`
	// File is the gate file the set was read from (ParseGates); empty
	// for a built-in set.
	File string `yaml:"-"`
}

// CheckArms refuses a gate file whose gates name an arm the run does not
// have: such a gate would evaluate nothing for it and the set would pass
// without it, so a misspelt or stale arm name is an error naming the file,
// the line of the arms list and the run's arms. "*" names no arm. A
// built-in set is per investigation arm (D, E, F) and runs on any subset
// of them, so it is not checked.
func (gs GateSet) CheckArms(runArms []string) error {
	if gs.File == "" {
		return nil
	}
	for _, g := range gs.Gates {
		for _, a := range g.Arms {
			if a != "*" && !slices.Contains(runArms, a) {
				return fmt.Errorf("%s:%d: gate %q: arms: %q is not an arm of this run (its arms: %s)", gs.File, max(g.armsLine, 1), g.Name, a, strings.Join(runArms, ", "))
			}
		}
	}
	return nil
}

// SweeperAcceptance is the sweeper investigation as a regression test
// (docs/investigations.md; the thresholds are package investigation's):
// D, the killOp actor, holds (availability above 0.9, no failover); E, the
// inline shedder alone, falls (availability at most 0.6, a failover and an
// OOM restart in every trial) — a known-bad control, so an E that stops
// falling fails the set as much as a D that stops holding; F, the sweeper,
// and any arm the set does not name, get the investigation's acceptance as
// written.
var SweeperAcceptance = GateSet{Name: "sweeper-acceptance", Gates: []Gate{
	{Name: "D holds: available", Metric: metric.Availability, Of: "median", Op: ">", Value: investigation.HoldsAvailability, Arms: []string{"D"},
		Why: "D (the killOp actor) held in the investigation: canary availability above 0.9"},
	{Name: "D holds: no failover", Metric: metric.Failovers, Of: "max", Op: "==", Value: 0, Arms: []string{"D"},
		Why: "D never failed over in the investigation"},
	{Name: "E falls: unavailable", Metric: metric.Availability, Of: "median", Op: "<=", Value: investigation.FallsAvailability, Arms: []string{"E"},
		Why: "E (the inline shedder alone) fell in the investigation: availability 0.41"},
	{Name: "E falls: fails over every trial", Metric: metric.Failovers, Of: "min", Op: ">=", Value: 1, Arms: []string{"E"},
		Why: "E crash-looped: at least one failover in every trial"},
	{Name: "E falls: OOM every trial", Metric: metric.Restarts, Of: "min", Op: ">=", Value: 1, Arms: []string{"E"},
		Why: "E crash-looped: at least one OOM restart in every trial"},
	{Name: "available", Metric: metric.Availability, Of: "median", Op: ">", Value: investigation.HoldsAvailability, Arms: []string{"F", "*"},
		Why: "the fix's acceptance: canary availability above 0.9", Condition: investigation.FAcceptance[0].Name},
	{Name: "no failover", Metric: metric.Failovers, Of: "max", Op: "==", Value: 0, Arms: []string{"F", "*"},
		Why: "no trial saw a primary change (counts compared as counts)", Condition: investigation.FAcceptance[1].Name},
	{Name: "queue bounded", Metric: metric.LowQueueGrowth, Of: "max", Op: "==", Value: 0, Arms: []string{"F", "*"},
		Why: "no trial's low-priority queue kept growing in the storm after its fill (trend test with autocorrelation-robust errors, one-sided p < 0.01, ≥ 10 ops)", Condition: investigation.FAcceptance[2].Name},
	{Name: "sheds outpace admissions", Metric: metric.ServerShedsPerS, Of: "median", Op: ">", Than: metric.AdmissionsPerS, Arms: []string{"F", "*"},
		Why:       "the server's own sheds/s above low-priority admissions/s in the storm (a killOp actor's kills never count). A queued op leaves by a ticket or a shed, so queued sheds ≈ arrivals − admissions: with D's observed flows (302 arrivals, 160 admissions/s) that is ~142 < 160, so this holds only through inline sheds of ticket holders",
		Condition: investigation.FAcceptance[3].Name},
}}

// EnsemblePrediction is what calibrate --fit's ensemble predicts of the
// fix's condition a built-in gate checks, in the ensemble's words
// ("predicted", "uncertain", "predicted not met", with the share of fits ×
// seeds): a model run's F passing or failing a gate is one setting and a
// few seeds, the ensemble every setting the investigation allows. Empty
// for any other gate.
func EnsemblePrediction(g Gate) string {
	words, ok := investigation.Ensemble.Words(g.Condition)
	if g.Condition == "" || !ok {
		return ""
	}
	return "the model's ensemble (qmlsab calibrate --fit, on the investigation's observations) for F and G: " + words
}

// BuiltinGates are the gate sets known by name; seed000 is the name the
// sweeper acceptance had first, kept so that existing jobs keep working.
var BuiltinGates = map[string]GateSet{"sweeper-acceptance": SweeperAcceptance, "seed000": SweeperAcceptance}

// GateResult is a gate evaluated for one arm.
type GateResult struct {
	Gate  Gate
	Arm   string
	Value float64 // the statistic of the metric
	// Threshold is the value compared with (Than's statistic when set).
	Threshold float64
	// Pass: the gate's condition holds (whatever was expected).
	Pass bool
	// NoData: the arm has no valid trial with the metric (or with Than's),
	// so the gate can be judged neither way. A metric the server never
	// reported is not a zero to compare, so the report says "no data" with
	// Reason and a warning; and a gate that cannot be judged is not a
	// pass: it fails the gate set (Analysis.GateFailures), which fails
	// closed.
	NoData bool
	Reason string
	// NotApplicable: the gate is not one of this arm's (Gate.Arms).
	NotApplicable bool
	// Prediction: the arm's outcome is the model's prediction (a simulated
	// arm the investigations predict, investigation.PredictedArm), not an
	// acceptance of anything observed. Informational: such a gate is
	// reported but does not decide the gate set (Options.GatePredictions
	// makes it decide).
	Prediction, Informational bool
}

// ExpectsFailure reports whether the gate is an expected failure.
func (g Gate) ExpectsFailure() bool { return g.Expect == ExpectFail }

// AsExpected reports whether the gate met its expectation: it passed and
// was expected to, or failed and was expected to. No data and a gate that
// does not apply are neither.
func (r GateResult) AsExpected() bool {
	return !r.NoData && !r.NotApplicable && r.Pass != r.Gate.ExpectsFailure()
}

// Verdict is the gate's result as people read it: pass, FAIL, "fails, as
// expected", UNEXPECTED PASS, no data, or "–" for a gate of other arms.
func (r GateResult) Verdict() string {
	switch {
	case r.NotApplicable:
		return "–"
	case r.NoData:
		return "no data"
	case r.Gate.ExpectsFailure() && r.Pass:
		return "UNEXPECTED PASS"
	case r.Gate.ExpectsFailure():
		return "fails, as expected"
	case r.Pass:
		return "pass"
	}
	return "FAIL"
}

// Detail is what the verdict rests on, as what was compared
// ("lowpri_queue_sustained_growth max = 1, want == 0"), or why there is no data.
func (r GateResult) Detail() string {
	if r.NotApplicable {
		return "not a gate of arm " + r.Arm
	}
	if r.NoData {
		if r.Reason == "" {
			return "no valid trial has " + r.Gate.Metric
		}
		return r.Reason
	}
	of := r.Gate.Of
	if of == "" {
		of = "median"
	}
	want := metric.Number(r.Threshold)
	if r.Gate.Than != "" {
		want = fmt.Sprintf("%s %s = %s", r.Gate.Than, of, metric.Number(r.Threshold))
	}
	d := fmt.Sprintf("%s %s = %s, want %s %s", r.Gate.Metric, of, metric.Number(r.Value), r.Gate.Op, want)
	if r.Informational {
		d += "; " + InformationalNote
	}
	return d
}

// InformationalNote says why a prediction's gate does not decide the set.
const InformationalNote = "the model's account (a prediction, or an observation the model does not reproduce): reported, not gated (--gate-predictions gates it)"

// Line is the gate's one-line result: "pass (availability median = 0.98,
// want > 0.9)", "FAIL (…)" or "no data (the server reported no …)".
func (r GateResult) Line() string { return r.Verdict() + " (" + r.Detail() + ")" }

func statOf(s Summary, of string) float64 {
	switch of {
	case "mean":
		return s.Mean
	case "min":
		return s.Min
	case "max":
		return s.Max
	}
	return s.Median
}

// Evaluate checks a gate against an arm's summaries.
func (g Gate) Evaluate(arm string, sums map[string]Summary) GateResult {
	r := GateResult{Gate: g, Arm: arm}
	s, ok := sums[g.Metric]
	if !ok || s.N == 0 {
		r.NoData = true
		return r
	}
	r.Value, r.Threshold = statOf(s, g.Of), g.Value
	if g.Than != "" {
		t, ok := sums[g.Than]
		if !ok || t.N == 0 {
			r.NoData = true
			return r
		}
		r.Threshold = statOf(t, g.Of)
	}
	switch g.Op {
	case ">":
		r.Pass = r.Value > r.Threshold
	case ">=":
		r.Pass = r.Value >= r.Threshold
	case "<":
		r.Pass = r.Value < r.Threshold
	case "<=":
		r.Pass = r.Value <= r.Threshold
	case "==":
		r.Pass = r.Value == r.Threshold
	}
	return r
}

// String is the gate as a condition: "median availability > 0.9".
func (g Gate) String() string {
	of := g.Of
	if of == "" {
		of = "median"
	}
	rhs := metric.Number(g.Value)
	if g.Than != "" {
		rhs = of + " " + g.Than
	}
	return fmt.Sprintf("%s %s %s %s", of, g.Metric, g.Op, rhs)
}

// LoadGates is a built-in gate set's name or a gate YAML file.
func LoadGates(nameOrFile string) (GateSet, error) {
	if gs, ok := BuiltinGates[nameOrFile]; ok {
		return gs, nil
	}
	b, err := store.ReadFileCapped(nameOrFile, store.MaxSpecFileBytes)
	if err != nil {
		return GateSet{}, fmt.Errorf("gates %q: not a built-in set (sweeper-acceptance) and not a readable file: %w", nameOrFile, err)
	}
	return ParseGates(nameOrFile, b)
}

// ParseGates reads a gate file strictly; errors name the file and line.
// A gate compares its metric with value or with the metric than, never
// both, and both metrics must be metrics of the registry: a misspelt name
// would otherwise say "no data" and pass the set. The arms a gate names
// are checked when the gates meet a run (CheckArms).
func ParseGates(file string, data []byte) (GateSet, error) {
	var gs GateSet
	root, err := yamlfile.DecodeStrict(file, data, &gs)
	if err != nil {
		return gs, err
	}
	gs.File = file
	line := func(i int, key ...string) int {
		return yamlfile.Line(root, append([]string{"gates", strconv.Itoa(i)}, key...)...)
	}
	if gs.Name == "" {
		return gs, fmt.Errorf("%s:1: missing name", file)
	}
	if len(gs.Gates) == 0 {
		return gs, fmt.Errorf("%s:1: no gates", file)
	}
	for i, g := range gs.Gates {
		switch {
		case g.Metric == "":
			return gs, fmt.Errorf("%s:%d: gate without a metric", file, line(i))
		case g.Op != ">" && g.Op != ">=" && g.Op != "<" && g.Op != "<=" && g.Op != "==":
			return gs, fmt.Errorf("%s:%d: op %q: want >, >=, <, <= or ==", file, line(i), g.Op)
		case g.Of != "" && g.Of != "median" && g.Of != "mean" && g.Of != "min" && g.Of != "max":
			return gs, fmt.Errorf("%s:%d: of %q: want median, mean, min or max", file, line(i), g.Of)
		case math.IsNaN(g.Value) || math.IsInf(g.Value, 0):
			return gs, fmt.Errorf("%s:%d: value must be a finite number", file, line(i))
		case g.Expect != "" && g.Expect != ExpectPass && g.Expect != ExpectFail:
			return gs, fmt.Errorf("%s:%d: expect %q: want pass or fail", file, line(i), g.Expect)
		case slices.Contains(g.Arms, ""):
			return gs, fmt.Errorf("%s:%d: arms: an empty arm name", file, line(i))
		case !metric.Known(g.Metric):
			return gs, fmt.Errorf("%s:%d: metric %q is not a metric qmlsab computes (known: %s)", file, line(i, "metric"), g.Metric, strings.Join(metric.Names(), ", "))
		case g.Than != "" && !metric.Known(g.Than):
			return gs, fmt.Errorf("%s:%d: than %q is not a metric qmlsab computes (known: %s)", file, line(i, "than"), g.Than, strings.Join(metric.Names(), ", "))
		case g.Than != "" && yamlfile.Find(root, "gates", strconv.Itoa(i), "value") != nil:
			return gs, fmt.Errorf("%s:%d: value and than: a gate compares with a number (value) or with another metric (than), not both", file, line(i, "value"))
		}
		gs.Gates[i].armsLine = line(i, "arms")
		if g.Name == "" {
			rhs := strconv.FormatFloat(g.Value, 'g', -1, 64)
			if g.Than != "" {
				rhs = g.Than
			}
			gs.Gates[i].Name = g.Metric + " " + g.Op + " " + rhs
		}
	}
	return gs, nil
}
