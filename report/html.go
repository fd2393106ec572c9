package report

import (
	"fmt"
	"html/template"
	"strings"

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
	// Fit is the joint fit behind the embedded default, for the methods
	// paragraph of a simulated report.
	Fit                investigation.FitRecord
	Dirs, Arms, Builds []string
	// Servers are the implementations and versions that answered.
	Servers       []string
	ArmRows       []Arm
	Verdict       []verdictRow
	Gates         []gateRow
	Warnings      []string
	Sections      []section
	TrialCols     []string
	TrialRows     []trialRow
	Definitions   []metric.Metric
	MaxPoints     int
	EchartsNotice string
	EchartsJS     template.JS
	Options       template.JS
}

type verdictCell struct {
	Value, Delta, P string
	Significant     bool
	// Absent is why the value is "–" (the cell's title and its note).
	Absent string
	Note   int
}

type verdictRow struct {
	Title string
	Cells []verdictCell
}

type gateCell struct {
	Pass, NoData    bool
	Verdict, Detail string
}

type gateRow struct {
	Name, Condition, Why string
	// Prediction is, on a report of the model, what the ensemble predicts
	// of the fix's condition this gate checks.
	Prediction string
	Cells      []gateCell
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
	p := page{ToolVersion: toolVersion, Workload: a.In.Workload.Name, Clock: a.In.Clock, Conditions: a.In.Conditions(), Baseline: a.Baseline, Alpha: a.Alpha,
		Fit: investigation.Fitted, Simulated: a.In.Simulated, Dirs: a.In.Dirs, Arms: a.In.Arms, Servers: a.In.Servers, ArmRows: a.Arms, MaxPoints: MaxPoints,
		EchartsNotice: templates.EchartsNotice(), EchartsJS: templates.EchartsJS()}
	if a.GateSet != nil {
		p.GateSet = a.GateSet.Name
	}
	if m := a.In.Manifests; len(m) > 0 {
		p.Target, p.Created, p.Host = m[0].Target, m[0].Created.UTC().Format("2006-01-02 15:04:05 UTC"), m[0].Host
		p.Builds = builds(m[0].ArmList)
	}
	if w := a.In.Workload.SpillToDisk; w != nil {
		p.Phases = fmt.Sprintf("warmup %s, storm %s at %.0f queries/s, recovery %s; canaries %.0f/s, SLO %s",
			w.Phases.Warmup, w.Phases.Storm, w.StormRate, w.Phases.Recovery, w.CanaryRate, w.CanarySLO)
	}
	p.Interleave = interleave(a.In)
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
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Verdict = append(p.Verdict, row)
	}
	if a.GateSet != nil {
		for i, g := range a.GateSet.Gates {
			row := gateRow{Name: g.Name, Condition: g.String(), Why: g.Why}
			if a.In.Simulated {
				row.Prediction = EnsemblePrediction(g)
			}
			for _, arm := range a.Arms {
				r := arm.Gates[i]
				row.Cells = append(row.Cells, gateCell{Pass: r.AsExpected(), NoData: r.NoData || r.NotApplicable, Verdict: r.Verdict(), Detail: r.Detail()})
			}
			p.Gates = append(p.Gates, row)
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
			row := trialRow{Arm: arm, Index: t.Index, Status: t.Status, Reason: t.Reason, Run: t.Run}
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
				row.Values = append(row.Values, trialCell{Value: unitNumber(m, v)})
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
	return templates.Render(templates.Report, template.FuncMap{"join": strings.Join}, p)
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

// builds lists each arm's build label from the manifest.
func builds(list []store.ArmInfo) []string {
	var out []string
	for _, a := range list {
		b := a.Build
		if b == "" {
			b = "unlabelled"
		}
		out = append(out, a.Name+": "+b)
	}
	return out
}

// unitNumber formats a value in its metric's unit (metric.Format).
func unitNumber(name string, v float64) string { return metric.Format(name, v) }

// AtLeast is a lower bound as every table shows it: "≥ 5000 ms
// (timeout)", a latency the client's timeout cut short, never a
// measurement.
func AtLeast(name string, v float64) string { return "≥ " + unitNumber(name, v) + " (timeout)" }

// censoredValue is a censored summary as the verdict shows it: the median
// and the range, each "≥" where it is only a lower bound, and how many of
// the trials' values are bounds.
func censoredValue(name string, c Censored) string {
	show := func(v float64, bound bool) string {
		if bound {
			return "≥ " + unitNumber(name, v)
		}
		return unitNumber(name, v)
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
	v := fmt.Sprintf("%s [%s–%s]", unitNumber(name, s.Median), unitNumber(name, s.Min), unitNumber(name, s.Max))
	if metric.Lookup(name).Count {
		total := 0.0
		for _, x := range s.Values {
			total += x
		}
		v += fmt.Sprintf(" Σ%s", Number(total))
	}
	return v
}
