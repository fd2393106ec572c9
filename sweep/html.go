package sweep

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/templates"
)

// htmlPage is what the sweep template renders; every string is escaped by
// html/template except Options and EchartsJS.
type htmlPage struct {
	Title, ToolVersion, Workload, Created string
	Seeds, Trials, Cells, Parallel        int
	TrialsPerSec                          float64
	HostModel, Line                       bool
	Arms                                  []ArmOut
	Axes                                  []AxisOut
	Sections                              []htmlSection
	Definitions                           []MetricOut
	EchartsNotice                         string
	EchartsJS                             template.JS
	Options                               template.JS
}

type htmlSection struct {
	ID, Title, Note string
	Charts          []string
}

// ChartIDs are the chart containers a result's page has, in page order:
// one heatmap per metric and arm for two axes, one line chart per metric
// for one.
func (r *Result) ChartIDs() []string {
	var ids []string
	for mi := range r.Metrics {
		if len(r.Axes) == 1 {
			ids = append(ids, fmt.Sprintf("m%d", mi))
			continue
		}
		for ai := range r.Arms {
			ids = append(ids, fmt.Sprintf("m%d-a%d", mi, ai))
		}
	}
	return ids
}

// HTML renders the sweep as one self-contained page.
func HTML(r *Result) ([]byte, error) {
	p := htmlPage{ToolVersion: r.ToolVersion, Seeds: len(r.Seeds), Trials: r.Trials, Cells: len(r.Cells) / max(len(r.Arms), 1),
		Parallel: r.Parallel, TrialsPerSec: r.TrialsPerSec, HostModel: r.HostModel, Line: len(r.Axes) == 1, Arms: r.Arms, Axes: r.Axes,
		Definitions: r.Metrics, Created: r.Created.Format("2006-01-02 15:04:05 UTC"),
		EchartsNotice: templates.EchartsNotice(), EchartsJS: templates.EchartsJS()}
	var names, arms []string
	for _, a := range r.Axes {
		names = append(names, a.Name)
	}
	for _, a := range r.Arms {
		arms = append(arms, a.Name)
	}
	p.Title = strings.Join(names, " × ") + ", arms " + strings.Join(arms, ", ")
	p.Workload = fmt.Sprintf("spill_to_disk: warmup %gs, storm %gs at %g queries/s (unless varied), recovery %gs", r.Workload.WarmupSeconds, r.Workload.StormSeconds, r.Workload.StormRate, r.Workload.RecoverySecond)
	options := map[string]chart.Option{}
	ids := r.ChartIDs()
	for mi, m := range r.Metrics {
		sec := htmlSection{ID: m.Name, Title: title(m), Note: m.Definition + ". Each cell: the median over the seeds (the tooltip gives min–max)."}
		if len(r.Axes) == 1 {
			id := ids[mi]
			sec.Charts = append(sec.Charts, id)
			options[id] = r.lineOption(m)
		} else {
			for ai := range r.Arms {
				id := ids[mi*len(r.Arms)+ai]
				sec.Charts = append(sec.Charts, id)
				options[id] = r.heatmapOption(m, ai)
			}
		}
		p.Sections = append(p.Sections, sec)
	}
	var err error
	if p.Options, err = chart.JS(options); err != nil {
		return nil, err
	}
	return templates.Render(templates.Sweep, nil, p)
}

func title(m MetricOut) string {
	if m.Unit == "B" {
		return m.Title + " (GiB)"
	}
	if m.Unit != "" {
		return m.Title + " (" + m.Unit + ")"
	}
	return m.Title
}

// shown is a metric's value as a chart shows it: bytes in GiB, rounded.
func shown(m MetricOut, v float64) float64 {
	digits := 2.0
	switch {
	case m.Unit == "B":
		v /= 1 << 30
	case m.Name == metric.Availability:
		digits = 3
	case m.Unit == "/s":
		digits = 1
	}
	p := math.Pow(10, digits)
	return math.Round(v*p) / p
}

// cellsOf returns arm ai's cells by grid position.
func (r *Result) cellsOf(ai int) map[string]Cell {
	out := map[string]Cell{}
	for _, c := range r.Cells {
		if c.Arm == r.Arms[ai].Name {
			out[fmt.Sprint(c.Index)] = c
		}
	}
	return out
}

// scale is a metric's colour scale over every arm's cells, so the arms'
// heatmaps compare at a glance.
func (r *Result) scale(m MetricOut) (lo, hi float64, colors []string) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, c := range r.Cells {
		if v, ok := c.Median[m.Name]; ok {
			lo, hi = min(lo, shown(m, v)), max(hi, shown(m, v))
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	switch m.Name {
	case metric.Availability:
		return 0, 1, chart.BadToGood
	case metric.Failovers:
		return 0, max(hi, 1), chart.NoneToMany
	case metric.ServerShedsMinusAdmissions:
		a := max(math.Abs(lo), math.Abs(hi), 1)
		return -a, a, chart.Diverging
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi, chart.Sequential
}

func (r *Result) tooltip(m MetricOut, c Cell) string {
	v, ok := c.Median[m.Name]
	if !ok {
		return "no value"
	}
	s := fmt.Sprintf("%s %s: median %v", c.Arm, m.Title, shown(m, v))
	if c.Min[m.Name] != c.Max[m.Name] {
		s += fmt.Sprintf(" [%v – %v]", shown(m, c.Min[m.Name]), shown(m, c.Max[m.Name]))
	}
	if !c.Applied {
		s += " (the varied setting does not apply to this arm)"
	}
	return s
}

// sweepChart is a sweep chart: its title centred, the tooltip an item's
// (each datum is named by its tooltip), the x axis the first grid axis.
func sweepChart(title string, x AxisOut) chart.Option {
	o := chart.New(title)
	o.Title.Left = "center"
	o.Tooltip = &chart.Tooltip{Trigger: "item", Confine: true, Formatter: "{b}"}
	o.Legend = nil
	o.XAxis = &chart.Axis{Type: "category", Data: x.Labels, Name: x.Name, NameLocation: "middle", NameGap: 44,
		AxisLabel: &chart.AxisLabel{Rotate: 30, FontSize: 10}}
	return o
}

// cellValue is a cell's median of m as drawn, or absent.
func cellValue(m MetricOut, c Cell) chart.Value {
	med, ok := c.Median[m.Name]
	if !ok {
		return chart.Absent
	}
	return chart.Num(shown(m, med))
}

func (r *Result) heatmapOption(m MetricOut, ai int) chart.Option {
	x, y := r.Axes[0], r.Axes[1]
	cells := r.cellsOf(ai)
	arm := r.Arms[ai].Name
	dx, dy, marked := defaultAt(x, y, arm)
	var data []chart.Datum
	for i := range x.Labels {
		for j := range y.Labels {
			c := cells[fmt.Sprint([]int{i, j})]
			item := chart.Datum{At: []any{i, j}, Value: cellValue(m, c), Name: r.tooltip(m, c)}
			if marked && i == dx && j == dy {
				// The arm's default: a black frame and a ◆ before the value.
				shownValue := "-"
				if item.Value.OK {
					shownValue = fmt.Sprint(item.Value.V)
				}
				item.Name = "◆ " + arm + "'s default setting — " + r.tooltip(m, c)
				item.ItemStyle = &chart.ItemStyle{BorderColor: chart.Frame, BorderWidth: 3}
				item.Label = &chart.Label{Formatter: "◆ " + shownValue, FontWeight: "bold"}
			}
			data = append(data, item)
		}
	}
	lo, hi, colors := r.scale(m)
	o := sweepChart(arm+" — "+title(m), x)
	o.Grid = &chart.Grid{Left: "96", Right: "16", Top: "36", Bottom: "96"}
	o.YAxis = &chart.Axis{Type: "category", Data: y.Labels, Name: y.Name, NameLocation: "middle", NameGap: 78,
		AxisLabel: &chart.AxisLabel{FontSize: 10}}
	o.VisualMap = &chart.VisualMap{Min: lo, Max: hi, Calculable: true, Orient: "horizontal", Left: "center", Bottom: 0,
		ItemHeight: 120, SeriesIndex: 0, InRange: chart.InRange{Color: colors}}
	o.Series = []chart.Series{{Type: "heatmap", Name: m.Title, Data: data,
		Label:     &chart.Label{Show: chart.Bool(len(x.Labels)*len(y.Labels) <= 144), FontSize: 9},
		ItemStyle: &chart.ItemStyle{BorderColor: chart.Paper, BorderWidth: 1}}}
	return o
}

// defaultAt is the grid cell of arm's default on both axes, when it lies
// within the grid on both and both apply to the arm.
func defaultAt(x, y AxisOut, arm string) (int, int, bool) {
	at := func(a AxisOut) (int, bool) {
		i, ok := a.DefaultIndex[arm]
		return i, ok && i >= 0
	}
	xi, okx := at(x)
	yi, oky := at(y)
	return xi, yi, okx && oky
}

func (r *Result) lineOption(m MetricOut) chart.Option {
	x := r.Axes[0]
	o := sweepChart(m.Title+" by "+x.Name, x)
	var names []string
	for ai, a := range r.Arms {
		cells := r.cellsOf(ai)
		var data []chart.Datum
		for i := range x.Labels {
			c := cells[fmt.Sprint([]int{i})]
			data = append(data, chart.Datum{Value: cellValue(m, c), Name: r.tooltip(m, c)})
		}
		color := chart.ArmColor(ai)
		names = append(names, a.Name)
		o.Series = append(o.Series, chart.Series{Type: "line", Name: a.Name, Data: data, SymbolSize: 6, Color: color})
		if i, ok := x.DefaultIndex[a.Name]; ok && i >= 0 {
			if c, ok := cells[fmt.Sprint([]int{i})]; ok {
				if v := cellValue(m, c); v.OK {
					o.Series = append(o.Series, chart.Series{Type: "scatter", Name: a.Name + " default", Data: []chart.Datum{{At: []any{i}, Value: v}},
						Symbol: "diamond", SymbolSize: 16, Z: 10, Color: color,
						Tooltip:   &chart.Tooltip{Formatter: "◆ " + a.Name + "'s default setting"},
						ItemStyle: &chart.ItemStyle{BorderColor: chart.Frame, BorderWidth: 1.5}})
				}
			}
		}
	}
	o.YAxis = &chart.Axis{Type: "value", Name: title(m), Scale: true}
	if m.Name == metric.Availability {
		o.YAxis.Min, o.YAxis.Max, o.YAxis.Scale = chart.Float(0), chart.Float(1), false
	}
	o.Legend = &chart.Legend{Show: chart.Bool(true), Data: names, Bottom: "0", Type: "scroll"}
	o.Grid = &chart.Grid{Left: "70", Right: "24", Top: "40", Bottom: "86"}
	return o
}
