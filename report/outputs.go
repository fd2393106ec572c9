package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
)

// SummarySchema is summary.json's schema.
const SummarySchema = "qmlsab/summary/v1"

// jsonNumber is a float that encodes NaN and ±Inf as null (JSON has none).
type jsonNumber float64

func (f jsonNumber) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func numbers(xs []float64) []jsonNumber {
	out := make([]jsonNumber, len(xs))
	for i, x := range xs {
		out[i] = jsonNumber(x)
	}
	return out
}

type summaryMetric struct {
	Median jsonNumber   `json:"median"`
	Min    jsonNumber   `json:"min"`
	Max    jsonNumber   `json:"max"`
	Mean   jsonNumber   `json:"mean"`
	MeanLo jsonNumber   `json:"meanCILow"`
	MeanHi jsonNumber   `json:"meanCIHigh"`
	Values []jsonNumber `json:"values"`
}

// summaryGate is a gate's result; a gate with no data has status
// "no data", pass false, value and threshold null, and the reason.
type summaryGate struct {
	Name      string     `json:"name"`
	Condition string     `json:"condition"`
	Pass      bool       `json:"pass"`             // the condition held
	Expect    string     `json:"expect,omitempty"` // "fail": an expected failure
	Status    string     `json:"status"`           // pass, fail, "fails, as expected", unexpected pass or no data
	Reason    string     `json:"reason,omitempty"`
	Value     jsonNumber `json:"value"`
	Threshold jsonNumber `json:"threshold"`
	// Prediction: the gate judges the model's prediction of an arm;
	// Informational: it is reported and does not decide the set.
	Prediction    bool `json:"prediction,omitempty"`
	Informational bool `json:"informational,omitempty"`
}

// summaryArm is an arm's statistics. A metric the arm has no value of is
// not in metrics (never a zero) but in absent, with the reason; one some
// of whose trial values are only lower bounds is in censored instead.
type summaryArm struct {
	Name     string                     `json:"name"`
	N        int                        `json:"n"`
	Invalid  int                        `json:"invalid"`
	Metrics  map[string]summaryMetric   `json:"metrics"`
	Absent   map[string]string          `json:"absent,omitempty"`
	Censored map[string]summaryCensored `json:"censored,omitempty"`
	Gates    []summaryGate              `json:"gates"`
	// PrimaryLives are the valid trials' primaries, trial by trial.
	PrimaryLives []summaryLife `json:"primaryLives,omitempty"`
	// StormWithoutPrimary is how much of their storms the valid trials had
	// no primary for (Outage), when their lives were recorded.
	StormWithoutPrimary *summaryOutage `json:"stormWithoutPrimary,omitempty"`
}

// summaryOutage is an arm's Outage: each trial's share of its storm
// without a primary, their median, and how many trials lost it.
type summaryOutage struct {
	Shares []jsonNumber `json:"shares"`
	Median jsonNumber   `json:"median"`
	Lost   int          `json:"trialsLost"`
}

// summaryCensored is a metric whose trial values are partly lower bounds
// (a client timeout cut a latency short): each statistic and value says
// whether it is only a bound ("at least"). There is no mean: a bound is
// never averaged.
type summaryCensored struct {
	Median        jsonNumber   `json:"median"`
	MedianAtLeast bool         `json:"medianAtLeast"`
	Min           jsonNumber   `json:"min"`
	MinAtLeast    bool         `json:"minAtLeast"`
	Max           jsonNumber   `json:"max"`
	MaxAtLeast    bool         `json:"maxAtLeast"`
	Values        []jsonNumber `json:"values"`
	AtLeast       []bool       `json:"atLeast"`
}

// summaryLife is one primary's life in one trial (store.PrimaryLife),
// times as seconds into the trial.
type summaryLife struct {
	Trial          int              `json:"trial"`
	Shard          string           `json:"shard,omitempty"`
	Member         string           `json:"member"`
	From           jsonNumber       `json:"fromSeconds"`
	To             jsonNumber       `json:"toSeconds"`
	Cause          string           `json:"cause"`
	AdmissionsPerS *jsonNumber      `json:"admissionsPerS,omitempty"`
	HeaviestQueue  string           `json:"heaviestQueue,omitempty"`
	TrackedAtEnd   map[string]int64 `json:"trackedBytesAtEnd,omitempty"`
}

type summaryComparison struct {
	Metric      string     `json:"metric"`
	Base        string     `json:"base"`
	Arm         string     `json:"arm"`
	P           jsonNumber `json:"p"`
	Delta       jsonNumber `json:"delta"`
	DeltaPct    jsonNumber `json:"deltaPercent"`
	Significant bool       `json:"significant"`
	// Direction is better, worse, changed (no better direction) or "not
	// judged" (over the seconds with a primary, across an outage); empty
	// when not significant.
	Direction string `json:"direction,omitempty"`
	// OverOutage: the metric is over the seconds with a primary and an
	// arm had none for part of its storm.
	OverOutage bool `json:"overOutage,omitempty"`
}

// summaryVerdict is an arm's verdict sentence against the baseline.
type summaryVerdict struct {
	Arm   string `json:"arm"`
	Base  string `json:"base"`
	Class string `json:"class"`
	Text  string `json:"text"`
}

// SummaryJSON is summary.json (results/README.md; the key names are
// fixed).
func SummaryJSON(a *Analysis, toolVersion string) ([]byte, error) {
	var manifests []map[string]any
	for i, m := range a.In.Manifests {
		run := map[string]any{"dir": a.In.Dirs[i], "created": m.Created, "host": m.Host, "seed": m.Seed,
			"target": m.Target, "toolVersion": m.ToolVersion}
		if m.Plan != nil {
			run["plan"] = m.Plan.Digest
		}
		if m.Shard != nil {
			run["shard"] = m.Shard.String()
		}
		if m.Shards != nil {
			run["shards"] = m.Shards
		}
		manifests = append(manifests, run)
	}
	doc := map[string]any{
		"schema": SummarySchema,
		"run": map[string]any{"dirs": a.In.Dirs, "runs": manifests, "workload": a.In.Workload.Name, "simulated": a.In.Simulated,
			"clock": a.In.Clock, "parallel": parallelOrAbsent(a.In.Parallel), "conditions": a.In.Conditions(), "baseline": a.Baseline, "alpha": a.Alpha, "reportVersion": toolVersion,
			"gateSet": gateSetName(a), "trialsPlanned": a.In.Planned, "trialsFinished": a.In.Finished},
		"arms":        []summaryArm{},
		"comparisons": []summaryComparison{},
		"warnings":    a.Warnings,
		"hosts":       summaryHosts(a),
		"stratified":  summaryStratified(a),
	}
	var arms []summaryArm
	for _, arm := range a.Arms {
		sa := summaryArm{Name: arm.Name, N: arm.N, Invalid: arm.Invalid, Metrics: map[string]summaryMetric{}, Gates: []summaryGate{}}
		if o := arm.Outage; o.Known > 0 {
			sa.StormWithoutPrimary = &summaryOutage{Shares: numbers(o.Shares), Median: jsonNumber(o.Median), Lost: o.Lost}
		}
		if len(arm.Absent) > 0 {
			sa.Absent = arm.Absent
		}
		for name, s := range arm.Metrics {
			sa.Metrics[name] = summaryMetric{Median: jsonNumber(s.Median), Min: jsonNumber(s.Min), Max: jsonNumber(s.Max),
				Mean: jsonNumber(s.Mean), MeanLo: jsonNumber(s.MeanLo), MeanHi: jsonNumber(s.MeanHi), Values: numbers(s.Values)}
		}
		for name, c := range arm.Censored {
			if sa.Censored == nil {
				sa.Censored = map[string]summaryCensored{}
			}
			sa.Censored[name] = summaryCensored{Median: jsonNumber(c.Median), MedianAtLeast: c.MedianAtLeast, Min: jsonNumber(c.Min), MinAtLeast: c.MinAtLeast,
				Max: jsonNumber(c.Max), MaxAtLeast: c.MaxAtLeast, Values: numbers(c.Values), AtLeast: c.AtLeast}
		}
		for _, t := range a.In.Valid(arm.Name) {
			for _, l := range t.PrimaryLives {
				sl := summaryLife{Trial: t.Index, Shard: l.Shard, Member: l.Member, From: jsonNumber(l.Start.Sub(t.Started).Seconds()),
					To: jsonNumber(l.End.Sub(t.Started).Seconds()), Cause: l.Cause, HeaviestQueue: l.HeaviestQueue, TrackedAtEnd: l.TrackedAtEnd}
				if l.AdmissionsPerS != nil {
					v := jsonNumber(*l.AdmissionsPerS)
					sl.AdmissionsPerS = &v
				}
				sa.PrimaryLives = append(sa.PrimaryLives, sl)
			}
		}
		for _, g := range arm.Gates {
			if g.NotApplicable {
				continue
			}
			sg := summaryGate{Name: g.Gate.Name, Condition: g.Gate.String(), Pass: g.Pass, Expect: g.Gate.Expect, Status: strings.ToLower(g.Verdict()),
				Value: jsonNumber(g.Value), Threshold: jsonNumber(g.Threshold), Prediction: g.Prediction, Informational: g.Informational}
			if g.NoData {
				sg.Reason, sg.Value, sg.Threshold = g.Reason, jsonNumber(math.NaN()), jsonNumber(math.NaN())
			}
			sa.Gates = append(sa.Gates, sg)
		}
		arms = append(arms, sa)
	}
	if arms != nil {
		doc["arms"] = arms
	}
	var cs []summaryComparison
	for _, c := range a.Comparisons {
		cs = append(cs, summaryComparison{Metric: c.Metric, Base: c.Base, Arm: c.Arm, P: jsonNumber(c.P), Delta: jsonNumber(c.Delta),
			DeltaPct: jsonNumber(c.DeltaPercent), Significant: c.Significant, Direction: c.Direction, OverOutage: c.OverOutage})
	}
	if cs != nil {
		doc["comparisons"] = cs
	}
	if a.GateSet != nil {
		doc["gateFailures"] = append([]string{}, a.GateFailures()...)
	}
	verdicts := []summaryVerdict{}
	for _, v := range a.Verdicts() {
		verdicts = append(verdicts, summaryVerdict{Arm: v.Arm, Base: v.Base, Class: v.Class, Text: v.Text()})
	}
	doc["verdicts"] = verdicts
	return json.MarshalIndent(doc, "", "  ")
}

func gateSetName(a *Analysis) string {
	if a.GateSet == nil {
		return ""
	}
	return a.GateSet.Name
}

// PerfJSON is Evergreen's perf.send form: a top-level array, one test per
// arm (the arm in test_name, since args must be integers), one value per
// metric: the median of the arm's valid trials.
func PerfJSON(a *Analysis) ([]byte, error) {
	type metric struct {
		Name  string  `json:"name"`
		Type  string  `json:"type"`
		Value float64 `json:"value"`
	}
	type info struct {
		TestName string           `json:"test_name"`
		Trial    int              `json:"trial"`
		Tags     []string         `json:"tags"`
		Args     map[string]int32 `json:"args"`
	}
	type test struct {
		Info        info      `json:"info"`
		CreatedAt   time.Time `json:"created_at"`
		CompletedAt time.Time `json:"completed_at"`
		Metrics     []metric  `json:"metrics"`
		SubTests    []any     `json:"sub_tests"`
	}
	created := time.Time{}
	if len(a.In.Manifests) > 0 {
		created = a.In.Manifests[0].Created
	}
	completed := created
	for _, ts := range a.In.Trials {
		for _, t := range ts {
			if t.Started.After(completed) {
				completed = t.Started
			}
		}
	}
	tags := []string{"qmlsab", a.In.Workload.Name}
	if a.In.Simulated {
		tags = append(tags, "simulated")
	}
	out := []test{}
	for _, arm := range a.Arms {
		if arm.N == 0 {
			continue
		}
		t := test{Info: info{TestName: a.In.Workload.Name + "/" + arm.Name, Tags: tags, Args: map[string]int32{"n": int32(arm.N)}},
			CreatedAt: created.UTC(), CompletedAt: completed.UTC(), Metrics: []metric{}, SubTests: []any{}}
		for _, name := range a.MetricNames {
			if s, ok := arm.Metrics[name]; ok && !math.IsNaN(s.Median) {
				t.Metrics = append(t.Metrics, metric{Name: name, Type: "MEDIAN", Value: s.Median})
			}
		}
		out = append(out, t)
	}
	return json.MarshalIndent(out, "", "  ")
}

// BenchTxt is Go benchmark format, one line per trial and metric, so
// benchstat can compare arms: benchstat -col /arm bench.txt (the header's
// comment lines say so; benchstat reads past them). The metric is part of
// the benchmark's name and the value is in the metric's own unit, as its
// name says it: bytes as "B" (which benchstat scales to KiB…GiB),
// milliseconds as "ms", and a metric without a physical unit as its own
// unit, as Go's custom benchmark metrics are. benchstat's comparison is
// its own: a ratio of medians with its own test, where the report shifts
// by Hodges-Lehmann.
func BenchTxt(a *Analysis) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "workload: %s\n", a.In.Workload.Name)
	fmt.Fprintf(&b, "# qmlsab bench.txt: one line per valid trial and metric. Compare the arms with: benchstat -col /arm bench.txt\n")
	fmt.Fprintf(&b, "# benchstat's estimate is a ratio of medians (its own test); the report's is the Hodges-Lehmann shift (exact Mann-Whitney U).\n")
	for _, srv := range a.In.Servers {
		fmt.Fprintf(&b, "server: %s\n", srv)
	}
	if a.In.Simulated {
		fmt.Fprintln(&b, "note: SIMULATED (mongosim model), not a real server")
	}
	name := "Benchmark" + camel(a.In.Workload.Name)
	for _, arm := range a.In.Arms {
		for _, t := range a.In.Valid(arm) {
			for _, m := range a.MetricNames {
				if v, ok := t.Metrics[m]; ok {
					fmt.Fprintf(&b, "%s/arm=%s/metric=%s 1 %.6g %s\n", name, arm, m, v, benchUnit(m))
				}
			}
		}
	}
	return b.Bytes()
}

// benchUnit is the unit bench.txt writes a metric in: its own, as its
// name says it (canary_p99_ms in ms), or the metric's name for a metric
// without one.
func benchUnit(name string) string {
	switch u := metric.Lookup(name).Unit; u {
	case "B", "ms":
		return u
	}
	return name
}

// camel is spill_to_disk → SpillToDisk.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' || r == '-' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// parallelOrAbsent is the trials at once for summary.json: null when the
// runs did not record one number.
func parallelOrAbsent(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// Markdown is a pull-request summary: the verdict table, gates, warnings.
func Markdown(a *Analysis) []byte {
	var b bytes.Buffer
	var names []string
	for _, arm := range a.In.Arms {
		names = append(names, md(arm))
	}
	fmt.Fprintf(&b, "### qmlsab: %s, %s\n\n", md(a.In.Workload.Name), strings.Join(names, " vs "))
	if a.In.Simulated {
		fmt.Fprintf(&b, "> **SIMULATED** — these trials ran against mongosim, a model of mongod, not a real server.\n\n")
	}
	// What was measured, before any verdict on it.
	if len(a.In.Servers) > 0 {
		fmt.Fprintf(&b, "Server: %s.\n\n", md(strings.Join(a.In.Servers, "; ")))
	}
	// The verdict first: a sentence per arm, then what the arms are.
	for _, v := range a.Verdicts() {
		fmt.Fprintf(&b, "- %s\n", md(v.Text()))
	}
	fmt.Fprintf(&b, "\nKey metrics that moved beyond noise against %s (exact Mann-Whitney U, p ≤ %g): ▲ better, ▼ worse, ◆ changed (no better direction), ◇ not judged.\n\n", md(a.Baseline), a.Alpha)
	fmt.Fprint(&b, "| arm | build | description | valid trials |\n|---|---|---|---|\n")
	for _, r := range legend(a) {
		desc := r.Description
		if desc == "" {
			desc = "not recorded"
		}
		name := md(r.Name)
		if r.Baseline {
			name += " (baseline)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, md(r.Build), md(desc), r.Trials)
	}
	fmt.Fprintln(&b)
	if failures := a.GateFailures(); len(failures) > 0 {
		fmt.Fprintf(&b, "**Gates (%s) fail:** %s.\n\n", md(a.GateSet.Name), md(strings.Join(failures, "; ")))
	} else if a.GateSet != nil {
		fmt.Fprintf(&b, "**Gates (%s) pass.**\n\n", md(a.GateSet.Name))
	}
	fmt.Fprintf(&b, "Conditions: %s.\n\n", md(a.In.Conditions()))
	fmt.Fprintf(&b, "Median [min–max] of each arm's valid trials (Σ: total over the trials, for counts); Δ is the Hodges-Lehmann shift vs %s with its direction, `≈ within noise` when the Mann-Whitney U p > %g.\n\n", md(a.Baseline), a.Alpha)
	fmt.Fprint(&b, "| metric |")
	for _, arm := range a.Arms {
		fmt.Fprintf(&b, " %s (n=%d) |", md(arm.Name), arm.N)
	}
	fmt.Fprint(&b, "\n|---|")
	for range a.Arms {
		fmt.Fprint(&b, "---|")
	}
	fmt.Fprintln(&b)
	for _, name := range keyMetrics(a) {
		fmt.Fprintf(&b, "| %s |", metric.Lookup(name).Title)
		for _, arm := range a.Arms {
			s, ok := arm.Metrics[name]
			if c, censored := arm.Censored[name]; censored {
				fmt.Fprintf(&b, " %s |", md(censoredValue(name, c)))
				continue
			}
			if !ok {
				if note, _ := a.AbsentNote(arm.Name, name); note > 0 {
					fmt.Fprintf(&b, " – (note %d) |", note)
				} else {
					fmt.Fprint(&b, " – |")
				}
				continue
			}
			cell := cellValue(name, s)
			if c, ok := a.Comparison(arm.Name, name); ok {
				cell += " " + deltaText(c) + " (" + FormatP(c) + ")"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		fmt.Fprintln(&b)
	}
	if a.GateSet != nil {
		fmt.Fprintf(&b, "\n**Gates (%s):**", md(a.GateSet.Name))
		for _, arm := range a.Arms {
			pass, total := 0, 0
			var failed, noData []string
			for _, g := range arm.Gates {
				if g.NotApplicable {
					continue
				}
				total++
				switch {
				case g.AsExpected():
					pass++
				case g.NoData:
					noData = append(noData, g.Gate.Name+": "+g.Reason)
				default:
					failed = append(failed, g.Gate.Name+": "+g.Line())
				}
			}
			if total == 0 {
				continue // no gate of the set is this arm's
			}
			fmt.Fprintf(&b, " %s %d/%d", md(arm.Name), pass, total)
			if len(failed) > 0 {
				fmt.Fprintf(&b, " (failed: %s)", md(strings.Join(failed, "; ")))
			}
			if len(noData) > 0 {
				fmt.Fprintf(&b, " (no data, which fails: %s)", md(strings.Join(noData, "; ")))
			}
			fmt.Fprint(&b, ";")
		}
		fmt.Fprintln(&b)
		if a.In.Simulated {
			var preds []string
			for _, g := range a.GateSet.Gates {
				if words, ok := investigation.Ensemble.Words(g.Condition); ok && g.Condition != "" {
					preds = append(preds, g.Name+": "+words)
				}
			}
			if len(preds) > 0 {
				fmt.Fprintf(&b, "\n*The fix's acceptance as the model's ensemble predicts it for F and G (qmlsab calibrate --fit, on the investigation's observations):* %s.\n", md(strings.Join(preds, "; ")))
			}
		}
	}
	b.Write(hostMarkdown(a))
	if len(a.Warnings) > 0 {
		fmt.Fprintln(&b)
		for i, w := range a.Warnings {
			fmt.Fprintf(&b, "%d. %s\n", i+1, md(warningText(w)))
		}
	}
	return b.Bytes()
}

// deltaText is a comparison's shift with its direction in a symbol and
// a word: "▼ −61.5 % worse", "≈ within noise".
func deltaText(c Comparison) string {
	mark, word, _ := deltaWords(c)
	d := FormatDelta(c)
	switch d {
	case "n/a":
		return d
	case "~":
		return mark + " " + word
	}
	dagger := ""
	if c.OverOutage {
		dagger = "†"
	}
	return strings.TrimSpace(mark+" "+d+" "+word) + dagger
}

func warningText(w Warning) string {
	if w.Arm != "" {
		return w.Arm + ": " + w.Text
	}
	return w.Text
}

// md escapes Markdown table and emphasis characters in user strings.
func md(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// keyMetrics are the verdict table's rows: key metrics present.
func keyMetrics(a *Analysis) []string {
	var out []string
	for _, name := range a.MetricNames {
		if metric.Lookup(name).Key {
			out = append(out, name)
		}
	}
	return out
}
