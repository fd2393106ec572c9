package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/metric"
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
		want := "FAIL (availability median = " + metric.Number(avail) + ", want > " + metric.Number(1.5) + ")"
		if impossible.Line() != want {
			t.Errorf("%s: %q, want %q", arm.Name, impossible.Line(), want)
		}
		if !strings.Contains(summary, md("impossible: "+want)) {
			t.Errorf("summary.md does not say what %s's failed gate compared (%q):\n%s", arm.Name, want, summary)
		}
		if s, ok := arm.Metrics["server_sheds_per_s"]; ok && s.N > 0 {
			want := "server_sheds_per_s max = " + metric.Number(s.Max) + ", want > admissions_per_s max = " + metric.Number(arm.Metrics["admissions_per_s"].Max)
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

// A gate file that could only ever say "no data" or ignore what it says
// is refused at the line that says it: a metric or than the registry does
// not know (a misspelling passed the set with exit 0), value together with
// than (value was ignored), and a second YAML document. An arm the run
// does not have is refused when the gates meet the run, naming the line of
// the arms list and the run's arms; "*" and the built-in set, whose arms
// are the investigation's, are not checked.
func TestGateFilesRefuseWhatWouldEvaluateNothing(t *testing.T) {
	for doc, want := range map[string]string{
		"name: x\ngates:\n  - op: \">\"\n    metric: nope\n    value: 1\n":                                                 "g.yaml:4: metric \"nope\" is not a metric qmlsab computes (known: availability, ",
		"name: x\ngates:\n  - metric: server_sheds_per_s\n    op: \">\"\n    than: nope\n":                                 "g.yaml:5: than \"nope\" is not a metric",
		"name: x\ngates:\n  - metric: server_sheds_per_s\n    op: \">\"\n    than: admissions_per_s\n    value: 3\n":       "g.yaml:6: value and than",
		"name: x\ngates:\n  - metric: server_sheds_per_s\n    op: \">\"\n    value: 0\n    than: admissions_per_s\n":       "g.yaml:5: value and than",
		"c: &c {value: 2}\nname: x\ngates:\n  - {<<: *c, metric: server_sheds_per_s, op: \">\", than: admissions_per_s}\n": "g.yaml:1: value and than", // where the merged value is written
		"name: x\ngates:\n  - {metric: availability, op: \">\", value: 0.9}\n---\nname: y\n":                               "g.yaml:4: a second YAML document",
		// Already refused: the finite-value check holds for NaN and ±Inf.
		"name: x\ngates:\n  - {metric: availability, op: \">\", value: .nan}\n":  "g.yaml:3: value must be a finite number",
		"name: x\ngates:\n  - {metric: availability, op: \">\", value: .inf}\n":  "g.yaml:3: value must be a finite number",
		"name: x\ngates:\n  - {metric: availability, op: \">\", value: -.Inf}\n": "g.yaml:3: value must be a finite number",
	} {
		if gs, err := ParseGates("g.yaml", []byte(doc)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v (%+v), want %s…", doc, err, gs, want)
		}
	}

	in, err := Load([]string{fixture(t)})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := ParseGates("g.yaml", []byte("name: x\ngates:\n  - {metric: availability, op: \">\", value: 0.9, arms: [D]}\n  - name: typo\n    metric: availability\n    op: \">\"\n    value: 0.9\n    arms: [E, Z]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Analyze(in, Options{Gates: &stale})
	if want := `g.yaml:8: gate "typo": arms: "Z" is not an arm of this run (its arms: ` + strings.Join(in.Arms, ", ") + ")"; err == nil || err.Error() != want {
		t.Errorf("a gate naming arm Z: %v, want %s", err, want)
	}
	than, err := ParseGates("g.yaml", []byte("name: x\ngates:\n  - {metric: server_sheds_per_s, op: \">\", than: admissions_per_s}\n"))
	if err != nil || than.Gates[0].Name != "server_sheds_per_s > admissions_per_s" {
		t.Errorf("a gate with than is named after what it compares: %v %+v", err, than)
	}
	star, err := ParseGates("g.yaml", []byte("name: x\ngates:\n  - {metric: availability, op: \">\", value: 0.9, arms: [D, \"*\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(in, Options{Gates: &star}); err != nil {
		t.Errorf("arms D and *: %v", err)
	}
	builtin := SweeperAcceptance // names F, which the fixture does not have
	if _, err := Analyze(in, Options{Gates: &builtin}); err != nil {
		t.Errorf("the built-in set on a run of some of its arms: %v", err)
	}
}
