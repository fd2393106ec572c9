package sweep

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/templates"
)

// fitPage is what the fit template renders; every string is escaped by
// html/template except Options and EchartsJS.
type fitPage struct {
	ToolVersion, Source, Rule, Wall, Created string
	Misfits                                  []string
	Points, Trials                           int
	FreeBelow, PinnedSpan, Step              string
	Unknowns                                 []fitUnknownRow
	SensHeight                               int
	PredictedAt, Seeds                       int
	Threshold, Below                         string
	Predictions                              []fitPredictionRow
	EchartsNotice                            string
	EchartsJS                                template.JS
	Options                                  template.JS
}

type fitUnknownRow struct{ Name, Plausible, Acceptable, Status string }

type fitPredictionRow struct{ Arm, Condition, Share, Verdict, Class, Flip string }

// StatusColors are the identifiability statuses' colours on the page.
var StatusColors = map[string]string{StatusPinned: "#17713a", StatusLoose: "#e08e0b", StatusFree: "#5f6b77"}

// EnsembleHTML renders the ensemble as one self-contained page (fit.html):
// which unknowns the data pin and which they leave free, which unknowns
// move each observation, and each predicted arm's conditions as shares.
func EnsembleHTML(en *Ensemble, out EnsembleOut, version string) ([]byte, error) {
	c, pts, set := en.Config, en.Points, en.Plan.Set
	p := fitPage{ToolVersion: version, Source: out.Source, Rule: out.Rule.Text, Misfits: out.Rule.Misfits, Points: out.Points, Trials: out.Trials,
		Wall: (time.Duration(out.WallSeconds) * time.Second).String(), Created: time.Now().UTC().Format("2006-01-02 15:04:05 UTC"),
		FreeBelow: fmt.Sprint(FreeBelow), PinnedSpan: fmt.Sprintf("%.0f %%", 100*PinnedSpan), Step: fmt.Sprintf("%.0f %%", 100*SensitivityStep),
		PredictedAt: out.PredictedAt, Seeds: out.PredictSeeds, Threshold: fmt.Sprintf("%.0f %%", 100*PredictedShare),
		Below: fmt.Sprintf("%.0f %%", 100*(1-PredictedShare)), SensHeight: 260 + 28*len(c.Space),
		EchartsNotice: templates.EchartsNotice(), EchartsJS: templates.EchartsJS()}
	options := map[string]chart.Option{}
	if set.Best >= 0 && pts[set.Best].Feasible && en.Status != nil {
		for u, d := range c.Space {
			r := en.Ranges[u]
			acc := "–"
			if d.Values != nil {
				var vs []string
				for _, v := range r.Values {
					vs = append(vs, d.Knob.Label(v))
				}
				acc = strings.Join(vs, " | ")
			} else if !math.IsNaN(r.Lo) {
				acc = d.Knob.Label(Num(roundTo(r.Lo, 3))) + " – " + d.Knob.Label(Num(roundTo(r.Hi, 3)))
			}
			p.Unknowns = append(p.Unknowns, fitUnknownRow{Name: d.Knob.Name, Plausible: dimRange(d), Acceptable: fmt.Sprintf("%s (%.0f %% of the range)", acc, 100*r.Span), Status: en.Status[u]})
		}
		options["ranges"] = en.rangesOption()
		options["sens"] = en.sensitivityOption()
	}
	for _, ap := range en.Predictions {
		for _, cs := range ap.Conditions {
			row := fitPredictionRow{Arm: ap.Arm, Condition: cs.Name, Share: fmt.Sprintf("%.0f %% (%d of %d)", 100*cs.Share, cs.Met, cs.Of), Verdict: cs.Verdict, Flip: "–"}
			switch cs.Verdict {
			case VerdictMet:
				row.Class = "predicted"
			case VerdictNotMet:
				row.Class = "notmet"
			default:
				row.Class = "uncertain"
			}
			if cs.FlipsAt != nil {
				row.Flip = en.flipText(*cs.FlipsAt)
			}
			p.Predictions = append(p.Predictions, row)
		}
	}
	if len(en.Predictions) > 0 {
		options["shares"] = en.sharesOption()
	}
	var err error
	if p.Options, err = chart.JS(options); err != nil {
		return nil, err
	}
	return templates.Render(templates.Fit, nil, p)
}

// rangesOption draws every acceptable point's value of each unknown in
// shares of its range, one row per unknown, coloured by status.
func (en *Ensemble) rangesOption() chart.Option {
	c, pts, set := en.Config, en.Points, en.Plan.Set
	var names []string
	for u := len(c.Space) - 1; u >= 0; u-- {
		names = append(names, c.Space[u].Knob.Name)
	}
	row := func(u int) int { return len(c.Space) - 1 - u }
	o := chart.New("acceptable points by unknown (share of the plausible range)")
	o.Title.Left = "center"
	o.Tooltip = &chart.Tooltip{Trigger: "item", Confine: true, Formatter: "{b}"}
	o.Legend = &chart.Legend{Show: chart.Bool(true), Top: "24", Data: []string{StatusPinned, StatusLoose, StatusFree, "best point"}}
	o.Grid = &chart.Grid{Left: "330", Right: "30", Top: "60", Bottom: "50"}
	o.XAxis = &chart.Axis{Type: "value", Min: chart.Float(0), Max: chart.Float(1), Name: "share of the plausible range", NameLocation: "middle", NameGap: 28}
	o.YAxis = &chart.Axis{Type: "category", Data: names, AxisLabel: &chart.AxisLabel{FontSize: 11}}
	bySeries := map[string][]chart.Datum{}
	for k, i := range set.Points {
		for u, d := range c.Space {
			v := pts[i].Values[u]
			name := fmt.Sprintf("%s = %s (acceptable point %d, objective %.2f)", d.Knob.Name, d.Knob.Label(roundValue(v)), k+1, pts[i].Objective)
			bySeries[en.Status[u]] = append(bySeries[en.Status[u]], chart.Datum{At: []any{roundTo(d.unit(v), 4)}, Value: chart.Num(float64(row(u))), Name: name})
		}
	}
	for _, st := range []string{StatusPinned, StatusLoose, StatusFree} {
		o.Series = append(o.Series, chart.Series{Type: "scatter", Name: st, Data: bySeries[st], SymbolSize: 7, Color: StatusColors[st],
			ItemStyle: &chart.ItemStyle{Opacity: chart.Float(0.55)}})
	}
	var best []chart.Datum
	for u, d := range c.Space {
		v := pts[set.Best].Values[u]
		best = append(best, chart.Datum{At: []any{roundTo(d.unit(v), 4)}, Value: chart.Num(float64(row(u))), Name: "best point: " + d.Knob.Name + " = " + d.Knob.Label(roundValue(v))})
	}
	o.Series = append(o.Series, chart.Series{Type: "scatter", Name: "best point", Data: best, Symbol: "diamond", SymbolSize: 14, Z: 10, Color: chart.Ink})
	return o
}

// sensitivityOption is the unknown × observation heatmap of the
// sensitivity at the best point.
func (en *Ensemble) sensitivityOption() chart.Option {
	c := en.Config
	var xs, ys []string
	for _, obs := range c.Observations {
		xs = append(xs, obs.Name)
	}
	for u := len(c.Space) - 1; u >= 0; u-- {
		ys = append(ys, c.Space[u].Knob.Name)
	}
	var data []chart.Datum
	for o, obs := range c.Observations {
		for u, d := range c.Space {
			s := en.Sensitivity[o][u]
			name := fmt.Sprintf("%s over %s: %.2f tolerances", obs.Name, d.Knob.Name, s)
			v := chart.Num(roundTo(max(min(s, 5), -5), 2))
			if math.Abs(s) < FreeBelow {
				v = chart.Num(0)
			}
			data = append(data, chart.Datum{At: []any{o, len(c.Space) - 1 - u}, Value: v, Name: name})
		}
	}
	o := chart.New("tolerances each observation moves over each unknown's range, at the best point")
	o.Title.Left = "center"
	o.Tooltip = &chart.Tooltip{Trigger: "item", Confine: true, Formatter: "{b}"}
	o.Legend = nil
	o.Grid = &chart.Grid{Left: "330", Right: "20", Top: "36", Bottom: "190"}
	o.XAxis = &chart.Axis{Type: "category", Data: xs, AxisLabel: &chart.AxisLabel{Rotate: 35, FontSize: 10}}
	o.YAxis = &chart.Axis{Type: "category", Data: ys, AxisLabel: &chart.AxisLabel{FontSize: 11}}
	o.VisualMap = &chart.VisualMap{Min: -5, Max: 5, Calculable: true, Orient: "horizontal", Left: "center", Bottom: 0, ItemHeight: 120,
		InRange: chart.InRange{Color: chart.Diverging}}
	o.Series = []chart.Series{{Type: "heatmap", Name: "sensitivity", Data: data, Label: &chart.Label{Show: chart.Bool(true), FontSize: 9},
		ItemStyle: &chart.ItemStyle{BorderColor: chart.Paper, BorderWidth: 1}}}
	return o
}

// sharesOption is each predicted arm's conditions as shares, with the
// thresholds of a prediction.
func (en *Ensemble) sharesOption() chart.Option {
	var conds []string
	for _, cs := range en.Predictions[0].Conditions {
		conds = append(conds, cs.Name)
	}
	o := chart.New("share of acceptable points × seeds where each condition is met")
	o.Title.Left = "center"
	o.Tooltip = &chart.Tooltip{Trigger: "item", Confine: true, Formatter: "{b}"}
	o.XAxis = &chart.Axis{Type: "category", Data: conds, AxisLabel: &chart.AxisLabel{FontSize: 11}}
	o.YAxis = &chart.Axis{Type: "value", Min: chart.Float(0), Max: chart.Float(100), Name: "% of points × seeds"}
	o.Grid = &chart.Grid{Top: "70", Left: "70", Right: "140", Bottom: "60"}
	for ai, ap := range en.Predictions {
		var data []chart.Datum
		for _, cs := range ap.Conditions {
			data = append(data, chart.Datum{Value: chart.Num(math.Round(1000*cs.Share) / 10), Name: fmt.Sprintf("%s: %s in %.0f %% (%d of %d): %s", ap.Arm, cs.Name, 100*cs.Share, cs.Met, cs.Of, cs.Verdict)})
		}
		s := chart.Series{Type: "bar", Name: ap.Arm, Data: data, Color: chart.ArmColor(ai)}
		if ai == 0 {
			s.MarkLine = chart.Lines(chart.Reference(100*PredictedShare, "predicted", true), chart.Reference(100*(1-PredictedShare), "predicted not met", true))
		}
		o.Series = append(o.Series, s)
	}
	return o
}
