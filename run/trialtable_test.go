package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// The trial table names each trial as the progress lines do (E#1) with
// its status, writes a lower bound as "≥", and a value a trial lacks as
// "–" with a numbered note saying why (one note per reason), never 0;
// a wide-only column's note appears only in the wide table.
func TestTrialTableMarksBoundsAndAbsentValues(t *testing.T) {
	r := &store.Run{Manifest: store.Manifest{Simulated: true, Clock: store.ClockVirtual,
		ArmList: []store.ArmInfo{{Name: "E"}},
		Trials:  []store.TrialStatus{{Arm: "E", Index: 1, Status: store.Valid}, {Arm: "E", Index: 2, Status: store.Invalid}}},
		Trials: map[string][]store.Trial{"E": {
			{Arm: "E", Index: 1, Metrics: map[string]float64{metric.Availability: 0.5, metric.CanaryP99Ms: 900}, AtLeast: map[string]float64{metric.CanaryP99Ms: 1000},
				Absent: map[string]string{metric.Failovers: "no replSetGetStatus", metric.Restarts: "no replSetGetStatus"}},
			{Arm: "E", Index: 2, Metrics: map[string]float64{metric.Availability: 0.25}, Absent: map[string]string{metric.Failovers: "no replSetGetStatus"}},
		}}}
	var b bytes.Buffer
	if err := WriteTrialTable(&b, r, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"SIMULATED", "model seconds", "E#1", "valid", "E#2", "invalid", "0.500", "≥1000", "–[1]", "[1] absent: no replSetGetStatus"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[2]") || strings.Contains(out, "restarts") {
		t.Errorf("the default table notes a wide-only column:\n%s", out)
	}
	b.Reset()
	if err := WriteTrialTable(&b, r, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "restarts") || strings.Count(b.String(), "absent: no replSetGetStatus") != 1 {
		t.Errorf("the wide table: want the restarts column and one note for one reason:\n%s", b.String())
	}
}
