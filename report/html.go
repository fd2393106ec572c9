package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/templates"
)

// MaxPoints bounds a chart line's points (see downsample).
const MaxPoints = 800

// armColors are the arms' colours, in arm order.
var armColors = []string{"#1f6fb2", "#d1495b", "#2a9d5c", "#e08e0b", "#7b4fb5", "#5f6b77", "#c2185b", "#00838f"}

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
	Cells                []gateCell
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
	options := map[string]json.RawMessage{}
	secs, err := chartSections(a, options)
	if err != nil {
		return nil, err
	}
	p.Sections = secs
	if hs := hostSection(a); hs != nil {
		p.Sections = append([]section{*hs}, secs...)
	}
	js, err := json.Marshal(options)
	if err != nil {
		return nil, err
	}
	// User strings (arm names) reach the options as JSON strings; "<"
	// escaped as \u003c keeps any "</script" in them inert.
	p.Options = template.JS(strings.ReplaceAll(string(js), "<", `\u003c`))
	tpl, err := templates.Report(template.FuncMap{"join": strings.Join})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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

// option renders a chart's option JSON through go-echarts.
func option(r render.Renderer) json.RawMessage {
	return json.RawMessage(r.RenderSnippet().Option)
}

func base(id, title string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{ChartID: id}),
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: title}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "28", Type: "scroll"}),
		charts.WithGridOpts(opts.Grid{Top: "70", Left: "70", Right: "30", Bottom: "60"}),
	}
}

// chartSections builds the charts (options keyed by chart ID, fixed so
// the output is reproducible) and the sections that hold them.
func chartSections(a *Analysis, options map[string]json.RawMessage) ([]section, error) {
	var secs []section
	color := func(arm string) string { return armColors[slices.Index(a.In.Arms, arm)%len(armColors)] }
	// median is an arm's median as the departures table shows it: "–",
	// titled with why, when the trials did not report the metric.
	median := func(arm *Arm, m string) (float64, string) {
		if s, ok := arm.Metrics[m]; ok {
			return s.Median, Number(s.Median)
		}
		_, why := a.AbsentNote(arm.Name, m)
		return math.NaN(), `<span title="` + template.HTMLEscapeString(why) + `">–</span>`
	}
	// medianBar is an arm's median as a bar: a metric the arm's trials
	// did not report is no bar (ECharts' "-"), never a bar of 0.
	medianBar := func(arm *Arm, m string) opts.BarData {
		if s, ok := arm.Metrics[m]; ok {
			return opts.BarData{Value: s.Median}
		}
		return opts.BarData{Value: "-"}
	}
	if a.In.Workload.Merge != nil {
		bar := charts.NewBar()
		bar.SetGlobalOptions(append(base("merge-unsafe", "Unsafe sheds per trial (median), by where the $merge ran"),
			charts.WithYAxisOpts(opts.YAxis{Name: unitOpsPerTrial}))...)
		bar.SetXAxis(a.In.Arms)
		for _, rp := range []string{metric.ReadPrefPrimary, metric.ReadPrefSecondary} {
			name, _ := metric.UnsafeShedsOn(rp)
			var data []opts.BarData
			for i := range a.Arms {
				data = append(data, medianBar(&a.Arms[i], name))
			}
			bar.AddSeries("on "+rp, data, charts.WithBarChartOpts(opts.BarChart{Stack: "unsafe"}))
		}
		options["merge-unsafe"] = option(bar)
		secs = append(secs, section{ID: "merge", Title: "Partial writes: $merge shed after writing (the partial-write investigation)",
			Note:   "An unsafe shed is a $merge op that failed shed or killed after it had written documents to its target.",
			Charts: []chartRef{{"merge-unsafe"}}})
		return secs, nil
	}

	// The sweeper investigation's central picture: where the low-priority queue's
	// departures went.
	dep := charts.NewBar()
	dep.SetGlobalOptions(append(base("departures", "Low-priority queue departures per second of storm (median)"),
		charts.WithYAxisOpts(opts.YAxis{Name: unitOpsPerS}))...)
	dep.SetXAxis(a.In.Arms)
	for _, s := range []struct{ metric, name string }{{"admissions_per_s", "admitted (got a ticket)"}, {"kills_per_s", "killed while queued"}} {
		var data []opts.BarData
		for i := range a.Arms {
			data = append(data, medianBar(&a.Arms[i], s.metric))
		}
		dep.AddSeries(s.name, data, charts.WithBarChartOpts(opts.BarChart{Stack: "departures"}))
	}
	options["departures"] = option(dep)
	sva := shedsVsAdmissions(a, color)
	options["sheds-vs-admissions"] = option(sva)
	var tbl strings.Builder
	tbl.WriteString(`<table class="data"><tr><th>arm</th><th>admissions/s</th><th>queue kills/s</th><th>kills share of departures</th><th>sheds/s</th></tr>`)
	for i := range a.Arms {
		arm := &a.Arms[i]
		ad, adCell := median(arm, "admissions_per_s")
		ki, kiCell := median(arm, "kills_per_s")
		_, shCell := median(arm, "sheds_per_s")
		share := "–"
		if ad+ki > 0 { // false for NaN too: no share of what was not reported
			share = fmt.Sprintf("%.2f", ki/(ad+ki))
		}
		fmt.Fprintf(&tbl, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", template.HTMLEscapeString(arm.Name), adCell, kiCell, share, shCell)
	}
	tbl.WriteString("</table>")
	secs = append(secs, section{ID: "departures", Title: "Why: queue departures and sheds",
		Note: "Every op that leaves the low-priority read queue either got a ticket (admitted) or was killed while it waited. " +
			"An op admitted with its memory still held keeps the memory in the server; shedding works when it outpaces admissions.",
		Charts: []chartRef{{"departures"}, {"sheds-vs-admissions"}}, Table: template.HTML(tbl.String())})

	// Time series, one line per valid trial.
	data, err := readTrials(a)
	if err != nil {
		return nil, err
	}
	type tsDef struct {
		id, title, yName string
		series           func(d *trialData) [][2]float64
	}
	ts := []tsDef{
		{"ts-tickets", "Read tickets on the primary", unitTickets, func(d *trialData) [][2]float64 {
			return d.gauge(func(s store.Second) *float64 { return s.ReadTix }, 1)
		}},
		{"ts-queue", "Low-priority read queue length on the primary", unitQueuedOps, func(d *trialData) [][2]float64 {
			return d.gauge(func(s store.Second) *float64 { return s.LowQueue }, 1)
		}},
		{"ts-rss", "Resident memory of the primary", unitGiB, func(d *trialData) [][2]float64 {
			// serverStatus mem.resident is in MiB.
			return d.gauge(func(s store.Second) *float64 { return s.ResidentMB }, 1.0/1024)
		}},
		{"ts-availability", "Canary availability per second (share within the SLO)", unitShare, (*trialData).availabilityPerSecond},
		{"ts-sheds", "Sheds and killOp kills per second", unitOpsPerS, (*trialData).shedsPerSecond},
	}
	var refs []chartRef
	var empty []string // charts, or trials of a chart, without data
	for _, def := range ts {
		line := charts.NewLine()
		line.SetGlobalOptions(append(base(def.id, def.title),
			charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "s into the trial", NameLocation: "middle", NameGap: 28}),
			charts.WithYAxisOpts(opts.YAxis{Name: def.yName}),
			charts.WithDataZoomOpts(opts.DataZoom{Type: "inside"}, opts.DataZoom{Type: "slider"}),
		)...)
		var none []string
		for _, d := range data {
			pts := downsample(def.series(d), MaxPoints)
			if len(pts) == 0 {
				// Nothing reported: no line, rather than a line of zeros.
				none = append(none, fmt.Sprintf("%s#%d", d.Arm, d.Index))
				continue
			}
			ld := make([]opts.LineData, len(pts))
			for j, p := range pts {
				ld[j] = opts.LineData{Value: []float64{p[0], p[1]}}
			}
			so := []charts.SeriesOpts{
				charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
				charts.WithLineStyleOpts(opts.LineStyle{Color: color(d.Arm), Width: 1.2, Opacity: opts.Float(0.75)}),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: color(d.Arm)}),
			}
			fo, re := d.marks()
			var ml []opts.MarkLineNameXAxisItem
			for _, x := range fo {
				ml = append(ml, opts.MarkLineNameXAxisItem{Name: "failover", XAxis: x})
			}
			for _, x := range re {
				ml = append(ml, opts.MarkLineNameXAxisItem{Name: "restart", XAxis: x})
			}
			if len(ml) > 0 {
				so = append(so, charts.WithMarkLineNameXAxisItemOpts(ml...),
					charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
						LineStyle: &opts.LineStyle{Color: color(d.Arm), Type: "dashed"}, Label: &opts.Label{Show: opts.Bool(false)}}))
			}
			if len(line.MultiSeries) == 0 {
				so = append(so, phaseAreas(d), charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{ItemStyle: &opts.ItemStyle{Color: "rgba(120,130,140,0.08)"},
					Label: &opts.Label{Show: opts.Bool(true), Position: "insideTop"}}))
			}
			line.AddSeries(fmt.Sprintf("%s#%d", d.Arm, d.Index), ld, so...)
		}
		if len(none) > 0 {
			empty = append(empty, fmt.Sprintf("%s: no data for %s (the server reported none of it%s)", def.title, strings.Join(none, ", "), noDataWhy(def.id)))
		}
		if len(line.MultiSeries) == 0 {
			continue // no trial has data: no chart, and the note says so
		}
		if def.id == "ts-rss" {
			addMemoryMarks(line, data)
		}
		options[def.id] = option(line)
		refs = append(refs, chartRef{def.id})
	}
	note := "Shaded: phases. Dashed vertical lines: failovers and member restarts of that trial's colour. Scroll or drag the slider to zoom."
	if len(empty) > 0 {
		note += " " + strings.Join(empty, "; ") + "."
	}
	secs = append(secs, section{ID: "series", Title: "Over time (one line per trial)", Note: note, Charts: refs})

	// Victims: who the shedder or the actor killed.
	hist := charts.NewBar()
	hist.SetGlobalOptions(append(base("victims-tracked", "Victims' tracked memory (share of each arm's sized victims per 8 MiB bin)"),
		charts.WithYAxisOpts(opts.YAxis{Name: unitPercent}))...)
	stages := charts.NewBar()
	stages.SetGlobalOptions(append(base("victims-stages", "Victims' stage mix (% of each arm's victims)"),
		charts.WithYAxisOpts(opts.YAxis{Name: unitPercent, Max: 100}))...)
	// Pool each arm's trial summaries (store.Victims).
	pooled := map[string]*store.Victims{}
	binsUsed := 0
	for _, arm := range a.In.Arms {
		p := &store.Victims{}
		for _, t := range a.In.Valid(arm) {
			if t.Victims != nil {
				p.Merge(t.Victims)
			}
		}
		pooled[arm] = p
		binsUsed = max(binsUsed, len(p.Bins))
	}
	binsUsed = min(binsUsed, 40)
	var labels []string
	const binMiB = store.VictimBinBytes >> 20
	for i := range binsUsed {
		labels = append(labels, fmt.Sprintf("%d–%d MiB", i*binMiB, (i+1)*binMiB))
	}
	hist.SetXAxis(labels)
	stageNames := map[string]bool{}
	for _, p := range pooled {
		for st := range p.Stages {
			stageNames[st] = true
		}
	}
	sn := make([]string, 0, len(stageNames))
	for st := range stageNames {
		sn = append(sn, st)
	}
	sort.Strings(sn)
	stages.SetXAxis(a.In.Arms)
	var vt strings.Builder
	vt.WriteString(`<table class="data"><tr><th>arm</th><th>victims</th><th>sized</th><th>median size (bin)</th>`)
	for _, st := range sn {
		fmt.Fprintf(&vt, "<th>%s</th>", template.HTMLEscapeString(st))
	}
	vt.WriteString("</tr>")
	for _, arm := range a.In.Arms {
		p := pooled[arm]
		bd := make([]opts.BarData, binsUsed)
		medBin := -1
		seen := 0
		for i := range binsUsed {
			c := 0
			if i < len(p.Bins) {
				c = p.Bins[i]
			}
			if i == binsUsed-1 { // the last bin takes everything above it
				for j := i + 1; j < len(p.Bins); j++ {
					c += p.Bins[j]
				}
			}
			seen += c
			if medBin < 0 && p.Sized > 0 && 2*seen >= p.Sized {
				medBin = i
			}
			share := 0.0
			if p.Sized > 0 {
				share = 100 * float64(c) / float64(p.Sized)
			}
			bd[i] = opts.BarData{Value: share}
		}
		hist.AddSeries(arm, bd, charts.WithItemStyleOpts(opts.ItemStyle{Color: color(arm)}))
		med := "–"
		if medBin >= 0 {
			med = labels[medBin]
		}
		fmt.Fprintf(&vt, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td>", template.HTMLEscapeString(arm), p.Count, p.Sized, med)
		for _, st := range sn {
			pct := "–"
			if p.Count > 0 {
				pct = fmt.Sprintf("%.0f%%", 100*float64(p.Stages[st])/float64(p.Count))
			}
			fmt.Fprintf(&vt, "<td>%s</td>", pct)
		}
		vt.WriteString("</tr>")
	}
	vt.WriteString("</table>")
	for _, st := range sn {
		var bd []opts.BarData
		for _, arm := range a.In.Arms {
			p := pooled[arm]
			share := 0.0
			if p.Count > 0 {
				share = 100 * float64(p.Stages[st]) / float64(p.Count)
			}
			bd = append(bd, opts.BarData{Value: share})
		}
		stages.AddSeries(st, bd, charts.WithBarChartOpts(opts.BarChart{Stack: "stages"}))
	}
	vnote := "Tracked bytes are inUseTrackedMemBytes when the op was shed or killed. Over the wire a shed op's error carries no size, " +
		"so there only the killOp actor's victims are sized; the model (virtual clock) sizes every victim."
	var vcharts []chartRef
	// A chart with nothing to draw is left out, and the note says why.
	if binsUsed > 0 {
		options["victims-tracked"] = option(hist)
		vcharts = append(vcharts, chartRef{"victims-tracked"})
	} else {
		vnote += " No victim's size is known in these trials, so there is no size histogram."
	}
	if len(sn) > 0 {
		options["victims-stages"] = option(stages)
		vcharts = append(vcharts, chartRef{"victims-stages"})
	} else {
		vnote += " No storm op was shed or killed in these trials."
	}
	secs = append(secs, section{ID: "victims", Title: "Victims: what was shed or killed in the storm",
		Note: vnote, Charts: vcharts, Table: template.HTML(vt.String())})
	return secs, nil
}

// noDataWhy says, for a time series a trial had no point of, what its
// absence means.
func noDataWhy(id string) string {
	switch id {
	case "ts-sheds":
		return ": no queryMemory.loadShedding counters, and no killOp kill"
	case "ts-tickets", "ts-queue":
		return ": no queues.execution section"
	case "ts-rss":
		return ": no mem section"
	case "ts-availability":
		return ": no canary"
	}
	return ""
}

// phaseArea is one shaded phase: the ends of its band on the x axis
// only, so that ECharts spans the band over the whole plot's height
// (a band given y ends would cover only one series' range).
type phaseArea [2]struct {
	Name  string  `json:"name,omitempty"`
	XAxis float64 `json:"xAxis"`
}

// phaseAreas shades a trial's phases, from its start to its end.
func phaseAreas(d *trialData) charts.SeriesOpts {
	storm, recovery := d.Phases["storm"], d.Phases["recovery"]
	band := func(name string, from, to float64) any {
		var p phaseArea
		p[0].Name, p[0].XAxis, p[1].XAxis = name, from, to
		return p
	}
	return func(s *charts.SingleSeries) {
		if s.MarkAreas == nil {
			s.MarkAreas = &opts.MarkAreas{}
		}
		s.MarkAreas.Data = append(s.MarkAreas.Data, band("warmup", 0, storm), band("storm", storm, recovery), band("recovery", recovery, d.length))
	}
}

// addMemoryMarks draws the shedder's low and high marks and the memory
// limit, when the samples report them.
func addMemoryMarks(line *charts.Line, data []*trialData) {
	marks := map[string]float64{}
	for _, d := range data {
		for _, s := range d.series {
			for name, v := range map[string]*float64{"low mark": s.LowMark, "high mark": s.HighMark, "memory limit": s.MemLimit} {
				if v != nil && *v > 0 {
					marks[name] = *v / (1 << 30)
				}
			}
		}
	}
	if len(marks) == 0 || len(line.MultiSeries) == 0 {
		return
	}
	var items []opts.MarkLineNameYAxisItem
	for _, name := range []string{"low mark", "high mark", "memory limit"} {
		if v, ok := marks[name]; ok {
			items = append(items, opts.MarkLineNameYAxisItem{Name: name, YAxis: v})
		}
	}
	s := &line.MultiSeries[0]
	s.ConfigureSeriesOpts(charts.WithMarkLineNameYAxisItemOpts(items...),
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"}, LineStyle: &opts.LineStyle{Color: "#888", Type: "dotted"},
			Label: &opts.Label{Show: opts.Bool(true), Formatter: "{b}"}}))
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

// The units a chart's value axis names. Every chart names its value axis
// with one of them, so a reader (and the chart tests) knows what scale a
// number is on.
const (
	unitOpsPerS     = "ops/s"
	unitOpsPerTrial = "ops per trial"
	unitTickets     = "tickets"
	unitQueuedOps   = "queued ops"
	unitGiB         = "GiB"
	unitShare       = "availability" // a share in [0, 1]
	unitPercent     = "%"
)

// shedsVsAdmissions is the chart of each arm's sheds/s beside its
// admissions/s in the storm: a bar per arm and metric at the median of
// the arm's valid trials, and a point per trial on it.
func shedsVsAdmissions(a *Analysis, color func(arm string) string) *charts.Bar {
	sva := charts.NewBar()
	sva.SetGlobalOptions(append(base("sheds-vs-admissions", "Sheds/s vs admissions/s in the storm (bars: median; points: trials)"),
		charts.WithYAxisOpts(opts.YAxis{Name: unitOpsPerS}))...)
	var categories []string
	var bars []opts.BarData
	var points []opts.ScatterData
	for i := range a.Arms {
		arm := &a.Arms[i]
		for _, m := range []string{metric.ShedsPerS, metric.AdmissionsPerS} {
			category := arm.Name + " " + metric.Lookup(m).Title
			categories = append(categories, category)
			// Sheds in the arm's colour, admissions in a paler one.
			style := &opts.ItemStyle{Color: color(arm.Name), Opacity: opts.Float(1)}
			if m == metric.AdmissionsPerS {
				style.Opacity = opts.Float(0.45)
			}
			bar := opts.BarData{Value: "-", ItemStyle: style}
			if s, ok := arm.Metrics[m]; ok {
				bar.Value = s.Median
			}
			bars = append(bars, bar)
			for _, t := range a.In.Valid(arm.Name) {
				if v, ok := t.Metrics[m]; ok {
					points = append(points, opts.ScatterData{Name: fmt.Sprintf("%s#%d", arm.Name, t.Index), Value: []any{category, v}, SymbolSize: 7})
				}
			}
		}
	}
	sva.SetXAxis(categories)
	sva.AddSeries("median", bars)
	trials := charts.NewScatter()
	trials.AddSeries("trials", points, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#1d2329", Opacity: opts.Float(0.8)}))
	sva.Overlap(trials)
	return sva
}
