package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// absentInput is two arms of three trials: Old's server reports neither
// shedding (so sheds nothing) nor the low-priority queue, New's does.
func absentInput() *Input {
	in := &Input{Dirs: []string{"run"}, Arms: []string{"New", "Old"}, Trials: map[string][]Trial{}}
	for i := range 3 {
		in.Trials["New"] = append(in.Trials["New"], Trial{Status: store.Valid, Trial: store.Trial{Arm: "New", Index: i + 1,
			Metrics: map[string]float64{"availability": 0.99, "failovers": 0, "server_sheds_per_s": 40, "admissions_per_s": 20, "lowpri_queue_sustained_growth": 0}}})
		in.Trials["Old"] = append(in.Trials["Old"], Trial{Status: store.Valid, Trial: store.Trial{Arm: "Old", Index: i + 1,
			Metrics: map[string]float64{"availability": 0.97, "failovers": 0, "server_sheds_per_s": 0},
			Absent: map[string]string{"admissions_per_s": "the server reported no queues.execution.read.lowPriority",
				"lowpri_queue_sustained_growth": "the server reported no queues.execution.read.lowPriority.queueLength"}}})
	}
	return in
}

// A gate on a metric the server never reported says "no data" with the
// reason, never PASS or a FAIL on a zero; and the gate set fails closed:
// a gate that cannot be judged fails it, naming the arm, the gate and the
// metric.
func TestGatesOnAbsentMetricsSayNoDataAndFailTheSet(t *testing.T) {
	gs := SweeperAcceptance
	a, err := Analyze(absentInput(), Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	old := a.Arm("Old")
	for _, g := range old.Gates {
		if g.NotApplicable {
			continue // D's and E's gates
		}
		switch g.Gate.Name {
		case "queue bounded", "sheds outpace admissions":
			if g.Pass || !g.NoData || g.Verdict() != "no data" || !strings.HasPrefix(g.Line(), "no data (") ||
				!strings.Contains(g.Reason, "the server reported no") {
				t.Errorf("%s on an absent metric: %+v, line %q", g.Gate.Name, g, g.Line())
			}
		default:
			if !g.Pass || g.NoData {
				t.Errorf("%s: %+v, want pass", g.Gate.Name, g)
			}
		}
	}
	if a.GatesPass() {
		t.Error("gates with no data passed the gate set; a gate that cannot be judged must fail it")
	}
	failures := strings.Join(a.GateFailures(), "\n")
	for _, want := range []string{`arm Old, gate "queue bounded": no data (lowpri_queue_sustained_growth: the server reported no queues.execution.read.lowPriority.queueLength)`,
		`arm Old, gate "sheds outpace admissions": no data (admissions_per_s: `} {
		if !strings.Contains(failures, want) {
			t.Errorf("the gate set's failures lack %q:\n%s", want, failures)
		}
	}
	if strings.Contains(failures, "arm New") {
		t.Errorf("New's gates all passed, yet: %s", failures)
	}
	if !strings.Contains(strings.Join(warningTexts(a), "\n"), `gate "queue bounded" has no data`) {
		t.Errorf("no warning says the gate had no data: %q", warningTexts(a))
	}
	// A real failure fails the set too.
	strict := GateSet{Name: "strict", Gates: []Gate{{Name: "perfect", Metric: "availability", Op: ">=", Value: 1}}}
	if b, _ := Analyze(absentInput(), Options{Gates: &strict}); b.GatesPass() {
		t.Error("availability 0.97 passed >= 1")
	}
}

func TestAbsentMetricsAreDashWithTheReasonInEveryTable(t *testing.T) {
	gs := SweeperAcceptance
	a, err := Analyze(absentInput(), Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	note, why := a.AbsentNote("Old", "admissions_per_s")
	if note == 0 || why != "the server reported no queues.execution.read.lowPriority" {
		t.Fatalf("AbsentNote = %d %q", note, why)
	}
	if w := a.Warnings[note-1]; w.Arm != "Old" || !strings.Contains(w.Text, "admissions/s") || !strings.Contains(w.Text, why) {
		t.Errorf("note %d is %+v", note, w)
	}
	if n, _ := a.AbsentNote("New", "admissions_per_s"); n != 0 {
		t.Errorf("New has admissions/s but a note %d", n)
	}
	md := string(Markdown(a))
	for _, want := range []string{"| – (note ", why, "no data, which fails"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	b, err := SummaryJSON(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Arms []struct {
			Name    string
			Metrics map[string]any
			Absent  map[string]string
			Gates   []struct {
				Name, Status, Reason string
				Pass                 bool
				Value                *float64
			}
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, arm := range s.Arms {
		if arm.Name != "Old" {
			continue
		}
		if _, ok := arm.Metrics["admissions_per_s"]; ok || arm.Absent["admissions_per_s"] != why {
			t.Errorf("summary.json Old: metrics %v absent %v", arm.Metrics, arm.Absent)
		}
		for _, g := range arm.Gates {
			if g.Name == "queue bounded" && (g.Status != "no data" || g.Pass || g.Value != nil || g.Reason == "") {
				t.Errorf("summary.json gate %+v", g)
			}
		}
	}
	perf, _ := PerfJSON(a)
	if strings.Count(string(perf), `"admissions_per_s"`) != 1 {
		t.Errorf("perf.json should have admissions_per_s for New only:\n%s", perf)
	}
	if bench := string(BenchTxt(a)); strings.Contains(bench, "arm=Old/metric=admissions_per_s ") || strings.Count(bench, "/metric=admissions_per_s ") != 3 {
		t.Errorf("bench.txt should have New's three admissions_per_s lines only:\n%s", bench)
	}
}

func warningTexts(a *Analysis) []string {
	var out []string
	for _, w := range a.Warnings {
		out = append(out, warningText(w))
	}
	return out
}
