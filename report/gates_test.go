package report

import (
	"regexp"
	"strings"
	"testing"
)

// A gate line says what it compared: the statistic of the metric, its
// value, and what it was wanted to be (a number, or another metric's
// statistic); a gate without arms applies to every arm, one with arms to
// those only; summary.md names each failed gate with the same words.
func TestGateLinesSayWhatWasComparedAndApplyToTheirArms(t *testing.T) {
	gs, err := ParseGates("g.yaml", []byte(`name: mine
gates:
  - name: impossible
    metric: availability
    op: ">"
    value: 1.5
  - name: sheds beat admissions
    metric: server_sheds_per_s
    of: max
    op: ">"
    than: admissions_per_s
  - name: E only
    metric: failovers
    of: min
    op: ">="
    value: 0
    arms: [E]
`))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{fixture(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(in, Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	summary := string(Markdown(a))
	for _, arm := range a.Arms {
		if len(arm.Gates) != len(gs.Gates) {
			t.Fatalf("%s: %d gate results for %d gates", arm.Name, len(arm.Gates), len(gs.Gates))
		}
		impossible, than, eOnly := arm.Gates[0], arm.Gates[1], arm.Gates[2]
		if impossible.NotApplicable || than.NotApplicable {
			t.Errorf("%s: a gate without arms does not apply to it", arm.Name)
		}
		if eOnly.NotApplicable != (arm.Name != "E") {
			t.Errorf("%s: the gate of arm E applies: %v", arm.Name, !eOnly.NotApplicable)
		}
		avail := arm.Metrics["availability"].Median
		want := "FAIL (availability median = " + Number(avail) + ", want > " + Number(1.5) + ")"
		if impossible.Line() != want {
			t.Errorf("%s: %q, want %q", arm.Name, impossible.Line(), want)
		}
		if !strings.Contains(summary, md("impossible: "+want)) {
			t.Errorf("summary.md does not say what %s's failed gate compared (%q):\n%s", arm.Name, want, summary)
		}
		if s, ok := arm.Metrics["server_sheds_per_s"]; ok && s.N > 0 {
			want := "server_sheds_per_s max = " + Number(s.Max) + ", want > admissions_per_s max = " + Number(arm.Metrics["admissions_per_s"].Max)
			if than.Detail() != want {
				t.Errorf("%s: %q, want %q", arm.Name, than.Detail(), want)
			}
		}
	}
	// D is counted over the two gates without arms, E over all three.
	if !regexp.MustCompile(`\*\* D \d/2 .*; E \d/3 `).MatchString(summary) {
		t.Errorf("summary.md counts the arms' gates wrongly:\n%s", summary)
	}
	// An arm none of whose gates the set has is not listed with 0/0.
	eOnly := GateSet{Name: "e-only", Gates: gs.Gates[2:]}
	a, err = Analyze(in, Options{Gates: &eOnly})
	if err != nil {
		t.Fatal(err)
	}
	if summary := string(Markdown(a)); !strings.Contains(summary, "**Gates (e-only):** E 1/1;") {
		t.Errorf("summary.md lists arms the set has no gate for:\n%s", summary)
	}
}
