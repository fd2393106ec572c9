package report

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/workload"
)

// runArms runs the given arms (n trials each, the embedded default, the
// default profile) and analyzes them against sweeper-acceptance.
func runArms(t *testing.T, list []arms.Arm, n int) *Analysis {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	if _, err := run.Execute(context.Background(), run.Config{Arms: list, N: n, Workload: spec, Dir: dir, Seed: 1, Clock: run.Virtual,
		Sim: mongosim.SimOptions{CPUs: 8, BaselineMB: 6 << 10}, SimMemLimitMB: 32 << 10, ToolVersion: "test"}); err != nil {
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

// sweeper-acceptance is the investigation as a regression test: on a D,E
// run of the embedded default D holds and E falls, so the set passes; an E
// given master's formula stops falling and a D without its actor stops
// holding, and each fails the set.
func TestSweeperAcceptanceExpectsDToHoldAndEToFall(t *testing.T) {
	if testing.Short() {
		t.Skip("three virtual runs")
	}
	const n = 3
	d, e := builtinArm(t, "D"), builtinArm(t, "E")
	a := runArms(t, []arms.Arm{d, e}, n)
	if !a.GatesPass() {
		t.Fatalf("D,E at the embedded default: gates failed: %v", failedGates(a))
	}
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

	master := e
	master.SetParameters["simShedHazard"] = "odds"
	if b := runArms(t, []arms.Arm{d, master}, n); b.GatesPass() {
		t.Error("E on master's formula holds, yet the gate set passed: an E that stops falling must fail it")
	} else if f := failedGates(b); len(f) == 0 || !strings.HasPrefix(f[0], "E: E falls") {
		t.Errorf("failed gates %v, want E's falls gates", f)
	}

	noActor := d
	noActor.Actors = nil
	if c := runArms(t, []arms.Arm{noActor, e}, n); c.GatesPass() {
		t.Error("D without its actor passed the gate set")
	} else if f := failedGates(c); len(f) == 0 || !strings.HasPrefix(f[0], "D: D holds") {
		t.Errorf("failed gates %v, want D's holds gates", f)
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

// A simulated report's methods say what makes E fall, which build variant
// the model uses and where it came from, and the fit's worst residual.
func TestSimulatedMethodsNameTheMechanismAndTheBuildVariant(t *testing.T) {
	page, err := HTML(analyze(t, fixture(t)), "test")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"no exit but a ticket", "simShedHazard=linear", "observed flows", "not read from E",
		"worst residual at the fitted point is D low-pri queue kills/s"} {
		if !strings.Contains(html, want) {
			t.Errorf("the methods lack %q", want)
		}
	}
}
