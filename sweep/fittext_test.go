package sweep

import (
	"bytes"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms/killop"
)

// A fit that misses an observation and fails D over prints a verdict
// that names exactly what it misses, and the caller's lines where it put
// them.
func TestWriteFitVerdictNamesEachMiss(t *testing.T) {
	n := len(Observations)
	res := make([]float64, n)
	missed := Observations[1]
	res[1] = missed.Tol * 3 // outside its tolerance; the others are exact
	best := Point{Sim: make([]float64, n), Res: res, Failovers: 2, Objective: 9}
	r := &FitResult{Start: "grid", Best: best, Points: []Point{best}}
	var out bytes.Buffer
	WriteFit(&out, FitConfig{FitSeeds: 1, PredictSeeds: 1}, r, FitReport{Title: "TITLE LINE", Profile: "quick", Next: "NEXT LINE"})
	text := out.String()
	if !strings.HasPrefix(text, "TITLE LINE\n") {
		t.Errorf("the caller's title is not the first line:\n%s", text)
	}
	if !strings.Contains(text, "Verdict: no point of the plausible space") {
		t.Errorf("a fit that misses is not said to miss:\n%s", text)
	}
	if !strings.Contains(text, "  - "+missed.Name+":") {
		t.Errorf("the missed observation %q is not listed:\n%s", missed.Name, text)
	}
	for i, o := range Observations {
		if i != 1 && strings.Contains(text, "  - "+o.Name+":") {
			t.Errorf("observation %q is within tolerance but listed as missed", o.Name)
		}
	}
	if !strings.Contains(text, "D failed over (2)") {
		t.Errorf("D's failovers are not named as a miss:\n%s", text)
	}
	if i, j := strings.Index(text, "NEXT LINE"), strings.Index(text, "Verdict:"); i < 0 || i > j {
		t.Errorf("the caller's next line is missing or after the verdict (at %d, verdict at %d)", i, j)
	}
	var quiet bytes.Buffer
	WriteFit(&quiet, FitConfig{FitSeeds: 1, PredictSeeds: 1}, r, FitReport{Title: "T"})
	if strings.Contains(quiet.String(), "\n\n\n") {
		t.Errorf("an empty Next leaves a gap:\n%s", quiet.String())
	}
}

// The fitted settings are what ParseSet takes back: integers and bytes
// rounded, the host model's background ratio held at half the dirty one.
func TestFittedSettingsParseBack(t *testing.T) {
	space := []Dim{{Knob: mustKnob("param.throughputProbingMinConcurrency")}, {Knob: mustKnob("host.dirtyRatio")}, {Knob: mustKnob("killop.policy")}}
	r := &FitResult{Space: space, Best: Point{Values: []Value{Num(6.6), Num(20), Str(killop.PolicyLargestFirst)}}}
	got := r.FittedSettings()
	want := []string{"param.throughputProbingMinConcurrency=7", "host.dirtyRatio=20", "host.dirtyBackgroundRatio=10", "killop.policy=" + killop.PolicyLargestFirst}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("FittedSettings = %q, want %q", got, want)
	}
	for _, s := range got {
		if _, err := ParseSet(s); err != nil {
			t.Errorf("ParseSet(%q): %v", s, err)
		}
	}
}
