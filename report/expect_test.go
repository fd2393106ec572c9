package report

import (
	"context"
	"html/template"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// runArms runs the given arms (n trials each, the embedded default, the
// default profile) and analyzes them against sweeper-acceptance.
func runArms(t *testing.T, list []arms.Arm, n int) *Analysis {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	e, err := run.NewExperiment(run.Spec{Arms: list, N: n, Workload: spec, Seed: 1, Clock: store.ClockVirtual,
		Sim: mongosim.SimOptions{CPUs: 8}, SimMemLimitMB: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, dir, run.Exec{ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	return analyze(t, dir)
}

func builtinArm(t *testing.T, name string) arms.Arm {
	t.Helper()
	a, ok := arms.Lookup(name)
	if !ok {
		t.Fatalf("no built-in arm %s", name)
	}
	a.SetParameters = maps.Clone(a.SetParameters)
	return a
}

func failedGates(a *Analysis) []string {
	var out []string
	for _, arm := range a.Arms {
		for _, g := range arm.Gates {
			if !g.NotApplicable && !g.NoData && !g.AsExpected() {
				out = append(out, arm.Name+": "+g.Gate.Name+" "+g.Line())
			}
		}
	}
	return out
}

// sweeper-acceptance is the investigation as a regression test: arms
// whose figures are the investigation's (D holds, E falls, F meets its
// acceptance) pass the set; an E that stops falling fails E's gates, a D
// that stops holding fails D's. The figures are the arms' as written,
// not the model's: since spill I/O is conserved the embedded default
// does not reproduce the investigation (docs/investigations.md), and the
// set's logic is what this test holds.
func TestSweeperAcceptanceExpectsDToHoldAndEToFall(t *testing.T) {
	s := func(v ...float64) Summary { return Summarize(v, 0.95) }
	holds := map[string]Summary{metric.Availability: s(0.96, 0.97, 0.98), metric.Failovers: s(0, 0, 0), metric.Restarts: s(0, 0, 0),
		metric.LowQueueGrowth: s(0, 0, 0), metric.ServerShedsPerS: s(170, 180, 190), metric.AdmissionsPerS: s(150, 155, 160)}
	falls := map[string]Summary{metric.Availability: s(0.38, 0.41, 0.44), metric.Failovers: s(11, 13, 13), metric.Restarts: s(11, 13, 13),
		metric.LowQueueGrowth: s(1, 1, 1), metric.ServerShedsPerS: s(5, 7, 9), metric.AdmissionsPerS: s(170, 180, 190)}
	failed := func(arms map[string]map[string]Summary) []string {
		var out []string
		for arm, sum := range arms {
			for _, g := range SweeperAcceptance.Gates {
				if !SweeperAcceptance.AppliesTo(g, arm) {
					continue
				}
				if r := g.Evaluate(arm, sum); r.NoData || !r.AsExpected() {
					out = append(out, arm+": "+g.Name)
				}
			}
		}
		return out
	}
	if f := failed(map[string]map[string]Summary{"D": holds, "E": falls, "F": holds}); len(f) != 0 {
		t.Errorf("the investigation's outcomes failed gates %v", f)
	}
	f := failed(map[string]map[string]Summary{"D": holds, "E": holds})
	if len(f) == 0 || !slices.ContainsFunc(f, func(x string) bool { return strings.HasPrefix(x, "E: E falls") }) || slices.ContainsFunc(f, func(x string) bool { return strings.HasPrefix(x, "D:") }) {
		t.Errorf("an E that holds failed %v; want E's falls gates, and none of D's", f)
	}
	f = failed(map[string]map[string]Summary{"D": falls, "E": falls})
	if len(f) == 0 || !slices.ContainsFunc(f, func(x string) bool { return strings.HasPrefix(x, "D: D holds") }) || slices.ContainsFunc(f, func(x string) bool { return strings.HasPrefix(x, "E:") }) {
		t.Errorf("a D that falls failed %v; want D's holds gates, and none of E's", f)
	}
	if f := failed(map[string]map[string]Summary{"F": falls}); len(f) < 4 {
		t.Errorf("an F that falls failed only %v; want every one of its four conditions", f)
	}
}

// On the embedded default, every gate of the set that applies to D and E
// says what it compared (its metric and its condition), whatever the
// model's outcome.
func TestSweeperAcceptanceSaysWhatItCompared(t *testing.T) {
	if testing.Short() {
		t.Skip("a virtual run")
	}
	a := runArms(t, []arms.Arm{builtinArm(t, "D"), builtinArm(t, "E")}, 2)
	for _, arm := range a.Arms {
		applied := 0
		for _, g := range arm.Gates {
			if g.NotApplicable {
				continue
			}
			applied++
			if want := arm.Name + " "; !strings.HasPrefix(g.Gate.Name, want) {
				t.Errorf("arm %s got gate %q", arm.Name, g.Gate.Name)
			}
			if !strings.Contains(g.Detail(), g.Gate.Metric+" ") || !strings.Contains(g.Detail(), ", want "+g.Gate.Op+" ") {
				t.Errorf("gate line %q does not say what was compared", g.Line())
			}
		}
		if applied == 0 {
			t.Errorf("arm %s had no gate", arm.Name)
		}
	}
}

// A gate file names the arms each gate applies to ("*": the arms no other
// gate names) and an expected outcome; an expected failure that passes
// fails the set, one that fails meets it.
func TestGateFileArmsAndExpectedFailure(t *testing.T) {
	gs, err := ParseGates("g.yaml", []byte(`name: mine
gates:
  - name: old build crashes
    metric: availability
    op: ">"
    value: 0.9
    arms: [Old]
    expect: fail
  - name: others hold
    metric: availability
    op: ">"
    value: 0.9
    arms: ["*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !gs.AppliesTo(gs.Gates[0], "Old") || gs.AppliesTo(gs.Gates[0], "New") || gs.AppliesTo(gs.Gates[1], "Old") || !gs.AppliesTo(gs.Gates[1], "New") {
		t.Fatal("arms: Old's gate must apply to Old only, * to every other arm")
	}
	low := map[string]Summary{"availability": Summarize([]float64{0.4, 0.41, 0.42}, 0.95)}
	high := map[string]Summary{"availability": Summarize([]float64{0.97, 0.98, 0.99}, 0.95)}
	if r := gs.Gates[0].Evaluate("Old", low); r.Pass || !r.AsExpected() || r.Verdict() != "fails, as expected" {
		t.Errorf("an expected failure that fails: %+v, verdict %q", r, r.Verdict())
	}
	if r := gs.Gates[0].Evaluate("Old", high); !r.Pass || r.AsExpected() || r.Verdict() != "UNEXPECTED PASS" {
		t.Errorf("an expected failure that passes: %+v, verdict %q", r, r.Verdict())
	}
	if r := gs.Gates[1].Evaluate("New", high); r.Line() != "pass (availability median = 0.98, want > 0.9)" {
		t.Errorf("line %q", r.Line())
	}
	for _, bad := range []string{"expect: maybe", "arms: [\"\"]"} {
		if _, err := ParseGates("b.yaml", []byte("name: b\ngates:\n  - metric: availability\n    op: \">\"\n    value: 1\n    "+bad+"\n")); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// A simulated report's methods say that the model does not reproduce the
// investigation, which build variant it uses, the fit's objectives and
// its worst residual.
func TestSimulatedMethodsNameTheMechanismAndTheBuildVariant(t *testing.T) {
	page, err := HTML(analyze(t, fixture(t)), "test")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"does <strong>not</strong> reproduce", "simShedHazard=" + investigation.Fitted.Variant, "spill I/O is conserved",
		"found no point that reproduces them", "its worst residual is " + investigation.Fitted.Worst} {
		if !strings.Contains(html, want) {
			t.Errorf("the methods lack %q", want)
		}
	}
}

// A report of the model quotes, beside each gate of the fix's acceptance,
// what the ensemble predicts of that condition in its words (predicted,
// uncertain, predicted not met, with the share of fits × seeds): F passing
// a gate on one setting and a few seeds is not a prediction.
func TestSimulatedGatesQuoteTheEnsemblesVerdict(t *testing.T) {
	a := analyze(t, fixture(t))
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	md := string(Markdown(a))
	for _, g := range SweeperAcceptance.Gates {
		words, ok := investigation.Ensemble.Words(g.Condition)
		if g.Condition == "" {
			if EnsemblePrediction(g) != "" {
				t.Errorf("gate %q (D's or E's) quotes a prediction", g.Name)
			}
			continue
		}
		if !ok || !strings.Contains(words, investigation.Verdict(investigation.Ensemble.Shares[g.Condition])) {
			t.Fatalf("gate %q: condition %q has no recorded share (%q)", g.Name, g.Condition, words)
		}
		if !strings.Contains(string(page), template.HTMLEscapeString(EnsemblePrediction(g))) {
			t.Errorf("the page's gate %q lacks %q", g.Name, EnsemblePrediction(g))
		}
		if !strings.Contains(md, g.Name+": "+words) {
			t.Errorf("the summary lacks %q", g.Name+": "+words)
		}
	}
	if !strings.Contains(md, "as the model's ensemble predicts it") {
		t.Errorf("the summary does not say the words are the ensemble's:\n%s", md)
	}
}
