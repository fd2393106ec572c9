package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/store"
)

// On the simulator F's outcome is the model's prediction: its gates are
// reported, marked as such, and decide the gate set only when asked
// (Options.GatePredictions). D's, the investigation's observation, are
// the model's account too while the model does not reproduce it
// (investigation.Fitted), and are reported the same way; a gate set of
// the user's on D decides.
func TestPredictionGatesAreReportedButDoNotDecideUnlessAsked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	// F's server sheds/s (≈ 50) stay below its admissions/s (≈ 160): the
	// "sheds outpace admissions" gate fails; D holds.
	synthRun(t, dir, []string{"D", "F"}, 2, 40*time.Second)
	in, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	gs := SweeperAcceptance
	a, err := Analyze(in, Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, g := range a.Arm("F").Gates {
		if g.Gate.Name == "sheds outpace admissions" {
			if !g.Prediction || !g.Informational || g.Pass {
				t.Fatalf("F's sheds gate: %+v; want a failing prediction, reported only", g)
			}
			line = g.Line()
		}
	}
	if !strings.HasPrefix(line, "FAIL (") || !strings.Contains(line, InformationalNote) {
		t.Errorf("F's gate line %q does not say it is a prediction that does not gate", line)
	}
	for _, g := range a.Arm("D").Gates {
		if g.NotApplicable {
			continue
		}
		if g.Prediction != !investigation.Fitted.Reproduced || g.Informational != !investigation.Fitted.Reproduced {
			t.Errorf("D's gate %q: prediction %v, informational %v; the model reproduces the investigation: %v", g.Gate.Name, g.Prediction, g.Informational, investigation.Fitted.Reproduced)
		}
	}
	mine := GateSet{Name: "mine", Gates: []Gate{{Name: "D up", Metric: "availability", Op: ">", Value: 2, Arms: []string{"D"}}}}
	if m, err := Analyze(in, Options{Gates: &mine}); err != nil || m.GatesPass() {
		t.Errorf("a user's gate on D that fails passed the set (%v)", err)
	}
	if !a.GatesPass() {
		t.Error("a failing prediction failed the gate set")
	}
	var sum struct {
		Arms []struct {
			Name  string `json:"name"`
			Gates []struct {
				Name          string `json:"name"`
				Prediction    bool   `json:"prediction"`
				Informational bool   `json:"informational"`
			} `json:"gates"`
		} `json:"arms"`
	}
	b, err := SummaryJSON(a, "test")
	if err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	for _, arm := range sum.Arms {
		for _, g := range arm.Gates {
			if !strings.HasPrefix(g.Name, arm.Name+" ") && arm.Name == "D" {
				continue // a gate of another arm (listed only where it applies)
			}
			want := arm.Name == "F" || !investigation.Fitted.Reproduced
			if g.Informational != want || g.Prediction != want {
				t.Errorf("summary.json: arm %s gate %q: prediction %v, informational %v", arm.Name, g.Name, g.Prediction, g.Informational)
			}
		}
	}
	if a, err = Analyze(in, Options{Gates: &gs, GatePredictions: true}); err != nil || a.GatesPass() {
		t.Errorf("with GatePredictions the failing prediction passed the set (%v)", err)
	}
}

// An arm with no valid trial measured nothing: its gates (no data) fail
// the set, saying why, where a single absent metric would not.
func TestAnArmThatMeasuredNothingFailsItsGates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	synthRun(t, dir, []string{"D", "E"}, 2, 40*time.Second)
	m, err := store.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Trials {
		if m.Trials[i].Arm == "D" {
			m.Trials[i].Status, m.Trials[i].Reason = store.Invalid, "host saturated"
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	gs := GateSet{Name: "d", Gates: []Gate{{Name: "D holds", Metric: "availability", Op: ">", Value: 0.9, Arms: []string{"D"}}}}
	a, err := Analyze(in, Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	if a.GatesPass() {
		t.Fatal("D has no valid trial, yet its gate passed the set")
	}
	if g := a.Arm("D").Gates[0]; !g.NoData || !strings.Contains(g.Reason, "no valid trial") {
		t.Errorf("D's gate: %+v; want no data naming the missing trials", g)
	}
}

// Runs that cannot be pooled say which key keeps them apart: the
// workload's ("storm_s 30 → 60"), or an arm's definition's.
func TestPoolingRefusalsNameTheDifferingKey(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	synthRun(t, a, []string{"D"}, 1, 40*time.Second)
	synthRun(t, b, []string{"D"}, 1, 80*time.Second)
	_, err := Load([]string{a, b})
	if err == nil || !strings.Contains(err.Error(), "phases.storm_s 30 → 60") || !strings.Contains(err.Error(), filepath.Join(b, store.ManifestFile)) {
		t.Errorf("two storms pooled: %v; want the differing key named", err)
	}
	synthRun(t, c, []string{"D"}, 1, 40*time.Second)
	withArms := func(dir, pct string) {
		m, err := store.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal("arms:\n  - name: D\n    build: x\n    actors:\n      - killop:\n          rssHighPercent: " + pct + "\n")
		m.Arms = doc
		if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
			t.Fatal(err)
		}
	}
	withArms(a, "70")
	withArms(c, "80")
	if _, err := Load([]string{a, c}); err == nil || !strings.Contains(err.Error(), "arm D is defined otherwise than in "+a+": actors[0].killop.rssHighPercent 70 → 80") {
		t.Errorf("two definitions of D pooled: %v", err)
	}
}
