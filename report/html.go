package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/templates"
)

// page is what the template renders; every string in it is escaped by
// html/template except Options and EchartsJS, built below.
type page struct {
	ToolVersion, Workload, Target, Clock, Conditions, Created, Host, Baseline, GateSet, Phases, Interleave string
	Alpha                                                                                                  float64
	Simulated                                                                                              bool
	// Storm and Merge say which workload the methods describe.
	Storm, Merge bool
	// Fit is the joint fit behind the embedded default, for the methods
	// paragraph of a simulated report.
	Fit  investigation.FitRecord
	Dirs []string
	Arms []string
	// Legend is each arm's name, build and description, at the top.
	Legend []legendRow
	// Verdicts are the sentences under the title, one per arm.
	Verdicts []Verdict
	// Servers are the implementations and versions that answered.
	Servers []string
	ArmRows []Arm
	// Ns are the trial counts the methods speak of ("n = 5", "n = 3 and
	// 5").
	Ns        string
	Verdict   []verdictRow
	Gates     []gateRow
	GatesFail []string
	// FixPredictions are, on a report of the model, what the ensemble
	// predicts of each condition of the fix's acceptance, whether or not
	// the fix ran (its gates' rows quote them too when it did).
	FixPredictions []string
	Warnings       []string
	Sections       []section
	TrialCols      []string
	TrialRows      []trialRow
	Definitions    []metric.Metric
	MaxPoints      int
	EchartsNotice  string
	EchartsJS      template.JS
	Options        template.JS
}

// legendRow is one arm of the legend.
type legendRow struct {
	Name, Build, Description, Trials string
	Baseline                         bool
}

type verdictCell struct {
	Value, Delta, P string
	Significant     bool
	// Direction is the shift's (Comparison.Direction), Mark its symbol
	// and Word what the cell prints beside it.
	Direction, Mark, Word, Title string
	// Dagger marks a metric over the seconds with a primary compared
	// across an outage (the verdict's footnote).
	Dagger bool
	// Absent is why the value is "–" (the cell's title and its note).
	Absent string
	Note   int
}

type verdictRow struct {
	Title string
	Cells []verdictCell
}

// gateRow is one gate of one arm: gates of other arms are not listed.
type gateRow struct {
	Arm, Name, Condition, Why string
	Pass, NoData              bool
	Verdict, Detail           string
	// Prediction is, on a report of the model, what the ensemble predicts
	// of the fix's condition this gate checks.
	Prediction string
}

type section struct {
	ID, Title, Note string
	Charts          []chartRef
	Table           template.HTML
}

type chartRef struct{ ID string }

type trialRow struct {
	Arm, Status, Reason, Run string
	Index                    int
	Values                   []trialCell
}

// trialCell is one trial's value, or "–" with why it is absent.
type trialCell struct{ Value, Absent string }

// HTML renders the report page: one self-contained file.
func HTML(a *Analysis, toolVersion string) ([]byte, error) {
	p := page{ToolVersion: toolVersion, Workload: a.In.Workload.Name, Clock: string(a.In.Clock), Conditions: a.In.Conditions(), Baseline: a.Baseline, Alpha: a.Alpha,
		Fit: investigation.Fitted, Simulated: a.In.Simulated, Dirs: a.In.Dirs, Arms: a.In.Arms, Servers: a.In.Servers, ArmRows: a.Arms, MaxPoints: MaxPoints,
		EchartsNotice: templates.EchartsNotice(), EchartsJS: templates.EchartsJS()}
	if a.GateSet != nil {
		p.GateSet = a.GateSet.Name
	}
	if m := a.In.Manifests; len(m) > 0 {
		p.Target, p.Created, p.Host = m[0].Target, m[0].Created.UTC().Format("2006-01-02 15:04:05 UTC"), m[0].Host
	}
	if w := a.In.Workload.SpillToDisk; w != nil {
		p.Phases = fmt.Sprintf("warmup %s, storm %s at %.0f queries/s, recovery %s; canaries %.0f/s, SLO %s",
			w.Phases.Warmup, w.Phases.Storm, w.StormRate, w.Phases.Recovery, w.CanaryRate, w.CanarySLO)
	}
	p.Interleave = interleave(a.In)
	p.Storm, p.Merge = a.In.Workload.SpillToDisk != nil, a.In.Workload.Merge != nil
	p.Ns = trialCounts(a)
	p.Legend = legend(a)
	p.Verdicts = a.Verdicts()
	for _, name := range keyMetrics(a) {
		row := verdictRow{Title: metric.Lookup(name).Title}
		for _, arm := range a.Arms {
			s, ok := arm.Metrics[name]
			if c, censored := arm.Censored[name]; censored {
				row.Cells = append(row.Cells, verdictCell{Value: censoredValue(name, c)})
				continue
			}
			if !ok {
				note, why := a.AbsentNote(arm.Name, name)
				row.Cells = append(row.Cells, verdictCell{Value: "–", Absent: why, Note: note})
				continue
			}
			cell := verdictCell{Value: cellValue(name, s)}
			if c, ok := a.Comparison(arm.Name, name); ok {
				cell.Delta, cell.P, cell.Significant = FormatDelta(c), FormatP(c), c.Significant
				cell.Direction, cell.Dagger = c.Direction, c.OverOutage
				cell.Mark, cell.Word, cell.Title = deltaWords(c)
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Verdict = append(p.Verdict, row)
	}
	for _, arm := range a.Arms {
		for _, r := range arm.Gates {
			if r.NotApplicable {
				continue // a gate of other arms: not this arm's row
			}
			row := gateRow{Arm: arm.Name, Name: r.Gate.Name, Condition: r.Gate.String(), Why: r.Gate.Why,
				Pass: r.AsExpected(), NoData: r.NoData, Verdict: r.Verdict(), Detail: r.Detail()}
			if a.In.Simulated {
				row.Prediction = EnsemblePrediction(r.Gate)
			}
			p.Gates = append(p.Gates, row)
		}
	}
	p.GatesFail = a.GateFailures()
	if a.In.Simulated && a.GateSet != nil {
		for _, g := range a.GateSet.Gates {
			if w := EnsemblePrediction(g); w != "" {
				p.FixPredictions = append(p.FixPredictions, g.Name+": "+w)
			}
		}
	}
	for _, w := range a.Warnings {
		p.Warnings = append(p.Warnings, warningText(w))
	}
	p.TrialCols = keyMetrics(a)
	for i, c := range p.TrialCols {
		p.TrialCols[i] = metric.Lookup(c).Title
	}
	for _, arm := range a.In.Arms {
		for _, t := range a.In.Trials[arm] {
			row := trialRow{Arm: arm, Index: t.Index, Status: string(t.Status), Reason: t.Reason, Run: t.Run}
			for _, m := range keyMetrics(a) {
				v, ok := t.Metrics[m]
				if b, censored := t.AtLeast[m]; censored {
					row.Values = append(row.Values, trialCell{Value: AtLeast(m, b)})
					continue
				}
				if !ok {
					why := t.Absent[m]
					if why == "" {
						why = "not recorded"
					}
					row.Values = append(row.Values, trialCell{Value: "–", Absent: why})
					continue
				}
				row.Values = append(row.Values, trialCell{Value: metric.Format(m, v)})
			}
			p.TrialRows = append(p.TrialRows, row)
		}
	}
	for _, m := range a.MetricNames {
		if lm := metric.Lookup(m); lm.Definition != "" {
			p.Definitions = append(p.Definitions, lm)
		}
	}
	options := map[string]chart.Option{}
	secs, err := chartSections(a, options)
	if err != nil {
		return nil, err
	}
	p.Sections = secs
	if ls := livesSection(a); ls != nil {
		p.Sections = append(p.Sections, *ls)
	}
	if hs := hostSection(a); hs != nil {
		p.Sections = append([]section{*hs}, secs...)
	}
	if p.Options, err = chart.JS(options); err != nil {
		return nil, err
	}
	return templates.Render(templates.Report, pageFuncs, p)
}

// interleave is the order the first run's first two repetition blocks ran
// in ("E1 D1 D2 E2 …").
func interleave(in *Input) string {
	var il []string
	if len(in.Manifests) > 0 {
		for _, ts := range in.Manifests[0].Trials {
			if len(il) == 2*len(in.Arms) {
				break
			}
			il = append(il, fmt.Sprintf("%s%d", ts.Arm, ts.Index))
		}
	}
	return strings.Join(il, " ") + " …"
}

// pageFuncs are the functions the report's template calls.
var pageFuncs = template.FuncMap{"join": strings.Join, "dirclass": directionClass, "armcolor": chart.ArmColor}

// directionClass is the CSS class of a direction: its colour.
func directionClass(direction string) string {
	switch direction {
	case Better, Worse, Changed:
		return direction
	case NotJudged:
		return "notjudged"
	}
	return "same"
}

// deltaWords are a comparison's mark, the word printed beside its shift
// and the cell's title: every shift says its direction in a symbol and a
// word, so it reads without colour.
func deltaWords(c Comparison) (mark, word, title string) {
	switch {
	case math.IsNaN(c.P):
		return "", "", "no test: a side without values"
	case c.Direction == "":
		return "≈", "within noise", fmt.Sprintf("not significant: %s > α = %g", PValue(c.P), c.Alpha)
	case c.Direction == NotJudged:
		return directionMark[NotJudged], NotJudged, "over the seconds with a primary, and an arm had none for part of its storm (†): not judged better or worse"
	case c.Direction == Changed:
		return directionMark[Changed], Changed, "significant; the metric has no better direction"
	}
	return directionMark[c.Direction], c.Direction, fmt.Sprintf("%s than %s (significant: %s ≤ α = %g)", c.Direction, c.Base, PValue(c.P), c.Alpha)
}

// legend is each arm's row of the arms legend: its build and description
// from the first run's manifest, and its trials.
func legend(a *Analysis) []legendRow {
	info := map[string]store.ArmInfo{}
	var described map[string]string
	if m := a.In.Manifests; len(m) > 0 {
		for _, ai := range m[0].ArmList {
			info[ai.Name] = ai
		}
		described = armDescriptions(m[0].Arms)
	}
	var out []legendRow
	for _, arm := range a.Arms {
		r := legendRow{Name: arm.Name, Build: info[arm.Name].Build, Description: described[arm.Name], Baseline: arm.Name == a.Baseline}
		if r.Build == "" {
			r.Build = "unlabelled"
		}
		r.Trials = fmt.Sprintf("n = %d", arm.N)
		if arm.Invalid > 0 {
			r.Trials += fmt.Sprintf(" (+%d invalid)", arm.Invalid)
		}
		out = append(out, r)
	}
	return out
}

// armDescriptions reads each arm's description from a manifest's arms
// document (the arms YAML the run was given, stored as a JSON string);
// none when it cannot be read (a run made before it was stored).
func armDescriptions(doc json.RawMessage) map[string]string {
	var text string
	if json.Unmarshal(doc, &text) != nil {
		return nil
	}
	var arms struct {
		Arms []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		} `yaml:"arms"`
	}
	if yaml.Unmarshal([]byte(text), &arms) != nil {
		return nil
	}
	out := map[string]string{}
	for _, a := range arms.Arms {
		out[a.Name] = a.Description
	}
	return out
}

// trialCounts are the arms' numbers of valid trials as the methods say
// them: "n = 5" when every arm has as many, else "n = 3 to 5".
func trialCounts(a *Analysis) string {
	lo, hi := -1, 0
	for _, arm := range a.Arms {
		if lo < 0 || arm.N < lo {
			lo = arm.N
		}
		hi = max(hi, arm.N)
	}
	if lo == hi {
		return fmt.Sprintf("n = %d", hi)
	}
	return fmt.Sprintf("n = %d to %d", lo, hi)
}

// AtLeast is a lower bound as every table shows it: "≥ 5000 ms
// (timeout)", a latency the client's timeout cut short, never a
// measurement.
func AtLeast(name string, v float64) string { return "≥ " + metric.Format(name, v) + " (timeout)" }

// censoredValue is a censored summary as the verdict shows it: the median
// and the range, each "≥" where it is only a lower bound, and how many of
// the trials' values are bounds.
func censoredValue(name string, c Censored) string {
	show := func(v float64, bound bool) string {
		if bound {
			return "≥ " + metric.Format(name, v)
		}
		return metric.Format(name, v)
	}
	median := show(c.Median, c.MedianAtLeast)
	if c.MedianAtLeast {
		median = AtLeast(name, c.Median)
	}
	return fmt.Sprintf("%s [%s–%s] (%d of %d trials a lower bound)", median, show(c.Min, c.MinAtLeast), show(c.Max, c.MaxAtLeast), c.Bounds, len(c.Values))
}

// cellValue is a summary as the verdict shows it: median [min–max], and
// for counts also the total over the trials (counts compared as counts:
// 3 failovers in 5 trials is not "median 0").
func cellValue(name string, s Summary) string {
	v := fmt.Sprintf("%s [%s–%s]", metric.Format(name, s.Median), metric.Format(name, s.Min), metric.Format(name, s.Max))
	if metric.Lookup(name).Count {
		total := 0.0
		for _, x := range s.Values {
			total += x
		}
		v += fmt.Sprintf(" Σ%s", metric.Number(total))
	}
	return v
}
