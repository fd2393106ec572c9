package report

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/chartcheck"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// outageTrials is how many trials each arm of the hand-built run has:
// enough for an exact U test to reach p < 0.05 (4 and 4: p ≥ 0.029).
const outageTrials = 4

// outageLength is the hand-built trials' length: warmup 20 s, storm 60 s,
// recovery 20 s.
const outageLength = 100

// outages are E's spans without a primary in the hand-built trials
// (seconds into the trial, as the sampler sees them: the last sample of
// the old primary, the first of the new one): its primary is OOM-killed
// twice in the storm and the set takes ten seconds to elect another.
var outages = [][2]int{{40, 51}, {64, 75}}

// primaryAt is who is primary at second s of a hand-built trial, or -1.
func primaryAt(arm string, s int) int {
	if arm != "E" {
		return 0
	}
	switch {
	case s <= outages[0][0]:
		return 0
	case s < outages[0][1]:
		return -1
	case s <= outages[1][0]:
		return 1
	case s < outages[1][1]:
		return -1
	}
	return 2
}

// writeOutageRun writes, through the results package and the metric
// registry, a run a reviewer can hold up to the wall clock: D keeps one
// primary for the whole of each trial; E loses its primary twice in the
// storm (an OOM kill: the member stops answering, then comes back as a
// new process), each time for ten seconds, and each new primary's queue
// starts empty, so E's queue figures over the seconds with a primary read
// lower than D's. Every sample, series, event, lives and metric is what
// the recording code derives from those samples.
func writeOutageRun(t *testing.T, dir string) {
	t.Helper()
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 20 * time.Second, Storm: 60 * time.Second, Recovery: 20 * time.Second}
	spec.SpillToDisk = &w
	wl, _ := json.Marshal(spec)
	armsDoc, _ := json.Marshal("arms:\n  - name: D\n    description: the killOp actor\n    build: base\n  - name: E\n    description: the inline shedder alone\n    build: shedder\n")
	m := store.Manifest{Schema: store.ManifestSchema, ToolVersion: "test", Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Host: "test",
		WorkloadName: spec.Name, Workload: wl, Arms: armsDoc, Seed: 1, Target: "embedded", Simulated: true, Clock: "wall",
		ArmList: []store.ArmInfo{{Name: "D", Build: "base"}, {Name: "E", Build: "shedder"}}}
	for i := 1; i <= outageTrials; i++ {
		for _, arm := range []string{"D", "E"} {
			m.Trials = append(m.Trials, store.TrialStatus{Arm: arm, Index: i, Status: store.Valid})
			tdir := store.TrialDir(dir, arm, i)
			if err := os.MkdirAll(tdir, 0o755); err != nil {
				t.Fatal(err)
			}
			start := time.Date(2026, 12, 1, 0, i, 0, 0, time.UTC)
			at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
			phases := map[store.Phase]time.Time{store.PhaseWarmup: start, store.PhaseStorm: at(20), store.PhaseRecovery: at(80), store.PhaseEnd: at(outageLength)}
			var samples []store.Sample
			born := [3]int{} // when each member's process started
			removed, canceled, queue := 0.0, 0.0, 0.0
			for s := 0; s <= outageLength; s++ {
				p := primaryAt(arm, s)
				if s > 0 && p >= 0 && primaryAt(arm, s-1) != p {
					queue = 0 // a new primary's queue starts empty
				}
				if p >= 0 && s >= 20 && s < 80 {
					queue += 4 + float64(i)
				}
				removed += 100
				canceled += 5
				for mem := range 3 {
					// E's primaries crash: the member stops answering and
					// comes back as a new process as a secondary.
					down := arm == "E" && (mem == 0 && s > outages[0][0] && s < outages[0][1]+5 || mem == 1 && s > outages[1][0] && s < outages[1][1]+5)
					if arm == "E" && (mem == 0 && s == outages[0][1]+5 || mem == 1 && s == outages[1][1]+5) {
						born[mem] = s
					}
					sm := store.Sample{At: at(s), Member: fmt.Sprintf("m%d", mem), Up: !down, Primary: !down && p == mem,
						ProcessID: fmt.Sprintf("p%d-%d", mem, born[mem]), Values: map[string]float64{}}
					if !down {
						sm.Values[store.FieldUptimeMillis] = float64((s - born[mem]) * 1000)
						sm.Values[store.FieldResidentMB] = 8192 + 10*float64(i)
						if sm.Primary {
							sm.Values[store.FieldReadTotalTickets] = 128
							sm.Values[store.FieldReadLowQueueLength] = queue
							sm.Values[store.FieldReadLowRemovedFromQueue] = removed
							sm.Values[store.FieldReadLowCanceled] = canceled
						}
					}
					samples = append(samples, sm)
				}
			}
			var canaries []store.CanaryOp
			var res store.Results
			for s := 0; s < outageLength; s++ {
				for k := range 4 {
					ok := primaryAt(arm, s) >= 0
					c := store.CanaryOp{Scheduled: at(s).Add(time.Duration(k) * 250 * time.Millisecond), Latency: 2 * time.Millisecond, OK: ok}
					if !ok {
						c.Latency, c.Code = time.Second, "NotWritablePrimary"
					}
					canaries = append(canaries, c)
				}
			}
			res = store.Results{PhaseStarts: phases, Canaries: canaries}
			recs := store.Records{Results: res, Samples: samples}
			tr := store.Trial{Schema: store.TrialSchema, Arm: arm, Index: i, Started: start, Clock: "wall",
				Phases: map[store.Phase]float64{store.PhaseWarmup: 0, store.PhaseStorm: 20, store.PhaseRecovery: 80}}
			metric.Fill(&tr, recs)
			for _, err := range []error{
				store.WriteJSONLinesGz(filepath.Join(tdir, store.SamplesFile), samples),
				store.WriteJSONLinesGz(filepath.Join(tdir, store.SeriesFile), metric.PerSecond(samples, start, at(outageLength))),
				store.WriteJSONLinesGz(filepath.Join(tdir, store.OutcomesFile), metric.Outcomes(start, res)),
				store.WriteJSONLinesGz(filepath.Join(tdir, store.EventsFile), metric.Events(phases, samples, nil)),
				store.WriteJSON(filepath.Join(tdir, store.TrialFile), tr),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// outageAnalysis is the hand-built run, analyzed.
func outageAnalysis(t *testing.T) *Analysis {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	writeOutageRun(t, dir)
	return analyze(t, dir)
}

// A line breaks where its trial's samples do: on every chart of the
// primary's figures, no segment of an E trial's line spans a second it
// had no primary (a null point sits in each gap, and the series does not
// connect nulls), and each span without a primary is shaded and labelled
// "no primary"; D's lines, which never lost their primary, are unbroken.
func TestLinesBreakAcrossOutagesAndOutagesAreShaded(t *testing.T) {
	a := outageAnalysis(t)
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	charts := checkReportCharts(t, page, outageLength)
	raw := chartOptions(t, page)
	for _, id := range []string{"ts-tickets", "ts-queue", "ts-rss"} {
		c, ok := charts[id]
		if !ok {
			t.Fatalf("no chart %s", id)
		}
		for si, s := range c.Series {
			if connect, _ := raw[id].Series[si]["connectNulls"].(bool); connect || raw[id].Series[si]["connectNulls"] == nil {
				t.Errorf("%s %s: connectNulls is %v, want false", id, s.Name, raw[id].Series[si]["connectNulls"])
			}
			// Consecutive present points with no absent one between them
			// are a drawn segment: none may cross an outage.
			var last *chartcheck.Point
			breaks := 0
			for i := range s.Points {
				p := s.Points[i]
				if p.Absent {
					last = nil
					breaks++
					continue
				}
				if last != nil {
					x0, x1 := last.X.(float64), p.X.(float64)
					for _, o := range outages {
						if strings.HasPrefix(s.Name, "E#") && x0 < float64(o[0]+1) && x1 > float64(o[1]-1) {
							t.Errorf("%s %s: a segment from %g s to %g s is drawn across the outage %v", id, s.Name, x0, x1, o)
						}
					}
				}
				last = &s.Points[i]
			}
			want := 0
			if strings.HasPrefix(s.Name, "E#") {
				want = len(outages)
			}
			if breaks != want {
				t.Errorf("%s %s: %d breaks in the line, want %d", id, s.Name, breaks, want)
			}
		}
		// E's outages shaded and labelled, once each with the trials
		// that had them (all four E trials, at the same seconds); none
		// of D's.
		var bands []band
		for si := range c.Series {
			for _, b := range areasOf(raw[id].Series[si]) {
				if strings.HasPrefix(b.name, "no primary") {
					bands = append(bands, b)
				}
			}
		}
		if len(bands) != len(outages) {
			t.Errorf("%s: no-primary bands %+v, want one per outage %v", id, bands, outages)
		}
		for _, b := range bands {
			if !slices.ContainsFunc(outages, func(o [2]int) bool { return b.from >= float64(o[0]) && b.to <= float64(o[1]) && b.to-b.from >= 9 }) {
				t.Errorf("%s: a no-primary band %g–%g s matches no outage %v", id, b.from, b.to, outages)
			}
			if !b.labelShown || b.name != "no primary\nE#1, E#2, E#3, E#4" {
				t.Errorf("%s: the no-primary band at %g s is labelled %q (shown %v), want E's four trials", id, b.from, b.name, b.labelShown)
			}
		}
	}
}

// chartOption is the part of a chart's option the gap and band checks
// read raw (chartcheck reads values, not styles).
type chartOption struct {
	Legend *struct {
		Show *bool `json:"show"`
	} `json:"legend"`
	Color  []string         `json:"color"`
	XAxis  map[string]any   `json:"xAxis"`
	Series []map[string]any `json:"series"`
}

// chartOptions are a page's options, raw.
func chartOptions(t *testing.T, page []byte) map[string]chartOption {
	t.Helper()
	s := string(page)
	i := strings.Index(s, "var options = ")
	if i < 0 {
		t.Fatal("no options in the page")
	}
	var out map[string]chartOption
	if err := json.NewDecoder(strings.NewReader(s[i+len("var options = "):])).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// band is one mark area of a series: its name, x ends and whether its
// label shows.
type band struct {
	name       string
	from, to   float64
	labelShown bool
}

type rawSeries = map[string]any

// areas are a raw series' mark areas.
func areasOf(s rawSeries) []band {
	ma, _ := s["markArea"].(map[string]any)
	list, _ := ma["data"].([]any)
	var out []band
	for _, pair := range list {
		ends, _ := pair.([]any)
		if len(ends) != 2 {
			continue
		}
		a, _ := ends[0].(map[string]any)
		b, _ := ends[1].(map[string]any)
		bd := band{}
		bd.name, _ = a["name"].(string)
		bd.from, _ = a["xAxis"].(float64)
		bd.to, _ = b["xAxis"].(float64)
		if l, ok := a["label"].(map[string]any); ok {
			bd.labelShown, _ = l["show"].(bool)
		} else if l, ok := ma["label"].(map[string]any); ok {
			bd.labelShown, _ = l["show"].(bool)
		}
		out = append(out, bd)
	}
	return out
}

// E's queue p95 over the seconds with a primary reads lower than D's
// because each new primary's queue starts empty: across E's outages it is
// "not judged", never "better", in the verdict sentence, the verdict
// table and summary.json, and a footnote says how much of the storm E
// had no primary for. Metrics that do compare across an outage
// (availability) keep their direction.
func TestVerdictDoesNotReadAnOutageAsAnImprovement(t *testing.T) {
	a := outageAnalysis(t)
	if o := a.Arm("E").Outage; o.Known != outageTrials || o.Lost != outageTrials || o.Median < 0.30 || o.Median > 0.40 {
		t.Errorf("E's storm without a primary: %+v, want 4 of 4 trials, about 20 of 60 s", o)
	}
	if o := a.Arm("D").Outage; o.Known != outageTrials || o.Lost != 0 {
		t.Errorf("D's storm without a primary: %+v, want none", o)
	}
	c, ok := a.Comparison("E", metric.LowQueueP95)
	if !ok || !c.Significant || c.Delta >= 0 {
		t.Fatalf("E's queue p95 against D: %+v; the fixture makes it significantly lower", c)
	}
	if c.Direction != NotJudged || !c.OverOutage {
		t.Errorf("E's lower queue p95 across its outages reads %q, want %q", c.Direction, NotJudged)
	}
	if av, _ := a.Comparison("E", metric.Availability); av.Direction != Worse {
		t.Errorf("E's availability across its outages: %q, want worse", av.Direction)
	}
	vs := a.Verdicts()
	if len(vs) != 1 {
		t.Fatalf("verdicts %+v, want E's", vs)
	}
	text := vs[0].Text()
	for _, want := range []string{"E worse than D: ▼ availability −", "◇ low-pri queue p95 −", "not judged (over the seconds with a primary)†",
		"† E had no primary for 3", "% of its storm (median of 4 trials; 4 of them lost it); D always had a primary in the storm"} {
		if !strings.Contains(text, want) {
			t.Errorf("E's verdict lacks %q:\n%s", want, text)
		}
	}
	for _, c := range vs[0].Clauses {
		for _, p := range c.Parts {
			if p.Direction == Better {
				t.Errorf("E's verdict calls %s better across its outages:\n%s", p.Title, text)
			}
		}
	}
	if md := string(Markdown(a)); !strings.Contains(md, "- E worse than D: ▼ availability −") || !strings.Contains(md, "◇ low-pri queue p95 −") ||
		!strings.Contains(md, "| arm | build | description | valid trials |") || !strings.Contains(md, "| E | shedder | the inline shedder alone | n = 4 |") {
		t.Errorf("summary.md does not open with the verdict and the arms legend:\n%s", md)
	}
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`<tr><td>low-pri queue p95</td>.*?</tr>`).FindString(html.UnescapeString(string(page)))
	if !strings.Contains(row, "◇") || !strings.Contains(row, "not judged†") || strings.Contains(row, "▲") {
		t.Errorf("the verdict table's queue p95 row: %s", row)
	}
	b, err := SummaryJSON(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Comparisons []struct {
			Metric, Arm, Direction string
			OverOutage             bool
		}
		Arms []struct {
			Name                string
			StormWithoutPrimary *struct{ TrialsLost int }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Comparisons {
		if c.Metric == metric.LowQueueP95 && (c.Direction != NotJudged || !c.OverOutage) {
			t.Errorf("summary.json: %+v", c)
		}
	}
	if e := doc.Arms[1]; e.Name != "E" || e.StormWithoutPrimary == nil || e.StormWithoutPrimary.TrialsLost != outageTrials {
		t.Errorf("summary.json E: %+v", e)
	}
}

// The metrics not judged across an outage are exactly those the registry
// defines over the storm's seconds with a primary: its per-primary-second
// flows and the primary's gauges. A metric added to the registry with such
// a definition, and not to primaryOnly, would read a crash loop's artefact
// as better or worse.
func TestPrimaryOnlyMetricsAreTheRegistrysPerPrimaryOnes(t *testing.T) {
	overPrimary := regexp.MustCompile(`per second with a primary \(the storm's sampling intervals|on the primary during the storm|over the primary's samples in the storm|both per second with a primary|same queue's maximum during the storm|storm's queue slope|queue's trend after its fill`)
	for _, m := range metric.Registry {
		if got, want := primaryOnly[m.Name], overPrimary.MatchString(m.Definition); got != want {
			t.Errorf("%s: not judged across an outage = %v, but its definition is over the seconds with a primary = %v: %q", m.Name, got, want, m.Definition)
		}
	}
	for name := range primaryOnly {
		if metric.Lookup(name).Definition == "" {
			t.Errorf("primaryOnly names %s, which the registry does not define", name)
		}
	}
}
