// Package chart is the one way qmlsab's pages (the report, the nightly
// trend and the sweep) build their Apache ECharts charts: a typed option
// for the subset of ECharts the pages use, styles included, one palette,
// one look (New: title, tooltip, grid, no animation), one way to shade
// phases (Phases) and one way to mark events, change points and reference
// values (Event, ChangePoint, Reference), and the one encoding of options
// into a page's script (JS).
//
// The types are qmlsab's own, written from ECharts' option reference, and
// no chart library is imported: go-echarts (the design card's) builds
// whole charts, but its series lack fields the pages need (a stacked
// band's stack strategy, a confined tooltip, a silent series, per-item
// mark line styles), so its builders could not draw these charts, and
// taking only its style structs made every chart half one library's types
// and half ours. A chart fix lands once, in this package.
//
// What a server did not report is absent: a Value without a number
// encodes as ECharts' "-", which draws no point and no bar, never a 0.
package chart

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
)

// Option is one chart's ECharts option.
type Option struct {
	// Animation is always false: pages draw once, and a screenshot or a
	// probe sees the final chart.
	Animation bool       `json:"animation"`
	Color     []string   `json:"color,omitempty"`
	Title     *Title     `json:"title,omitempty"`
	Tooltip   *Tooltip   `json:"tooltip,omitempty"`
	Legend    *Legend    `json:"legend,omitempty"`
	Grid      *Grid      `json:"grid,omitempty"`
	XAxis     *Axis      `json:"xAxis,omitempty"`
	YAxis     *Axis      `json:"yAxis,omitempty"`
	DataZoom  []DataZoom `json:"dataZoom,omitempty"`
	VisualMap *VisualMap `json:"visualMap,omitempty"`
	Series    []Series   `json:"series"`
}

// Tooltip is a chart's or a series' tooltip.
type Tooltip struct {
	Show *bool `json:"show,omitempty"`
	// Trigger: "axis" (every series at an x) or "item" (one datum).
	Trigger string `json:"trigger,omitempty"`
	// Confine keeps the tooltip inside the chart.
	Confine   bool   `json:"confine,omitempty"`
	Formatter string `json:"formatter,omitempty"`
}

// Axis is an x or y axis.
type Axis struct {
	// Type: "category", "value".
	Type         string   `json:"type,omitempty"`
	Name         string   `json:"name,omitempty"`
	NameLocation string   `json:"nameLocation,omitempty"`
	NameGap      int      `json:"nameGap,omitempty"`
	Data         []string `json:"data,omitempty"`
	// BoundaryGap false puts a category axis's first and last category
	// on the plot's edges.
	BoundaryGap *bool      `json:"boundaryGap,omitempty"`
	Scale       bool       `json:"scale,omitempty"`
	Min         *float64   `json:"min,omitempty"`
	Max         *float64   `json:"max,omitempty"`
	AxisLabel   *AxisLabel `json:"axisLabel,omitempty"`
}

// AxisLabel styles an axis's tick labels.
type AxisLabel struct {
	Rotate   float64 `json:"rotate,omitempty"`
	FontSize int     `json:"fontSize,omitempty"`
}

// DataZoom is a zoom control ("inside": wheel and drag; "slider").
type DataZoom struct {
	Type   string `json:"type"`
	Height int    `json:"height,omitempty"`
	Bottom int    `json:"bottom,omitempty"`
}

// VisualMap maps a heatmap's values to colours, from Min to Max.
type VisualMap struct {
	Min         float64 `json:"min"`
	Max         float64 `json:"max"`
	Calculable  bool    `json:"calculable"`
	Orient      string  `json:"orient,omitempty"`
	Left        string  `json:"left,omitempty"`
	Bottom      int     `json:"bottom"`
	ItemHeight  int     `json:"itemHeight,omitempty"`
	SeriesIndex int     `json:"seriesIndex"`
	InRange     InRange `json:"inRange"`
}

// InRange is the colours a VisualMap runs through.
type InRange struct {
	Color []string `json:"color"`
}

// Title is a chart's title.
type Title struct {
	Text      string     `json:"text,omitempty"`
	TextStyle *TextStyle `json:"textStyle,omitempty"`
	// Left: "center", or a distance from the left edge.
	Left string `json:"left,omitempty"`
}

// TextStyle styles a title's text.
type TextStyle struct {
	FontSize int `json:"fontSize,omitempty"`
}

// Legend is a chart's legend of its series.
type Legend struct {
	// Type "scroll" pages a legend too long for one line.
	Type   string `json:"type,omitempty"`
	Show   *bool  `json:"show,omitempty"`
	Top    string `json:"top,omitempty"`
	Bottom string `json:"bottom,omitempty"`
	// Data names the series the legend lists, in its order (all when
	// empty).
	Data []string `json:"data,omitempty"`
}

// Grid is the plot's place in the chart: distances from its edges, in
// pixels ("70") or a share ("10%").
type Grid struct {
	Left   string `json:"left,omitempty"`
	Top    string `json:"top,omitempty"`
	Right  string `json:"right,omitempty"`
	Bottom string `json:"bottom,omitempty"`
}

// Label is the text on a datum, a series or a mark.
type Label struct {
	Show       *bool  `json:"show,omitempty"`
	Color      string `json:"color,omitempty"`
	FontWeight string `json:"fontWeight,omitempty"`
	FontSize   int    `json:"fontSize,omitempty"`
	LineHeight int    `json:"lineHeight,omitempty"`
	// Position: "top", "insideBottom", "insideEndTop", …
	Position string `json:"position,omitempty"`
	// Formatter is the text, or a template of it ("{b}": the name).
	Formatter string `json:"formatter,omitempty"`
}

// ItemStyle styles a datum (a point, a bar, a heatmap cell) or a band.
type ItemStyle struct {
	Color       string   `json:"color,omitempty"`
	BorderColor string   `json:"borderColor,omitempty"`
	BorderWidth float64  `json:"borderWidth,omitempty"`
	Opacity     *float64 `json:"opacity,omitempty"`
}

// LineStyle styles a line: a series' or a mark's.
type LineStyle struct {
	Color string  `json:"color,omitempty"`
	Width float64 `json:"width,omitempty"`
	// Type: "solid", "dashed", "dotted".
	Type    string   `json:"type,omitempty"`
	Opacity *float64 `json:"opacity,omitempty"`
}

// AreaStyle fills the area under a line.
type AreaStyle struct {
	Color string `json:"color,omitempty"`
}

// Series is one series of a chart.
type Series struct {
	Name string `json:"name"`
	// Type: "line", "bar", "scatter", "heatmap".
	Type string  `json:"type"`
	Data []Datum `json:"data"`
	// Stack: series with the same stack are drawn on top of each other;
	// StackStrategy "all" stacks negative values too.
	Stack         string `json:"stack,omitempty"`
	StackStrategy string `json:"stackStrategy,omitempty"`
	Color         string `json:"color,omitempty"`
	Symbol        string `json:"symbol,omitempty"`
	SymbolSize    int    `json:"symbolSize,omitempty"`
	ShowSymbol    *bool  `json:"showSymbol,omitempty"`
	ShowAllSymbol bool   `json:"showAllSymbol,omitempty"`
	Cursor        string `json:"cursor,omitempty"`
	Z             int    `json:"z,omitempty"`
	Silent        bool   `json:"silent,omitempty"`
	// ConnectNulls false (Gaps) keeps a line broken across an absent
	// point: a gap in the samples is no line, never a bridge.
	ConnectNulls *bool      `json:"connectNulls,omitempty"`
	LineStyle    *LineStyle `json:"lineStyle,omitempty"`
	AreaStyle    *AreaStyle `json:"areaStyle,omitempty"`
	ItemStyle    *ItemStyle `json:"itemStyle,omitempty"`
	Label        *Label     `json:"label,omitempty"`
	Tooltip      *Tooltip   `json:"tooltip,omitempty"`
	MarkLine     *MarkLine  `json:"markLine,omitempty"`
	MarkArea     *MarkArea  `json:"markArea,omitempty"`
}

// Value is one number of a datum, or absent (ECharts' "-").
type Value struct {
	V  float64
	OK bool
}

// Num is a present value.
func Num(v float64) Value { return Value{V: v, OK: true} }

// Absent is a value the server did not report: no point, no bar.
var Absent = Value{}

// Of is v when ok, else Absent.
func Of(v float64, ok bool) Value { return Value{V: v, OK: ok} }

// MarshalJSON writes the number, or "-" when absent.
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.OK {
		return []byte(`"-"`), nil
	}
	return json.Marshal(v.V)
}

// Datum is one data item: a Value alone (on a category axis, its index is
// its x), or a Value at coordinates At (numbers or category names: [x]
// for a point, [x, y] for a heatmap cell). Name, ItemStyle, Label and
// SymbolSize make it an object; without them it is written bare, which
// keeps long series short.
type Datum struct {
	At         []any
	Value      Value
	Name       string
	ItemStyle  *ItemStyle
	Label      *Label
	SymbolSize int
}

// V is a bare datum of value v.
func V(v Value) Datum { return Datum{Value: v} }

// XY is a point at x of value y.
func XY(x, y float64) Datum { return Datum{At: []any{x}, Value: Num(y)} }

// MarshalJSON writes the datum bare or as an object.
func (d Datum) MarshalJSON() ([]byte, error) {
	var value any = d.Value
	if len(d.At) > 0 {
		value = append(append([]any{}, d.At...), d.Value)
	}
	if d.Name == "" && d.ItemStyle == nil && d.Label == nil && d.SymbolSize == 0 {
		return json.Marshal(value)
	}
	return json.Marshal(struct {
		Name       string     `json:"name,omitempty"`
		Value      any        `json:"value"`
		ItemStyle  *ItemStyle `json:"itemStyle,omitempty"`
		Label      *Label     `json:"label,omitempty"`
		SymbolSize int        `json:"symbolSize,omitempty"`
	}{d.Name, value, d.ItemStyle, d.Label, d.SymbolSize})
}

// MarkLine is a series' lines across the plot (Event, ChangePoint,
// Reference build its items).
type MarkLine struct {
	Silent    bool           `json:"silent"`
	Symbol    []string       `json:"symbol"`
	Animation bool           `json:"animation"`
	Data      []MarkLineItem `json:"data"`
}

// MarkLineItem is one line: vertical at XAxis or horizontal at YAxis.
type MarkLineItem struct {
	Name      string     `json:"name,omitempty"`
	XAxis     *float64   `json:"xAxis,omitempty"`
	YAxis     *float64   `json:"yAxis,omitempty"`
	LineStyle *LineStyle `json:"lineStyle,omitempty"`
	Label     *Label     `json:"label,omitempty"`
}

// MarkArea is a series' shaded bands (Phases builds it).
type MarkArea struct {
	Silent    bool         `json:"silent"`
	ItemStyle *ItemStyle   `json:"itemStyle,omitempty"`
	Label     *Label       `json:"label,omitempty"`
	Data      [][2]AreaEnd `json:"data"`
}

// AreaEnd is one end of a band on the x axis only, so that ECharts spans
// the band over the plot's whole height (a band given y ends would cover
// only one series' range). A band's first end may carry its own style and
// label, over the MarkArea's (Outages).
type AreaEnd struct {
	Name      string     `json:"name,omitempty"`
	XAxis     float64    `json:"xAxis"`
	ItemStyle *ItemStyle `json:"itemStyle,omitempty"`
	Label     *Label     `json:"label,omitempty"`
}

// The palette: every page draws with these colours, and a colour means
// one thing on a page. Charts whose series are arms (or an arm's trials)
// draw in ArmColors; charts whose series are kinds of thing (outcomes,
// stages, where an op ran) draw in Categories (NewOfKinds), which share
// no colour with the arms, so red is E's on every chart of a page and
// never also "killed" or a stage beside it.
var (
	// ArmColors are the arms' colours, in arm order (ArmColor).
	ArmColors = []string{"#1f6fb2", "#d1495b", "#2a9d5c", "#e08e0b", "#7b4fb5", "#5f6b77", "#c2185b", "#00838f"}
	// Categories are the colours of kinds of thing: earth tones and greys,
	// far from every arm colour.
	Categories = []string{"#3b3b3b", "#a3a3a3", "#8c6d46", "#d9c8a9", "#6b6b3a", "#d4d4d4", "#5c4033", "#b5b58f"}
	// Sequential runs from low to high values with no judgement.
	Sequential = []string{"#edf4fb", "#6baed6", "#08306b"}
	// BadToGood runs from a bad low value to a good high one (a share).
	BadToGood = []string{"#b3261e", "#f2c94c", "#2a9d5c"}
	// NoneToMany runs from none (white) to many of a bad thing (a count).
	NoneToMany = []string{"#f7f7f7", "#f4a261", "#b3261e"}
	// Diverging runs from negative through zero (white) to positive.
	Diverging = []string{"#d1495b", "#f7f7f7", "#1f6fb2"}
)

const (
	// Ink is the colour of marks that are not an arm's (trial points,
	// the frame of a default setting).
	Ink = "#1d2329"
	// Paper is the page's background: the gaps between heatmap cells.
	Paper = "#ffffff"
	// Frame outlines a highlighted item.
	Frame = "#111111"
	// Muted is the colour of reference lines (marks, limits, zero).
	Muted = "#888888"
	// PhaseShade fills the phase bands.
	PhaseShade = "rgba(120,130,140,0.08)"
	// OutageShade fills the spans without a primary (Outages): darker
	// than the phases, and no arm's colour.
	OutageShade = "rgba(40,40,40,0.16)"
	// Regression, Improvement and Neutral colour change points by
	// direction.
	Regression  = "#b3261e"
	Improvement = "#17713a"
	Neutral     = "#5f6b77"
	// Violet is a second series' colour where one series has the first
	// arm colour (the trend's effect line).
	Violet = "#7b4fb5"
)

// ArmColor is the colour of the i-th arm (0-based), the same on every page.
func ArmColor(i int) string {
	if i < 0 {
		return Neutral
	}
	return ArmColors[i%len(ArmColors)]
}

// Fade is a colour as a translucent fill (a band): hex "#rrggbb" at alpha.
func Fade(hex string, alpha float64) string {
	var r, g, b int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return hex
	}
	return fmt.Sprintf("rgba(%d,%d,%d,%g)", r, g, b, alpha)
}

// Bool is a pointer to b, for the option's tri-state fields.
func Bool(b bool) *bool { return &b }

// Float is a pointer to v, for axis bounds and opacities.
func Float(v float64) *float64 { return &v }

// New is a chart with the pages' shared look: its title, the palette, an
// axis tooltip kept inside the chart, a legend under the title (scrolling
// when it is long) and a grid leaving room for axis names.
func New(title string) Option {
	return Option{
		Color:   ArmColors,
		Title:   &Title{Text: title, TextStyle: &TextStyle{FontSize: 14}},
		Tooltip: &Tooltip{Trigger: "axis", Confine: true},
		Legend:  &Legend{Show: Bool(true), Top: "28", Type: "scroll"},
		Grid:    &Grid{Top: "70", Left: "70", Right: "30", Bottom: "60"},
	}
}

// NewOfKinds is New for a chart whose series are kinds of thing, not
// arms: it draws in Categories.
func NewOfKinds(title string) Option {
	o := New(title)
	o.Color = Categories
	return o
}

// Zoom is the pages' zoom: wheel and drag inside the plot, and a slider
// under it.
func Zoom() []DataZoom {
	return []DataZoom{{Type: "inside"}, {Type: "slider", Height: 18, Bottom: 8}}
}

// Phase is one phase of a trial on the x axis, From to To.
type Phase struct {
	Name     string
	From, To float64
}

// Phases shades phases as bands over the plot's height, each labelled
// above the plot (outside it, where no mark line of the plot runs over
// the name).
func Phases(phases []Phase) *MarkArea {
	ma := &MarkArea{Silent: true, ItemStyle: &ItemStyle{Color: PhaseShade},
		Label: &Label{Show: Bool(true), Position: "top", Color: Neutral}}
	for _, p := range phases {
		ma.Data = append(ma.Data, [2]AreaEnd{{Name: p.Name, XAxis: p.From}, {XAxis: p.To}})
	}
	return ma
}

// Outages are bands over the spans (from, to on the x axis) without a
// primary, shaded OutageShade and labelled label inside their bottom, to
// add to a series' MarkArea (beside Phases: each band carries its own
// style).
func Outages(spans [][2]float64, label string) [][2]AreaEnd {
	var out [][2]AreaEnd
	for _, s := range spans {
		out = append(out, [2]AreaEnd{{Name: label, XAxis: s[0], ItemStyle: &ItemStyle{Color: OutageShade},
			Label: &Label{Show: Bool(true), Position: "insideBottom", Color: Ink, FontSize: 10, LineHeight: 13}}, {XAxis: s[1]}})
	}
	return out
}

// Lines are mark lines drawn without end symbols, silent (they never take
// the tooltip from the data).
func Lines(items ...MarkLineItem) *MarkLine {
	if len(items) == 0 {
		return nil
	}
	return &MarkLine{Silent: true, Symbol: []string{"none", "none"}, Data: items}
}

// Event marks something that happened at x (a failover, a restart): a
// thin dashed vertical line in color, unlabelled (the section's note says
// what the lines are).
func Event(x float64, name, color string) MarkLineItem {
	return MarkLineItem{Name: name, XAxis: Float(x), LineStyle: &LineStyle{Color: color, Type: "dashed", Width: 1},
		Label: &Label{Show: Bool(false)}}
}

// ChangePoint marks a change point at x: a bold dashed vertical line in
// color, labelled with label at its top.
func ChangePoint(x float64, label, color string) MarkLineItem {
	return MarkLineItem{Name: "change point", XAxis: Float(x), LineStyle: &LineStyle{Color: color, Type: "dashed", Width: 2},
		Label: &Label{Show: Bool(true), Position: "insideEndTop", Color: color, FontWeight: "bold", Formatter: label}}
}

// Reference marks a reference value y (a mark, a limit, no effect): a
// dotted horizontal line, labelled with its name when labelled. The label
// sits inside the plot, above the line's right end: at the line's end
// (ECharts' default) a name wider than the grid's margin is cut off.
func Reference(y float64, name string, labelled bool) MarkLineItem {
	it := MarkLineItem{Name: name, YAxis: Float(y), LineStyle: &LineStyle{Color: Muted, Type: "dotted", Width: 1},
		Label: &Label{Show: Bool(labelled)}}
	if labelled {
		it.Label.Formatter = "{b}"
		it.Label.Position = "insideEndTop"
		it.Label.Color = Neutral
	}
	return it
}

// JS encodes v (options, or a page's data holding them) for a page's
// script. User strings (arm names, run ids) reach it as JSON strings;
// "<" escaped as \u003c keeps any "</script" in them inert.
func JS(v any) (template.JS, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("chart options: %w", err)
	}
	return template.JS(strings.ReplaceAll(string(b), "<", `\u003c`)), nil
}
