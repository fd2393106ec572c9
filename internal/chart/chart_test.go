package chart

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/chartcheck"
	"github.com/qmlsab/qmlsab/internal/depcheck"
)

// The chart layer sits below every page: it may not import any of them,
// nor the results or the simulator.
func TestChartIsALeaf(t *testing.T) {
	const m = "github.com/qmlsab/qmlsab/"
	depcheck.Forbid(t, m+"internal/chart", m+"report", m+"nightly", m+"sweep", m+"store", m+"metric", m+"mongosim", m+"run", m+"cmd")
}

// Every chart is built from this package's types alone: no page and no
// command takes a chart type from a chart library (go-echarts' style
// structs were half of each chart's option before issue 39).
func TestChartsAreOneLibrarysTypes(t *testing.T) {
	depcheck.Forbid(t, "github.com/qmlsab/qmlsab/...", "github.com/go-echarts")
}

// An absent value is ECharts' "-" (no point, no bar), never 0; a present
// 0 is 0. A datum is bare unless it carries a name or a style.
func TestValuesAndDataEncode(t *testing.T) {
	for _, c := range []struct {
		d    Datum
		want string
	}{
		{V(Absent), `"-"`},
		{V(Num(0)), `0`},
		{V(Of(2.5, false)), `"-"`},
		{XY(3, 0.25), `[3,0.25]`},
		{Datum{At: []any{1, 2}, Value: Absent}, `[1,2,"-"]`},
		{Datum{At: []any{"E sheds/s"}, Value: Num(4), Name: "E#1", SymbolSize: 7}, `{"name":"E#1","value":["E sheds/s",4],"symbolSize":7}`},
		{Datum{Value: Num(1), Name: "cell"}, `{"name":"cell","value":1}`},
	} {
		b, err := json.Marshal(c.d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%+v encodes as %s, want %s", c.d, b, c.want)
		}
	}
}

// A chart built with the layer reads back, through the checks every page
// test uses, as what was built: its axes, its series with absent points
// absent, phase bands spanning the plot by x alone, events and change
// points at their x, references at their y.
func TestOptionReadsBackAsBuilt(t *testing.T) {
	o := New("Read tickets")
	o.XAxis = &Axis{Type: "value", Name: "s into the trial"}
	o.YAxis = &Axis{Type: "value", Name: "tickets"}
	o.DataZoom = Zoom()
	s := Series{Name: "E#0", Type: "line", Data: []Datum{XY(0, 8), XY(1, 6), {At: []any{2.0}, Value: Absent}}, Color: ArmColor(1)}
	s.MarkArea = Phases([]Phase{{"warmup", 0, 10}, {"storm", 10, 40}, {"recovery", 40, 60}})
	s.MarkLine = Lines(Event(12, "failover", ArmColor(1)), ChangePoint(30, "▼ regression p=0.010", Regression), Reference(5, "low mark", true))
	o.Series = []Series{s}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := chartcheck.Parse("ts", b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Title != "Read tickets" || c.XType != "value" || c.XName != "s into the trial" || c.YName != "tickets" || len(c.Series) != 1 {
		t.Fatalf("read back as %+v", c)
	}
	got := c.Series[0]
	if pts := got.Present(); len(got.Points) != 3 || len(pts) != 2 || pts[1].Y != 6 {
		t.Errorf("points %+v: want 3, the last absent", got.Points)
	}
	wantX := []float64{0, 10, 10, 40, 40, 60, 12, 30}
	if len(got.MarkXs) != len(wantX) {
		t.Fatalf("mark xs %v, want %v", got.MarkXs, wantX)
	}
	for i, x := range wantX {
		if got.MarkXs[i] != x {
			t.Errorf("mark x %d = %g, want %g", i, got.MarkXs[i], x)
		}
	}
	if len(got.MarkYs) != 1 || got.MarkYs[0] != 5 {
		t.Errorf("mark ys %v, want [5]", got.MarkYs)
	}
	// A band given y ends would cover one series' range only.
	if strings.Contains(string(b), `"yAxis":0`) || strings.Contains(string(b), `"YAxis"`) {
		t.Errorf("a phase band has a y end: %s", b)
	}
	if !strings.Contains(string(b), `"animation":false`) {
		t.Error("the chart animates")
	}
}

// No mark line is drawn when there is nothing to mark.
func TestNoMarksNoMarkLine(t *testing.T) {
	if Lines() != nil {
		t.Error("Lines() of nothing is not nil")
	}
	b, _ := json.Marshal(Series{Name: "x", Type: "line", MarkLine: Lines()})
	if strings.Contains(string(b), "markLine") {
		t.Errorf("empty marks encoded: %s", b)
	}
}

// A user string that closes the script stays inside its JSON string.
func TestJSKeepsScriptClosed(t *testing.T) {
	o := New("</script><script>alert(1)</script>")
	js, err := JS(map[string]Option{"c": o})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "<") {
		t.Errorf("a raw < reached the page's script: %s", js)
	}
	var back map[string]struct {
		Title struct {
			Text string `json:"text"`
		} `json:"title"`
	}
	if err := json.Unmarshal([]byte(js), &back); err != nil || back["c"].Title.Text != "</script><script>alert(1)</script>" {
		t.Errorf("the title did not survive: %v %+v", err, back)
	}
}

func TestArmColorsAndFade(t *testing.T) {
	if ArmColor(0) != ArmColors[0] || ArmColor(len(ArmColors)) != ArmColors[0] || ArmColor(-1) != Neutral {
		t.Error("arm colours do not cycle through the palette")
	}
	if got := Fade("#1f6fb2", 0.22); got != "rgba(31,111,178,0.22)" {
		t.Errorf("Fade = %s", got)
	}
	if got := Fade("red", 0.5); got != "red" {
		t.Errorf("Fade of a name = %s, want it unchanged", got)
	}
}

// A reference line's name sits inside the plot, above the line's right
// end: at the line's end, ECharts' default, "memory limit" was cut to
// "mem" by the grid's margin.
func TestReferenceLabelsSitInsideThePlot(t *testing.T) {
	r := Reference(20, "memory limit", true)
	if r.Label == nil || !strings.HasPrefix(r.Label.Position, "inside") {
		t.Errorf("a labelled reference's label is at %+v, want an inside position", r.Label)
	}
	if u := Reference(0, "no effect", false); u.Label == nil || u.Label.Show == nil || *u.Label.Show {
		t.Errorf("an unlabelled reference shows a label: %+v", u.Label)
	}
}

// Phase names sit above the plot, where no failover or restart line of
// the plot runs over them.
func TestPhaseNamesSitAboveThePlot(t *testing.T) {
	ma := Phases([]Phase{{"warmup", 0, 10}})
	if ma.Label == nil || ma.Label.Position != "top" {
		t.Errorf("phase labels at %+v, want top (outside the plot)", ma.Label)
	}
}

// Spans without a primary are bands of their own shade, each labelled,
// apart from the phases' shade and from every arm's colour.
func TestOutagesAreShadedAndLabelled(t *testing.T) {
	bands := Outages([][2]float64{{40, 51}, {64, 75}}, "no primary")
	if len(bands) != 2 {
		t.Fatalf("bands %+v", bands)
	}
	for _, b := range bands {
		if b[0].ItemStyle == nil || b[0].ItemStyle.Color != OutageShade || b[0].Label == nil || b[0].Label.Show == nil || !*b[0].Label.Show || b[0].Name != "no primary" {
			t.Errorf("band %+v: want OutageShade and a shown label", b)
		}
	}
	if OutageShade == PhaseShade {
		t.Error("outages and phases share a shade")
	}
}

// One colour, one meaning: the colours of kinds of thing (outcomes,
// stages) are far from every arm's, so no chart of a page shows an arm's
// red as "killed" beside a chart where red is E.
func TestKindsNeverWearAnArmsColour(t *testing.T) {
	rgb := func(hex string) [3]float64 {
		var r, g, b int
		if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
			t.Fatalf("%s: %v", hex, err)
		}
		return [3]float64{float64(r), float64(g), float64(b)}
	}
	for _, k := range Categories {
		for _, a := range ArmColors {
			x, y := rgb(k), rgb(a)
			if d := math.Sqrt((x[0]-y[0])*(x[0]-y[0]) + (x[1]-y[1])*(x[1]-y[1]) + (x[2]-y[2])*(x[2]-y[2])); d < 60 {
				t.Errorf("kind colour %s is %0.f from arm colour %s: too close to tell apart", k, d, a)
			}
		}
	}
	if o := NewOfKinds("x"); !slices.Equal(o.Color, Categories) {
		t.Errorf("NewOfKinds draws in %v", o.Color)
	}
	if o := New("x"); !slices.Equal(o.Color, ArmColors) {
		t.Errorf("New draws in %v", o.Color)
	}
}
