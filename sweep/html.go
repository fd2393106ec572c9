package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/templates"
)

// armColors are the arms' line colours, in arm order (the report's).
var armColors = []string{"#1f6fb2", "#d1495b", "#2a9d5c", "#e08e0b", "#7b4fb5", "#5f6b77", "#c2185b", "#00838f"}

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
	options := map[string]any{}
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
	js, err := json.Marshal(options)
	if err != nil {
		return nil, err
	}
	// User strings (arm names) reach the options as JSON strings; "<"
	// escaped as \u003c keeps any "</script" in them inert.
	p.Options = template.JS(strings.ReplaceAll(string(js), "<", `\u003c`))
	tpl, err := templates.Sweep(nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
		return 0, 1, []string{"#b3261e", "#f2c94c", "#2a9d5c"}
	case metric.Failovers:
		return 0, max(hi, 1), []string{"#f7f7f7", "#f4a261", "#b3261e"}
	case metric.SheddingGap:
		a := max(math.Abs(lo), math.Abs(hi), 1)
		return -a, a, []string{"#d1495b", "#f7f7f7", "#1f6fb2"}
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi, []string{"#edf4fb", "#6baed6", "#08306b"}
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

func (r *Result) heatmapOption(m MetricOut, ai int) map[string]any {
	x, y := r.Axes[0], r.Axes[1]
	cells := r.cellsOf(ai)
	arm := r.Arms[ai].Name
	dx, dy, marked := defaultAt(x, y, arm)
	var data []any
	for i := range x.Labels {
		for j := range y.Labels {
			c := cells[fmt.Sprint([]int{i, j})]
			var v any = "-"
			if med, ok := c.Median[m.Name]; ok {
				v = shown(m, med)
			}
			item := map[string]any{"value": []any{i, j, v}, "name": r.tooltip(m, c)}
			if marked && i == dx && j == dy {
				// The arm's default: a black frame and a ◆ before the value.
				item["name"] = "◆ " + arm + "'s default setting — " + r.tooltip(m, c)
				item["itemStyle"] = map[string]any{"borderColor": "#111111", "borderWidth": 3}
				item["label"] = map[string]any{"formatter": fmt.Sprintf("◆ %v", v), "fontWeight": "bold"}
			}
			data = append(data, item)
		}
	}
	lo, hi, colors := r.scale(m)
	series := []any{map[string]any{"type": "heatmap", "name": m.Title, "data": data,
		"label":     map[string]any{"show": len(x.Labels)*len(y.Labels) <= 144, "fontSize": 9},
		"itemStyle": map[string]any{"borderColor": "#ffffff", "borderWidth": 1}}}
	return map[string]any{
		"animation": false,
		"title":     map[string]any{"text": arm + " — " + title(m), "left": "center", "textStyle": map[string]any{"fontSize": 13}},
		"tooltip":   map[string]any{"trigger": "item", "formatter": "{b}"},
		"grid":      map[string]any{"left": 96, "right": 16, "top": 36, "bottom": 96},
		"xAxis": map[string]any{"type": "category", "data": x.Labels, "name": x.Name, "nameLocation": "middle", "nameGap": 44,
			"axisLabel": map[string]any{"rotate": 30, "fontSize": 10}},
		"yAxis": map[string]any{"type": "category", "data": y.Labels, "name": y.Name, "nameLocation": "middle", "nameGap": 78,
			"axisLabel": map[string]any{"fontSize": 10}},
		"visualMap": map[string]any{"min": lo, "max": hi, "calculable": true, "orient": "horizontal", "left": "center", "bottom": 0,
			"itemHeight": 120, "seriesIndex": 0, "inRange": map[string]any{"color": colors}},
		"series": series,
	}
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

func (r *Result) lineOption(m MetricOut) map[string]any {
	x := r.Axes[0]
	var series []any
	var names []string
	for ai, a := range r.Arms {
		cells := r.cellsOf(ai)
		var data []any
		for i := range x.Labels {
			c := cells[fmt.Sprint([]int{i})]
			var v any = "-"
			if med, ok := c.Median[m.Name]; ok {
				v = shown(m, med)
			}
			data = append(data, map[string]any{"value": v, "name": r.tooltip(m, c)})
		}
		color := armColors[ai%len(armColors)]
		names = append(names, a.Name)
		series = append(series, map[string]any{"type": "line", "name": a.Name, "data": data, "symbolSize": 6, "color": color})
		if i, ok := x.DefaultIndex[a.Name]; ok && i >= 0 {
			if c, ok := cells[fmt.Sprint([]int{i})]; ok {
				if med, ok := c.Median[m.Name]; ok {
					series = append(series, map[string]any{"type": "scatter", "name": a.Name + " default", "data": []any{[]any{i, shown(m, med)}},
						"symbol": "diamond", "symbolSize": 16, "z": 10, "color": color,
						"tooltip":   map[string]any{"formatter": "◆ " + a.Name + "'s default setting"},
						"itemStyle": map[string]any{"borderColor": "#111111", "borderWidth": 1.5}})
				}
			}
		}
	}
	yAxis := map[string]any{"type": "value", "name": title(m), "scale": true}
	if m.Name == metric.Availability {
		yAxis["min"], yAxis["max"], yAxis["scale"] = 0, 1, false
	}
	return map[string]any{
		"animation": false,
		"title":     map[string]any{"text": m.Title + " by " + x.Name, "left": "center", "textStyle": map[string]any{"fontSize": 13}},
		"tooltip":   map[string]any{"trigger": "item", "formatter": "{b}"},
		"legend":    map[string]any{"data": names, "bottom": 0},
		"grid":      map[string]any{"left": 70, "right": 24, "top": 40, "bottom": 86},
		"xAxis": map[string]any{"type": "category", "data": x.Labels, "name": x.Name, "nameLocation": "middle", "nameGap": 44,
			"axisLabel": map[string]any{"rotate": 30, "fontSize": 10}},
		"yAxis":  yAxis,
		"series": series,
	}
}
