package nightly

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/templates"
)

// TrendOptions choose what the trend page shows.
type TrendOptions struct {
	// Metrics to chart (default: the registry's key metrics that the
	// history holds).
	Metrics []string
	// Arms to chart (default: every arm of the selected nights).
	Arms   []string
	Filter history.Filter
	// Detect tunes the change points shown on the page. Its Metrics,
	// Arms and Filter are replaced by the page's, and Effect is always on,
	// so every charted series is examined.
	Detect DetectOptions
	// RunsRoot is the folder holding run folders (results/): a night whose
	// RunsRoot/<run id>/report.html exists is linked by a path relative to
	// out's folder. Empty: no night is linked.
	RunsRoot string
}

// WriteTrend writes the trend page, one self-contained HTML file, to out
// (its path, conventionally results/trend.html), atomically: for each
// metric and arm, the nightly medians with each night's min–max band and
// below them the arm's nightly effect against the baseline, both with their
// change points (Detect), then a table per metric readable without
// JavaScript.
func WriteTrend(ctx context.Context, st history.Store, out string, opts TrendOptions) error {
	if out == "" {
		return errors.New("trend: no output path")
	}
	p, err := buildTrend(ctx, st, out, opts)
	if err != nil {
		return err
	}
	b, err := templates.Render(templates.Trend, nil, p)
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(out, b)
}

// trendPage is what templates/trend.html.tmpl renders. Every string is
// escaped by html/template except EchartsJS and Data (JSON with "<"
// escaped).
type trendPage struct {
	Title, Workloads, Range, Baselines, Arms, Metrics, Filter, Labels, Hosts, Method string
	Nights, SimulatedNights                                                          int
	Empty                                                                            bool
	Sections                                                                         []trendSection
	Notes                                                                            []string
	EchartsNotice                                                                    string
	EchartsJS                                                                        template.JS
	Data                                                                             template.JS
}

type trendSection struct {
	ID, Title, Unit string
	Charts          []trendChart
	Table           trendTable
}

type trendChart struct {
	ID, Kind string // Kind: "values" or "effect" (CSS height)
}

type trendTable struct {
	Arms []trendTableArm
	Rows []trendRow
}

type trendTableArm struct {
	Name   string
	Effect bool // has effect columns
}

type trendRow struct {
	Night              int
	RunID, Href, Date  string
	Simulated, Missing bool
	Cells              []trendCell
}

type trendCell struct {
	Value, Effect, P string
	Marks            []trendMark // change points at this night
	HasEffect        bool
}

type trendMark struct{ Direction, Text string }

// trendData is the page's JSON: chart options by chart id, each chart's
// tooltip text per night, the nights' run ids (the charts' x axis) and the
// links of the nights whose report is reachable (pairs, not an object, so
// no run id can name an object's prototype).
type trendData struct {
	Options map[string]chart.Option `json:"options"`
	Tips    map[string][]string     `json:"tips"`
	Nights  []string                `json:"nights"`
	Links   [][2]string             `json:"links"` // [run id, href] pairs: a JS Map
}

// trendColors: values line and its band (the first arm colour), effect
// line.
var (
	trendLine   = chart.ArmColor(0)
	trendBand   = chart.Fade(trendLine, 0.22)
	trendEffect = chart.Violet
)

func buildTrend(ctx context.Context, st history.Store, out string, opts TrendOptions) (*trendPage, error) {
	runs, err := st.List(ctx, opts.Filter)
	if err != nil {
		return nil, err
	}
	p := &trendPage{Nights: len(runs), EchartsNotice: templates.EchartsNotice(), EchartsJS: templates.EchartsJS(),
		Empty: len(runs) == 0, Filter: trendFilter(opts.Filter)}
	data := trendData{Options: map[string]chart.Option{}, Tips: map[string][]string{}, Nights: []string{}, Links: [][2]string{}}
	links := map[string]string{}
	index := map[string]int{}
	var workloads, baselines, hosts []string
	folders := runFolders(opts.RunsRoot)
	for i, r := range runs {
		index[r.ID] = i
		data.Nights = append(data.Nights, r.ID)
		if r.Simulated {
			p.SimulatedNights++
		}
		workloads = trendAdd(workloads, r.Workload)
		baselines = trendAdd(baselines, r.Baseline)
		h := r.Host.Name
		if r.Host.TargetKind != "" {
			h += " (" + r.Host.TargetKind + ")"
		}
		hosts = trendAdd(hosts, strings.TrimSpace(h))
		if href, ok := trendLink(opts.RunsRoot, out, folders.of(r.ID)); ok {
			links[r.ID] = href
			data.Links = append(data.Links, [2]string{r.ID, href})
		}
	}
	arms := opts.Arms
	if len(arms) == 0 {
		for _, r := range runs {
			for _, a := range r.Arms {
				arms = trendAdd(arms, a)
			}
		}
	}
	metrics := opts.Metrics
	if len(metrics) == 0 && len(runs) > 0 {
		for _, m := range metric.Registry {
			if !m.Key {
				continue
			}
			for _, arm := range arms {
				pts, err := st.Series(ctx, m.Name, arm, opts.Filter)
				if err != nil {
					return nil, err
				}
				if len(pts) > 0 {
					metrics = append(metrics, m.Name)
					break
				}
			}
		}
	}
	p.Workloads, p.Baselines, p.Hosts = strings.Join(workloads, ", "), strings.Join(baselines, ", "), strings.Join(hosts, "; ")
	p.Arms, p.Metrics = strings.Join(arms, ", "), strings.Join(metrics, ", ")
	p.Labels = trendCommonLabels(runs)
	p.Title = "qmlsab trend"
	if p.Workloads != "" {
		p.Title += ": " + p.Workloads
	}
	if len(runs) > 0 {
		p.Range = fmt.Sprintf("%s – %s", runs[0].Started.UTC().Format("2006-01-02 15:04"), runs[len(runs)-1].Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	labels := trendAxisLabels(runs)

	dopts := opts.Detect
	dopts.Metrics, dopts.Arms, dopts.Filter, dopts.Effect = metrics, arms, opts.Filter, true
	if dopts.Recent <= 0 {
		dopts.Recent = 1
	}
	p.Method = trendMethod(dopts)
	var res Result
	if len(runs) > 0 && len(metrics) > 0 && len(arms) > 0 {
		if res, err = Detect(ctx, st, dopts); err != nil {
			return nil, err
		}
	}
	redefined := map[int]Redefinition{}
	for _, d := range res.Redefinitions {
		if i, ok := index[d.RunID]; ok {
			redefined[i] = d
		}
	}
	tonight := map[[2]string]Finding{} // (metric, arm) → tonight's finding
	for _, f := range res.Tonight.Findings {
		tonight[[2]string{f.Metric, f.Arm}] = f
	}
	newest := len(runs) - 1
	type seriesKey struct{ kind, metric, arm string }
	marks := map[seriesKey]map[int][]Change{}
	for _, c := range res.Changes {
		i, ok := index[c.RunID]
		if !ok {
			continue
		}
		k := seriesKey{c.Kind, c.Metric, c.Arm}
		if marks[k] == nil {
			marks[k] = map[int][]Change{}
		}
		marks[k][i] = append(marks[k][i], c)
	}

	ids := map[string]bool{}
	for mi, m := range metrics {
		def := metric.Lookup(m)
		scale, unit := trendScale(def)
		sid := trendID(m, mi, ids)
		sec := trendSection{ID: sid, Title: def.Title, Unit: unit}
		if def.Title != m {
			sec.Title += " (" + m + ")"
		}
		rows := make([]trendRow, len(runs))
		for i, r := range runs {
			rows[i] = trendRow{Night: i + 1, RunID: r.ID, Href: links[r.ID], Date: r.Started.UTC().Format("2006-01-02 15:04"),
				Simulated: r.Simulated}
		}
		for ai, arm := range arms {
			pts, err := st.Series(ctx, m, arm, opts.Filter)
			if err != nil {
				return nil, err
			}
			effs, err := st.Effects(ctx, m, arm, opts.Filter)
			if err != nil {
				return nil, err
			}
			cells := make([]trendCell, len(runs))
			for i := range cells {
				cells[i] = trendCell{Value: "–"}
			}
			medians, mins, spans := trendDashes(len(runs)), trendDashes(len(runs)), trendDashes(len(runs))
			tips := make([]string, len(runs))
			valueTips := make([]string, len(runs))
			sim, seen := 0, 0
			for _, pt := range pts {
				i, ok := index[pt.RunID]
				if !ok || len(pt.Values) == 0 {
					continue
				}
				seen++
				if runs[i].Simulated {
					sim++
				}
				med := metric.Median(pt.Values)
				lo, hi := slices.Min(pt.Values), slices.Max(pt.Values)
				medians[i], mins[i], spans[i] = trendValue(med*scale), trendValue(lo*scale), trendValue((hi-lo)*scale)
				cells[i].Value = fmt.Sprintf("%s [%s–%s]", trendNumber(def, med), trendNumber(def, lo), trendNumber(def, hi))
				valueTips[i] = fmt.Sprintf("median %s, range %s–%s, n=%d", trendNumber(def, med), trendNumber(def, lo), trendNumber(def, hi), len(pt.Values))
			}
			vmarks := marks[seriesKey{Values, m, arm}]
			emarks := marks[seriesKey{Effect, m, arm}]
			// The nights that redefined what this arm's series compare:
			// the workload, the arm, and for its effect the baseline arm.
			vredef, eredef := map[int]string{}, map[int]string{}
			for i, d := range redefined {
				if len(d.Workload) > 0 || len(d.Arms[arm]) > 0 {
					own := Redefinition{Workload: d.Workload}
					if len(d.Arms[arm]) > 0 {
						own.Arms = map[string][]string{arm: d.Arms[arm]}
					}
					vredef[i] = own.Describe()
				}
				if len(d.Workload) > 0 || len(d.Arms[arm]) > 0 || (runs[i].Baseline != "" && len(d.Arms[runs[i].Baseline]) > 0) {
					eredef[i] = d.Describe()
				}
			}
			finding, hasFinding := tonight[[2]string{m, arm}]
			title := fmt.Sprintf("%s — %s", def.Title, arm)
			if seen > 0 {
				vid := fmt.Sprintf("%s-%d-values", sid, ai)
				for i := range runs {
					tips[i] = trendTipHead(runs[i], i, len(runs), links)
					if valueTips[i] == "" {
						tips[i] += "\n" + arm + " did not run this night"
					} else {
						tips[i] += "\n" + valueTips[i]
					}
					for _, c := range vmarks[i] {
						tips[i] += "\nchange point: " + trendChangeText(def, c)
					}
					if d, ok := vredef[i]; ok {
						tips[i] += "\nredefined: " + d
					}
					if hasFinding && i == newest {
						tips[i] += "\ntonight's check: " + trendFindingText(def, finding)
					}
				}
				extra := trendRedefinitionLines(vredef)
				if hasFinding {
					extra = append(extra, chart.ChangePoint(float64(newest), fmt.Sprintf("tonight: %s p=%.4f", Regression, finding.P), chart.Regression))
				}
				o := trendValuesOption(title+": nightly median and min–max"+trendSimTitle(sim, seen), unit, labels,
					mins, spans, medians, trendMarkLines(vmarks, false, extra...))
				if def.Share {
					o.YAxis.Max = chart.Float(1) // a share: never an axis beyond 1
				}
				data.Options[vid] = o
				data.Tips[vid] = tips
				sec.Charts = append(sec.Charts, trendChart{ID: vid, Kind: "values"})
			}
			if seen < 2 {
				p.Notes = append(p.Notes, fmt.Sprintf("%s of %s: %s with values, fewer than 2: no change point can be found (nothing to detect).",
					def.Title, arm, trendNights(seen)))
			}
			shifts := trendDashes(len(runs))
			etips := make([]string, len(runs))
			base, esim, eseen := "", 0, 0
			for _, e := range effs {
				i, ok := index[e.RunID]
				if !ok {
					continue
				}
				eseen++
				if runs[i].Simulated {
					esim++
				}
				if base == "" {
					base = e.Baseline
				}
				shifts[i] = trendValue(e.Shift * scale)
				cells[i].Effect, cells[i].P = trendSigned(def, e.Shift), fmt.Sprintf("%.3f", e.P)
				etips[i] = fmt.Sprintf("effect vs %s (Hodges-Lehmann shift) %s, Mann-Whitney p=%.3f", e.Baseline, trendSigned(def, e.Shift), e.P)
			}
			hasEffect := eseen > 0
			if hasEffect {
				eid := fmt.Sprintf("%s-%d-effect", sid, ai)
				for i := range runs {
					etips[i] = trendTipHead(runs[i], i, len(runs), links) + "\n" + trendOr(etips[i], "no effect this night")
					for _, c := range emarks[i] {
						etips[i] += "\nchange point: " + trendChangeText(def, c)
					}
					if d, ok := eredef[i]; ok {
						etips[i] += "\nredefined: " + d
					}
				}
				data.Options[eid] = trendEffectOption(fmt.Sprintf("%s — effect of %s vs %s (Hodges-Lehmann shift)%s", def.Title, arm, base, trendSimTitle(esim, eseen)),
					unit, labels, shifts, trendMarkLines(emarks, true, trendRedefinitionLines(eredef)...))
				data.Tips[eid] = etips
				sec.Charts = append(sec.Charts, trendChart{ID: eid, Kind: "effect"})
				if eseen < 2 {
					p.Notes = append(p.Notes, fmt.Sprintf("Effect of %s vs %s on %s: %s, fewer than 2: no change point can be found (nothing to detect).",
						arm, base, def.Title, trendNights(eseen)))
				}
			} else if seen > 0 && !slices.Contains(baselines, arm) {
				p.Notes = append(p.Notes, fmt.Sprintf("Effect of %s on %s: no night has one (too few trials, or no baseline to compare with).", arm, def.Title))
			}
			for i := range cells {
				cells[i].HasEffect = hasEffect
				for _, c := range vmarks[i] {
					cells[i].Marks = append(cells[i].Marks, trendMark{c.Direction, "change point, values: " + trendChangeText(def, c)})
				}
				for _, c := range emarks[i] {
					cells[i].Marks = append(cells[i].Marks, trendMark{c.Direction, "change point, effect: " + trendChangeText(def, c)})
				}
				if d, ok := eredef[i]; ok {
					cells[i].Marks = append(cells[i].Marks, trendMark{"redefined", "redefined: " + d + " (a change point by construction, never a regression)"})
				}
				if hasFinding && i == newest {
					cells[i].Marks = append(cells[i].Marks, trendMark{Regression, "tonight's check: " + trendFindingText(def, finding)})
				}
				rows[i].Cells = append(rows[i].Cells, cells[i])
			}
			sec.Table.Arms = append(sec.Table.Arms, trendTableArm{Name: arm, Effect: hasEffect})
		}
		for i := range rows {
			rows[i].Missing = !slices.ContainsFunc(rows[i].Cells, func(c trendCell) bool { return c.Value != "–" || c.Effect != "" })
		}
		sec.Table.Rows = rows
		p.Sections = append(p.Sections, sec)
	}
	if p.SimulatedNights > 0 {
		p.Title += " (SIMULATED)"
	}
	if p.Data, err = chart.JS(data); err != nil {
		return nil, err
	}
	return p, nil
}

func trendOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// trendAdd appends s when it is new and not empty.
func trendAdd(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// runIndex maps a night's history id to the run folder under RunsRoot
// that holds it.
type runIndex map[string]string

// runFolders indexes the run folders under root by the id history gives
// them: the run id their manifest records, or (runs written before run
// ids) the folder's name.
func runFolders(root string) runIndex {
	idx := runIndex{}
	if root == "" {
		return idx
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return idx
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m, err := store.ReadManifest(filepath.Join(root, e.Name()))
		if err != nil {
			continue
		}
		if id := cmp.Or(m.RunID, e.Name()); idx[id] == "" {
			idx[id] = e.Name()
		}
	}
	return idx
}

// of is the folder of a night (its id itself when no folder records it,
// as for a run stored from elsewhere under its folder's name).
func (idx runIndex) of(id string) string { return cmp.Or(idx[id], id) }

// trendLink is the path of a night's report relative to the page's
// folder, when RunsRoot/<folder>/report.html exists. Names that are not a
// single plain folder name are never linked.
func trendLink(root, out, id string) (string, bool) {
	if root == "" || id == "" || !filepath.IsLocal(id) || strings.ContainsAny(id, `/\`) {
		return "", false
	}
	target := filepath.Join(root, id, "report.html")
	if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	at, err := filepath.Abs(target)
	if err != nil {
		return "", false
	}
	from, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(from, at)
	if err != nil {
		return "", false
	}
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, s := range segs {
		// ':' escaped too, so no segment reads as a URL scheme.
		segs[i] = strings.ReplaceAll(url.PathEscape(s), ":", "%3A")
	}
	href := strings.Join(segs, "/")
	if !strings.HasPrefix(href, "../") {
		href = "./" + href
	}
	return href, true
}

// trendAxisLabels are the nights' x-axis labels: each night's date; a
// night that shares its date with another also has its time (to the
// minute, or to the second when that is shared too), so each label names
// one night and only those nights carry a time.
func trendAxisLabels(runs []history.RunSummary) []string {
	count := func(layout string) map[string]int {
		n := map[string]int{}
		for _, r := range runs {
			n[r.Started.UTC().Format(layout)]++
		}
		return n
	}
	days, minutes := count("2006-01-02"), count("2006-01-02 15:04")
	out := make([]string, len(runs))
	for i, r := range runs {
		t := r.Started.UTC()
		switch {
		case days[t.Format("2006-01-02")] == 1:
			out[i] = t.Format("2006-01-02")
		case minutes[t.Format("2006-01-02 15:04")] == 1:
			out[i] = t.Format("01-02 15:04")
		default:
			out[i] = t.Format("01-02 15:04:05")
		}
	}
	return out
}

// trendCommonLabels lists the labels every night carries.
func trendCommonLabels(runs []history.RunSummary) string {
	if len(runs) == 0 {
		return ""
	}
	var out []string
	for k, v := range runs[0].Labels {
		if !slices.ContainsFunc(runs[1:], func(r history.RunSummary) bool { w, ok := r.Labels[k]; return !ok || w != v }) {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func trendFilter(f history.Filter) string {
	var out []string
	if f.Workload != "" {
		out = append(out, "workload "+f.Workload)
	}
	var ls []string
	for k, v := range f.Labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	if len(ls) > 0 {
		out = append(out, "labels "+strings.Join(ls, ", "))
	}
	if !f.Since.IsZero() {
		out = append(out, "since "+f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		out = append(out, "until "+f.Until.UTC().Format(time.RFC3339))
	}
	if f.Last > 0 {
		out = append(out, fmt.Sprintf("last %d nights", f.Last))
	}
	if len(out) == 0 {
		return "none (every night of the history)"
	}
	return strings.Join(out, "; ")
}

func trendMethod(o DetectOptions) string {
	cp := o.ChangePoint.WithDefaults()
	return fmt.Sprintf("E-Divisive with means, permutation p ≤ %g (%d permutations, seed %d), segments of at least %d nights; the newest %d night(s) count as recent",
		cp.PValue, cp.Permutations, cp.Seed, cp.MinSegment, o.Recent)
}

var trendIDChars = regexp.MustCompile(`[^a-z0-9_]+`)

// trendID is a section's fixed id: the metric's name when it is plain,
// else m<index>.
func trendID(m string, i int, used map[string]bool) string {
	id := "trend-" + trendIDChars.ReplaceAllString(strings.ToLower(m), "-")
	if used[id] || trendIDChars.MatchString(m) {
		id = fmt.Sprintf("trend-m%d", i)
	}
	used[id] = true
	return id
}

// trendScale is how a metric is charted: bytes in GiB, else as stored.
func trendScale(m metric.Metric) (float64, string) {
	if m.Unit == "B" {
		return 1.0 / (1 << 30), "GiB"
	}
	return 1, m.Unit
}

// trendNumber formats a value in its metric's unit (as the report does).
func trendNumber(m metric.Metric, v float64) string {
	return metric.Format(m.Name, v)
}

func trendSigned(m metric.Metric, v float64) string {
	s := trendNumber(m, v)
	if v > 0 || (v == 0 && !strings.HasPrefix(s, "-")) {
		return "+" + s
	}
	return s
}

// trendValue is a night's value as drawn: present, rounded (trendRound).
func trendValue(v float64) chart.Datum { return chart.V(chart.Num(trendRound(v))) }

// trendRound keeps charts' JSON short without changing what is drawn.
func trendRound(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 6-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// trendDashes are n nights without a value (ECharts' "-").
func trendDashes(n int) []chart.Datum {
	return make([]chart.Datum, n)
}

func trendNights(n int) string {
	if n == 1 {
		return "1 night"
	}
	return fmt.Sprintf("%d nights", n)
}

func trendSimTitle(sim, of int) string {
	switch {
	case sim == 0:
		return ""
	case sim == of:
		return " (SIMULATED)"
	}
	return fmt.Sprintf(" (%d of %d nights SIMULATED)", sim, of)
}

// trendTipHead is the first line of a night's tooltip.
func trendTipHead(r history.RunSummary, i, n int, links map[string]string) string {
	s := fmt.Sprintf("night %d of %d: %s, %s", i+1, n, r.ID, r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	if r.Simulated {
		s += " — SIMULATED"
	}
	if links[r.ID] != "" {
		s += " (click: its report)"
	}
	return s
}

// trendChangeText says what a change point is: "regression p=0.010,
// 0.99 → 0.90 (-9.1%)".
func trendChangeText(m metric.Metric, c Change) string {
	s := fmt.Sprintf("%s p=%.3f, %s → %s", c.Direction, c.P, trendNumber(m, c.Before), trendNumber(m, c.After))
	// An effect's relative change is against a shift often near 0: left out.
	if c.Kind == Values && !math.IsNaN(c.Relative) && !math.IsInf(c.Relative, 0) {
		s += fmt.Sprintf(" (%+.1f%%)", 100*c.Relative)
	}
	if c.Recent {
		s += ", recent"
	}
	return s
}

func trendDirColor(dir string) string {
	switch dir {
	case Regression:
		return chart.Regression
	case Improvement:
		return chart.Improvement
	}
	return chart.Neutral
}

// trendFindingText says what tonight's check found: "regression p=0.0005,
// baseline 1.00 GiB → tonight 1.30 GiB (+30.0%), against 7 nights".
func trendFindingText(m metric.Metric, f Finding) string {
	s := fmt.Sprintf("%s p=%.4f (Holm level %.4f), baseline %s → tonight %s (%s), against %s", Regression, f.P, f.Threshold,
		trendNumber(m, f.BaselineMedian), trendNumber(m, f.Median), relativeShift(f), trendNights(len(f.BaselineNights)))
	if f.Redefined != "" {
		s += " of the previous definition (redefined tonight: " + f.Redefined + ")"
	}
	return s
}

// trendRedefinitionLines mark the nights that redefined what a series
// compares (neutral: a change point by construction, never a regression),
// labelled with what changed.
func trendRedefinitionLines(at map[int]string) []chart.MarkLineItem {
	nights := slices.Sorted(maps.Keys(at))
	var out []chart.MarkLineItem
	for _, i := range nights {
		label := "redefined: " + at[i]
		if r := []rune(label); len(r) > 60 {
			label = string(r[:59]) + "…"
		}
		out = append(out, chart.ChangePoint(float64(i), label, chart.Neutral))
	}
	return out
}

// trendMarkLines marks each change point at its night (an x-axis index),
// labelled with its direction and p, then the extra marks; effect charts
// also get a zero line.
func trendMarkLines(at map[int][]Change, zero bool, extra ...chart.MarkLineItem) *chart.MarkLine {
	var items []chart.MarkLineItem
	if zero {
		items = append(items, chart.Reference(0, "no effect", false))
	}
	nights := make([]int, 0, len(at))
	for i := range at {
		nights = append(nights, i)
	}
	sort.Ints(nights)
	for _, i := range nights {
		for _, c := range at[i] {
			arrow := "▲"
			if c.After < c.Before {
				arrow = "▼"
			}
			items = append(items, chart.ChangePoint(float64(i), fmt.Sprintf("%s %s p=%.3f", arrow, c.Direction, c.P), trendDirColor(c.Direction)))
		}
	}
	return chart.Lines(append(items, extra...)...)
}

// trendBase is a trend chart: the nights on a category axis, the value
// axis in unit, zoomable. The page's script gives the tooltip its
// per-night text.
func trendBase(title, unit string, labels []string) chart.Option {
	o := chart.New(title)
	o.Legend = nil
	o.Grid.Top = "62"
	o.XAxis = &chart.Axis{Type: "category", Data: labels, BoundaryGap: chart.Bool(false)}
	o.YAxis = &chart.Axis{Type: "value", Name: unit, Scale: true}
	o.DataZoom = chart.Zoom()
	return o
}

// trendValuesOption: the min–max band (a transparent min line with the
// span stacked on it, filled) and the median line with the change points.
func trendValuesOption(title, unit string, labels []string, mins, spans, medians []chart.Datum, marks *chart.MarkLine) chart.Option {
	o := trendBase(title, unit, labels)
	o.Legend = &chart.Legend{Show: chart.Bool(true), Top: "28", Data: []string{"median", "min–max"}}
	hidden := &chart.LineStyle{Opacity: chart.Float(0)}
	o.Series = []chart.Series{
		{Name: "min", Type: "line", Stack: "band", StackStrategy: "all", Data: mins, Symbol: "none",
			LineStyle: hidden, Silent: true, Tooltip: &chart.Tooltip{Show: chart.Bool(false)}},
		{Name: "min–max", Type: "line", Stack: "band", StackStrategy: "all", Data: spans, Symbol: "none",
			Color: trendBand, LineStyle: hidden, AreaStyle: &chart.AreaStyle{Color: trendBand}, Silent: true},
		{Name: "median", Type: "line", Data: medians, Color: trendLine, SymbolSize: 6, ShowAllSymbol: true, Cursor: "pointer", Z: 3,
			MarkLine: marks},
	}
	return o
}

func trendEffectOption(title, unit string, labels []string, shifts []chart.Datum, marks *chart.MarkLine) chart.Option {
	o := trendBase(title, unit, labels)
	o.Grid.Top = "40"
	o.Series = []chart.Series{{Name: "effect", Type: "line", Data: shifts, Color: trendEffect, SymbolSize: 6,
		ShowAllSymbol: true, Cursor: "pointer", MarkLine: marks}}
	return o
}
