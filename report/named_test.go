package report

import (
	"encoding/json"
	"html"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// A latency a client timeout cut short is a lower bound everywhere: the
// verdict and the appendix say "≥ … (timeout)", summary.json has it under
// censored (no mean), and no comparison, perf.json or bench.txt line
// treats it as a measurement. E's canaries in the fixture (a virtual D/E
// run) time out while no primary is found.
func TestCensoredLatenciesAreNeverMeasurements(t *testing.T) {
	a := analyze(t, fixture(t))
	e := a.Arm("E")
	c, ok := e.Censored["canary_p99_ms"]
	if !ok || !c.MedianAtLeast || c.Bounds == 0 {
		t.Fatalf("E's canary p99: censored %+v (present %v); its canaries timed out", c, ok)
	}
	if _, ok := e.Metrics["canary_p99_ms"]; ok {
		t.Error("E's censored canary p99 is also a measured summary")
	}
	if _, ok := a.Comparison("E", "canary_p99_ms"); ok {
		t.Error("a censored metric was compared by a U test")
	}
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.UnescapeString(string(page)), "≥ "+metric.Format("canary_p99_ms", c.Median)+" (timeout)") {
		t.Error("the report does not show E's canary p99 as a lower bound")
	}
	b, err := SummaryJSON(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Arms []struct {
			Name     string
			Metrics  map[string]json.RawMessage
			Censored map[string]struct {
				Median        float64
				MedianAtLeast bool
				Mean          *float64
				AtLeast       []bool
			}
			PrimaryLives []struct {
				Trial         int
				Cause         string
				HeaviestQueue string
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, arm := range doc.Arms {
		if arm.Name != "E" {
			continue
		}
		cs, ok := arm.Censored["canary_p99_ms"]
		if _, measured := arm.Metrics["canary_p99_ms"]; measured || !ok || !cs.MedianAtLeast || cs.Mean != nil || len(cs.AtLeast) != 3 {
			t.Errorf("summary.json E canary_p99_ms: measured %v, censored %+v", measured, cs)
		}
		crashed := 0
		for _, l := range arm.PrimaryLives {
			if l.Cause == store.LifeCrashed {
				crashed++
				if l.HeaviestQueue == "" {
					t.Errorf("summary.json E#%d: an OOM-ended life names no queue", l.Trial)
				}
			}
		}
		if crashed == 0 {
			t.Error("summary.json: none of E's primary lives ended in a crash")
		}
	}
	measured := 0
	for _, arm := range a.Arms {
		if _, ok := arm.Metrics["canary_p99_ms"]; ok {
			measured++
		}
	}
	perf, _ := PerfJSON(a)
	if strings.Count(string(perf), `"canary_p99_ms"`) != measured {
		t.Errorf("perf.json should have the canary p99 of the %d arms that measured it (a bound is not a measurement):\n%s", measured, perf)
	}
	if bench := string(BenchTxt(a)); strings.Contains(bench, "arm=E/metric=canary_p99_ms ") {
		t.Error("bench.txt has a lower bound as a measurement")
	}
	// A gate on it has no data, and says why.
	gs := GateSet{Name: "latency", Gates: []Gate{{Name: "p99", Metric: "canary_p99_ms", Op: "<", Value: 2000}}}
	g, err := Analyze(a.In, Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Arm("E").Gates[0]; !r.NoData || !strings.Contains(r.Reason, "lower bound") {
		t.Errorf("gate on a censored p99: %+v; want no data, saying it is a lower bound", r)
	}
}

// A trial.json of an older qmlsab holds the retired sheds_per_s (server
// sheds plus actor kills): the report carries it under its own name,
// defined as what it was, and never as the metric that replaced it; a
// gate naming the retired metric on a newer run has no data and says the
// metric is retired.
func TestRetiredMetricsOfOlderRunsSayWhatTheyWere(t *testing.T) {
	trials := func(metrics map[string]float64) *Input {
		in := &Input{Dirs: []string{"run"}, Arms: []string{"D"}, Trials: map[string][]Trial{}}
		for i := range 3 {
			in.Trials["D"] = append(in.Trials["D"], Trial{Status: store.Valid, Trial: store.Trial{Arm: "D", Index: i + 1, Metrics: metrics}})
		}
		return in
	}
	gs := GateSet{Name: "old", Gates: []Gate{{Name: "server sheds", Metric: "server_sheds_per_s", Op: ">", Than: "admissions_per_s"},
		{Name: "old sheds", Metric: "sheds_per_s", Op: ">", Than: "admissions_per_s"}}}
	older, err := Analyze(trials(map[string]float64{"availability": 1, "sheds_per_s": 170, "admissions_per_s": 143}), Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(older.MetricNames, "sheds_per_s") || !strings.HasPrefix(metric.Lookup("sheds_per_s").Definition, "retired: server sheds") ||
		!strings.Contains(metric.Lookup("sheds_per_s").Title, "retired") {
		t.Errorf("an older run's sheds_per_s: names %v, entry %+v", older.MetricNames, metric.Lookup("sheds_per_s"))
	}
	if r := older.Arm("D").Gates[0]; !r.NoData {
		t.Errorf("a gate on server_sheds_per_s read an older run's sheds_per_s: %+v", r)
	}
	newer, err := Analyze(trials(map[string]float64{"availability": 1, "server_sheds_per_s": 0, "admissions_per_s": 143}), Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	if r := newer.Arm("D").Gates[1]; !r.NoData || !strings.Contains(r.Reason, "sheds_per_s: retired") {
		t.Errorf("a gate on the retired sheds_per_s: %+v; want no data, saying it is retired", r)
	}
}

// The merge workload's section says its sheds are forced by a failpoint,
// and its sharded table counts $out's temporary leftovers apart from
// writes into a target.
func TestMergeSectionSaysTheShedIsForcedAndCountsOutLeftoversApart(t *testing.T) {
	a := &Analysis{In: &Input{Arms: []string{"E"}, Trials: map[string][]Trial{"E": {{Status: store.Valid,
		Trial: store.Trial{Arm: "E", Index: 1, Metadata: json.RawMessage(`{"forced":true}`)}}}},
		Workload: store.WorkloadHead{Merge: json.RawMessage(`{"shed_after_batches":1}`)}}}
	if n := forcedNote(a); !strings.Contains(n, "queryMemoryLoadSheddingAlwaysShed") || !strings.Contains(n, "write-started latch") {
		t.Errorf("forced note %q", n)
	}
	a.In.Trials["E"][0].Metadata = json.RawMessage(`{"forced":false,"forced_note":"shed failpoint not available"}`)
	if n := forcedNote(a); !strings.Contains(n, "E#1 ran unforced (shed failpoint not available)") {
		t.Errorf("unforced note %q", n)
	}
	tbl := string(mergeCaseTable([]mergeCaseRow{{Case: store.MergeCaseOut, Arm: "E", Ops: 3, Shed: 3, OutTemp: 3, OutTempDocs: 300}}))
	if !strings.Contains(tbl, "<td>3</td><td>3</td><td>0</td><td>0</td><td>3, 300</td>") {
		t.Errorf("$out row: %s; want 0 unsafe, 0 in the target, 3 ops leaving 300 temp documents", tbl)
	}
}
