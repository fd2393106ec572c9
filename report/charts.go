package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// MaxPoints bounds a chart line's points (see downsample).
const MaxPoints = 800

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

// barChart is a chart of bars over the categories, its values in unit;
// its series are arms (drawn in the arms' colours) unless kinds says they
// are kinds of thing (outcomes, stages: chart.Categories).
func barChart(title, unit string, categories []string, kinds bool) chart.Option {
	o := chart.New(title)
	if kinds {
		o = chart.NewOfKinds(title)
	}
	o.XAxis = &chart.Axis{Type: "category", Data: categories}
	o.YAxis = &chart.Axis{Type: "value", Name: unit}
	return o
}

// bars is a series of bars, stacked on the others of stack when it is
// not empty.
func bars(name, stack string, data []chart.Datum) chart.Series {
	return chart.Series{Name: name, Type: "bar", Stack: stack, Data: data}
}

// chartSections builds the charts (options keyed by chart ID, fixed so
// the output is reproducible) and the sections that hold them.
func chartSections(a *Analysis, options map[string]chart.Option) ([]section, error) {
	var secs []section
	color := func(arm string) string { return chart.ArmColor(slices.Index(a.In.Arms, arm)) }
	// median is an arm's median as the departures table shows it: "–",
	// titled with why, when the trials did not report the metric.
	median := func(arm *Arm, m string) (float64, string) {
		if s, ok := arm.Metrics[m]; ok {
			return s.Median, metric.Number(s.Median)
		}
		_, why := a.AbsentNote(arm.Name, m)
		return math.NaN(), `<span title="` + template.HTMLEscapeString(why) + `">–</span>`
	}
	// medianBar is an arm's median as a bar: a metric the arm's trials
	// did not report is no bar, never a bar of 0.
	medianBar := func(arm *Arm, m string) chart.Datum {
		s, ok := arm.Metrics[m]
		return chart.V(chart.Of(s.Median, ok))
	}
	if a.In.Workload.Merge != nil {
		bar := barChart("Unsafe sheds per trial (median), by where the $merge ran", unitOpsPerTrial, a.In.Arms, true)
		for _, rp := range []string{metric.ReadPrefPrimary, metric.ReadPrefSecondary} {
			name, _ := metric.UnsafeShedsOn(rp)
			var data []chart.Datum
			for i := range a.Arms {
				data = append(data, medianBar(&a.Arms[i], name))
			}
			bar.Series = append(bar.Series, bars("on "+rp, "unsafe", data))
		}
		options["merge-unsafe"] = bar
		rows, err := mergeCaseRows(a)
		if err != nil {
			return nil, err
		}
		note := "An unsafe shed is a $merge/$out op that failed shed or killed after it had written documents into its target (a partial write). " +
			"A $out writes into a temporary collection and replaces its target only when it finishes, so a shed $out never half-modifies its target: " +
			"what it leaves in the temporary collection (which mongod drops best-effort) is counted apart, as $out temp leftovers, never as an unsafe shed. " + forcedNote(a)
		if len(rows) > 0 {
			note += " On the sharded cluster each op's pipeline ran on the source's shard, whose $merge/$out wrote through the router; the table gives each case's ops per arm and the nodes whose shed counter rose."
		}
		secs = append(secs, section{ID: "merge", Title: "Partial writes: $merge shed after writing (the partial-write investigation)",
			Note: note, Charts: []chartRef{{"merge-unsafe"}}, Table: mergeCaseTable(rows)})
		return secs, nil
	}

	// The sweeper investigation's central picture: where the low-priority queue's
	// departures went.
	dep := barChart("Low-priority queue departures per second with a primary (median)", unitOpsPerS, a.In.Arms, true)
	for _, s := range []struct{ metric, name string }{{metric.AdmissionsPerS, "admitted (got a ticket)"}, {metric.KillsPerS, "killed while queued"}} {
		var data []chart.Datum
		for i := range a.Arms {
			data = append(data, medianBar(&a.Arms[i], s.metric))
		}
		dep.Series = append(dep.Series, bars(s.name, "departures", data))
	}
	options["departures"] = dep
	options["sheds-vs-admissions"] = shedsVsAdmissions(a, color)
	var tbl strings.Builder
	tbl.WriteString(`<table class="data"><tr><th>arm</th><th>admissions/s (with a primary)</th><th>admissions/s (of storm)</th><th>queue kills/s</th><th>kills share of departures</th>` +
		`<th>server sheds/s</th><th>inline</th><th>sweeper</th><th>actor kills/s</th><th>low-pri queue</th><th>normal queue</th><th>running</th></tr>`)
	for i := range a.Arms {
		arm := &a.Arms[i]
		ad, adCell := median(arm, metric.AdmissionsPerS)
		_, adStormCell := median(arm, metric.AdmissionsPerStormS)
		ki, kiCell := median(arm, metric.KillsPerS)
		share := "–"
		if ad+ki > 0 { // false for NaN too: no share of what was not reported
			share = fmt.Sprintf("%.2f", ki/(ad+ki))
		}
		fmt.Fprintf(&tbl, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>", template.HTMLEscapeString(arm.Name), adCell, adStormCell, kiCell, share)
		for _, m := range []string{metric.ServerShedsPerS, metric.ServerShedsInlinePerS, metric.ServerShedsQueuedPerS,
			metric.ActorKillsPerS, metric.ActorKillsLowQueuePerS, metric.ActorKillsNormalQueuePerS, metric.ActorKillsRunningPerS} {
			_, cell := median(arm, m)
			fmt.Fprintf(&tbl, "<td>%s</td>", cell)
		}
		tbl.WriteString("</tr>")
	}
	tbl.WriteString("</table>")
	secs = append(secs, section{ID: "departures", Title: "Why: queue departures, the server's sheds and the actor's kills",
		Note: "Every op that leaves the low-priority read queue either got a ticket (admitted) or was killed while it waited. " +
			"An op admitted with its memory still held keeps the memory in the server; shedding works when it outpaces admissions. " +
			"The server's sheds (split by who decided: the inline checkpoint of a ticket holder, or the queued-op sweeper) and a killOp actor's kills (split by where the op was) are counted apart and never added. " +
			"Rates are per second with a primary unless a column says \"of storm\" (the storm's whole length, seconds without a primary counting with no flow).",
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
		{"ts-sheds", "Server sheds per second (the primary's own)", unitOpsPerS, (*trialData).serverShedsPerSecond},
		{"ts-actor-kills", "killOp actor kills per second", unitOpsPerS, (*trialData).actorKillsPerSecond},
	}
	var refs []chartRef
	var empty []string // charts, or trials of a chart, without data
	// A sharded trial has a primary per shard: its primary's charts are
	// the shards' panels below, and here it has only its canaries.
	sharded := slices.ContainsFunc(data, func(d *trialData) bool { return d.shards != nil })
	onReplicaSet := slices.DeleteFunc(slices.Clone(data), func(d *trialData) bool { return d.shards != nil })
	for _, def := range ts {
		trials := onReplicaSet
		if def.id == "ts-availability" {
			trials = data
		}
		line, none := trialLines(def.title, def.yName, trials, def.series, color, true)
		if len(none) > 0 {
			who := "the server reported none of it"
			if def.id == "ts-actor-kills" {
				who = "a client actor's kills, not the server's"
			}
			empty = append(empty, fmt.Sprintf("%s: no data for %s (%s%s)", def.title, strings.Join(none, ", "), who, noDataWhy(def.id)))
		}
		if len(line.Series) == 0 {
			continue // no trial has data: no chart, and the note says so
		}
		if def.id == "ts-rss" {
			addMemoryMarks(&line, trials)
		}
		options[def.id] = line
		refs = append(refs, chartRef{def.id})
	}
	note := "Faint bands: the phases, named above the plot. Dark bands: seconds a trial had no primary, named with the trials; a line breaks wherever its trial has no sample, and is never drawn across the gap. " +
		"Dashed vertical lines: failovers and member restarts, in that trial's colour. Scroll or drag the slider to zoom."
	if sharded {
		note += " The trials on a sharded cluster have a primary per shard: their tickets, queue, memory and sheds are in the per-shard panels below; their canaries went through the router, here."
	}
	if len(empty) > 0 {
		note += " " + strings.Join(empty, "; ") + "."
	}
	secs = append(secs, section{ID: "series", Title: "Over time (one line per trial)", Note: note, Charts: refs})
	if sharded {
		secs = append(secs, shardSections(a, data, options, color)...)
	}

	// Victims: who the shedder or the actor killed.
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
	hist := barChart("Victims' tracked memory (share of each arm's sized victims per 8 MiB bin)", unitPercent, labels, false)
	stages := barChart("Victims' stage mix (% of each arm's victims)", unitPercent, a.In.Arms, true)
	stages.YAxis.Max = chart.Float(100)
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
	var vt strings.Builder
	vt.WriteString(`<table class="data"><tr><th>arm</th><th>victims</th><th>sized</th><th>median size (bin)</th>`)
	for _, st := range sn {
		fmt.Fprintf(&vt, "<th>%s</th>", template.HTMLEscapeString(st))
	}
	vt.WriteString("</tr>")
	for _, arm := range a.In.Arms {
		p := pooled[arm]
		bd := make([]chart.Datum, binsUsed)
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
			bd[i] = chart.V(chart.Num(share))
		}
		hist.Series = append(hist.Series, chart.Series{Name: arm, Type: "bar", Data: bd, Color: color(arm)})
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
		var bd []chart.Datum
		for _, arm := range a.In.Arms {
			p := pooled[arm]
			share := 0.0
			if p.Count > 0 {
				share = 100 * float64(p.Stages[st]) / float64(p.Count)
			}
			bd = append(bd, chart.V(chart.Num(share)))
		}
		stages.Series = append(stages.Series, bars(st, "stages", bd))
	}
	vnote := "Tracked bytes are inUseTrackedMemBytes when the op was shed or killed. Over the wire a shed op's error carries no size, " +
		"so there only the killOp actor's victims are sized; the model (virtual clock) sizes every victim."
	var vcharts []chartRef
	// A chart with nothing to draw is left out, and the note says why.
	if binsUsed > 0 {
		options["victims-tracked"] = hist
		vcharts = append(vcharts, chartRef{"victims-tracked"})
	} else {
		vnote += " No victim's size is known in these trials, so there is no size histogram."
	}
	if len(sn) > 0 {
		options["victims-stages"] = stages
		vcharts = append(vcharts, chartRef{"victims-stages"})
	} else {
		vnote += " No storm op was shed or killed in these trials."
	}
	secs = append(secs, section{ID: "victims", Title: "Victims: what was shed or killed in the storm",
		Note: vnote, Charts: vcharts, Table: template.HTML(vt.String())})
	return secs, nil
}

// forcedNote says how the merge workload's sheds came about: forced by
// the shed failpoint after the first write batches on every trial that
// could arm it (so the workload tests the write-started latch, not the
// odds of a shed), and which trials ran unforced and why (their
// metadata's forced and forced_note).
func forcedNote(a *Analysis) string {
	var wl struct {
		ShedAfter int64 `json:"shed_after_batches"`
	}
	_ = json.Unmarshal(a.In.Workload.Merge, &wl)
	forced, unforced := 0, map[string][]string{}
	var notes []string
	for _, arm := range a.In.Arms {
		for _, t := range a.In.Valid(arm) {
			var meta struct {
				Forced *bool  `json:"forced"`
				Note   string `json:"forced_note"`
			}
			if json.Unmarshal(t.Metadata, &meta) != nil || meta.Forced == nil || *meta.Forced {
				forced++ // a trial written before forced was recorded armed it or failed
				continue
			}
			if unforced[meta.Note] == nil {
				notes = append(notes, meta.Note)
			}
			unforced[meta.Note] = append(unforced[meta.Note], fmt.Sprintf("%s#%d", arm, t.Index))
		}
	}
	var b strings.Builder
	if forced > 0 {
		fmt.Fprintf(&b, "The shed is forced: the failpoint queryMemoryLoadSheddingAlwaysShed sheds each op after its first %d write batch(es), whatever the memory pressure, "+
			"so the workload tests the write-started latch (whether an op that has written can still be shed), not the odds of a shed.", max(wl.ShedAfter, 1))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, " %s ran unforced (%s): their sheds, if any, came from memory pressure.", strings.Join(unforced[n], ", "), n)
	}
	return strings.TrimSpace(b.String())
}

// trialLines is a time-series chart with one line per trial of series
// (failover and restart marks when marks is set), and the trials that
// had no point of it: nothing reported is no line, never a line of zeros.
// A line breaks where its trial's samples do (gaps): a span without a
// sample is no segment. The spans a trial had no primary are shaded and
// labelled "no primary" (on a chart of the primary's figures, where
// marks is set), and the x axis is the trials' length, no more.
func trialLines(title, unit string, data []*trialData, series func(*trialData) [][2]float64, color func(string) string, marks bool) (chart.Option, []string) {
	line := chart.New(title)
	length := 0.0
	for _, d := range data {
		length = max(length, d.length)
	}
	line.XAxis = &chart.Axis{Type: "value", Name: "s into the trial", NameLocation: "middle", NameGap: 28, Min: chart.Float(0), Max: chart.Float(math.Ceil(length))}
	line.YAxis = &chart.Axis{Type: "value", Name: unit}
	line.DataZoom = chart.Zoom()
	var none []string
	var outages []trialSpan // spans the trials had no primary
	for _, d := range data {
		all := series(d)
		pts := downsample(all, MaxPoints)
		if len(pts) == 0 {
			none = append(none, fmt.Sprintf("%s#%d", d.Arm, d.Index))
			continue
		}
		c := color(d.Arm)
		s := chart.Series{Name: fmt.Sprintf("%s#%d", d.Arm, d.Index), Type: "line", Data: withGaps(pts, gaps(all)), Color: c, ShowSymbol: chart.Bool(false),
			ConnectNulls: chart.Bool(false), LineStyle: &chart.LineStyle{Color: c, Width: 1.2, Opacity: chart.Float(0.75)}}
		if marks {
			fo, re := d.marks()
			var ml []chart.MarkLineItem
			for _, x := range fo {
				ml = append(ml, chart.Event(x, "failover", c))
			}
			for _, x := range re {
				ml = append(ml, chart.Event(x, "restart", c))
			}
			s.MarkLine = chart.Lines(ml...)
		}
		if len(line.Series) == 0 {
			s.MarkArea = chart.Phases(trialPhases(d))
		}
		if marks && d.shards == nil {
			if spans, ok := noPrimarySpans(d.Trial, "", 0, d.length); ok {
				for _, sp := range spans {
					outages = append(outages, trialSpan{sp, s.Name})
				}
			}
		}
		line.Series = append(line.Series, s)
	}
	if len(outages) > 0 && len(line.Series) > 0 {
		ma := line.Series[0].MarkArea
		for _, b := range outageBands(outages) {
			ma.Data = append(ma.Data, chart.Outages([][2]float64{b.span}, "no primary\n"+b.trial)...)
		}
	}
	return line, none
}

// trialSpan is a span of a trial (seconds into it), or of several
// trials' named together.
type trialSpan struct {
	span  [2]float64
	trial string
}

// outageBands merge the trials' spans without a primary that overlap
// into one band each, named by the trials it holds ("E#1, E#2"): trials
// that lost their primary at about the same time (the model's crash
// loops do) share a band and a label, rather than stacking them.
func outageBands(spans []trialSpan) []trialSpan {
	slices.SortFunc(spans, func(a, b trialSpan) int { return cmp.Compare(a.span[0], b.span[0]) })
	var out []trialSpan
	var names []string
	for _, s := range spans {
		if n := len(out); n > 0 && s.span[0] < out[n-1].span[1] {
			out[n-1].span[1] = max(out[n-1].span[1], s.span[1])
			if !slices.Contains(names, s.trial) {
				names = append(names, s.trial)
			}
			out[n-1].trial = strings.Join(names, ", ")
			continue
		}
		names = []string{s.trial}
		out = append(out, s)
	}
	return out
}

// gaps are where a series' samples break off: the x after which the next
// point is more than one and a half of its usual steps (the median step)
// away. A per-second series breaks at a second without a point.
func gaps(pts [][2]float64) []float64 {
	if len(pts) < 3 {
		return nil
	}
	steps := make([]float64, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		steps = append(steps, pts[i][0]-pts[i-1][0])
	}
	limit := 1.5 * metric.Median(steps)
	var out []float64
	for i := 1; i < len(pts); i++ {
		if pts[i][0]-pts[i-1][0] > limit {
			out = append(out, pts[i-1][0])
		}
	}
	return out
}

// withGaps is a line's data with an absent point after each gap's start
// (gaps of the series before it was downsampled): ECharts, told not to
// connect nulls, draws no segment across it.
func withGaps(pts [][2]float64, gapsAt []float64) []chart.Datum {
	out := make([]chart.Datum, 0, len(pts)+len(gapsAt))
	g := 0
	for i, p := range pts {
		for g < len(gapsAt) && i > 0 && gapsAt[g] < p[0] {
			if gapsAt[g] >= pts[i-1][0] {
				out = append(out, chart.Datum{At: []any{gapsAt[g]}, Value: chart.Absent})
			}
			g++
		}
		out = append(out, chart.XY(p[0], p[1]))
	}
	return out
}

// noDataWhy says, for a time series a trial had no point of, what its
// absence means.
func noDataWhy(id string) string {
	switch id {
	case "ts-sheds":
		return ": no queryMemory.loadShedding section, which mongod leaves out when its shedder is off"
	case "ts-actor-kills":
		return ": no killOp actor ran, or it killed nothing"
	case "ts-tickets", "ts-queue":
		return ": no queues.execution section"
	case "ts-rss":
		return ": no mem section"
	case "ts-queries":
		return ": no opcounters section"
	case "ts-availability":
		return ": no canary"
	}
	return ""
}

// trialPhases are a trial's phases, from its start to its end.
func trialPhases(d *trialData) []chart.Phase {
	storm, recovery := d.Phases[store.PhaseStorm], d.Phases[store.PhaseRecovery]
	return []chart.Phase{{Name: string(store.PhaseWarmup), From: 0, To: storm}, {Name: string(store.PhaseStorm), From: storm, To: recovery}, {Name: string(store.PhaseRecovery), From: recovery, To: d.length}}
}

// addMemoryMarks draws the shedder's low and high marks and the memory
// limit, when the samples report them.
func addMemoryMarks(line *chart.Option, data []*trialData) {
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
	if len(marks) == 0 || len(line.Series) == 0 {
		return
	}
	var refs []chart.MarkLineItem
	for _, name := range []string{"low mark", "high mark", "memory limit"} {
		if v, ok := marks[name]; ok {
			refs = append(refs, chart.Reference(v, name, true))
		}
	}
	s := &line.Series[0]
	if s.MarkLine == nil {
		s.MarkLine = chart.Lines(refs...)
		return
	}
	s.MarkLine.Data = append(s.MarkLine.Data, refs...)
}

// shedsVsAdmissions is the chart of each arm's server sheds/s and actor
// kills/s beside its admissions/s in the storm (all per second with a
// primary): a bar per arm and metric at the median of the arm's valid
// trials, and a point per trial on it. The server's sheds and the actor's
// kills are bars of their own: the sweeper's signature is the server's.
func shedsVsAdmissions(a *Analysis, color func(arm string) string) chart.Option {
	var categories []string
	var medians, points []chart.Datum
	for i := range a.Arms {
		arm := &a.Arms[i]
		for _, m := range []string{metric.ServerShedsPerS, metric.ActorKillsPerS, metric.AdmissionsPerS} {
			category := arm.Name + "\n" + metric.Lookup(m).Title // two lines: every label fits under its bar
			categories = append(categories, category)
			// Server sheds in the arm's colour, actor kills and admissions
			// in paler ones.
			style := &chart.ItemStyle{Color: color(arm.Name), Opacity: chart.Float(1)}
			switch m {
			case metric.ActorKillsPerS:
				style.Opacity = chart.Float(0.7)
			case metric.AdmissionsPerS:
				style.Opacity = chart.Float(0.4)
			}
			s, ok := arm.Metrics[m]
			medians = append(medians, chart.Datum{Value: chart.Of(s.Median, ok), ItemStyle: style})
			for _, t := range a.In.Valid(arm.Name) {
				if v, ok := t.Metrics[m]; ok {
					points = append(points, chart.Datum{Name: fmt.Sprintf("%s#%d", arm.Name, t.Index), At: []any{category}, Value: chart.Num(v), SymbolSize: 7})
				}
			}
		}
	}
	o := barChart("Server sheds/s, actor kills/s and admissions/s in the storm, per second with a primary (bars: median, in the arm's colour; points: trials)", unitOpsPerS, categories, false)
	o.Series = []chart.Series{{Name: "median", Type: "bar", Data: medians},
		{Name: "trials", Type: "scatter", Data: points, ItemStyle: &chart.ItemStyle{Color: chart.Ink, Opacity: chart.Float(0.8)}}}
	// The bars take their arm's colour, so no one legend swatch stands
	// for them: the title and the axis say what they are.
	o.Legend = &chart.Legend{Show: chart.Bool(false)}
	return o
}
