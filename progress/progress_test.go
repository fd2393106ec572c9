package progress

import (
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest"
)

func TestLinesPrintStartsPhaseChangesAndFinishesOnly(t *testing.T) {
	var b stormtest.SyncBuffer
	s := Lines(&b)
	s.Update(Update{Arm: "D", Index: 1, Phase: "provisioning"})
	for i := range 5 { // five ticks in the same phase: one line
		s.Update(Update{Arm: "D", Index: 1, Phase: "warmup", Elapsed: time.Duration(i) * time.Second, Total: 240 * time.Second})
	}
	s.Update(Update{Arm: "D", Index: 1, Phase: "storm", Elapsed: 31 * time.Second, Total: 240 * time.Second,
		Availability: 0.987, HasAvailability: true, Failovers: 1, Virtual: true})
	s.Update(Update{Arm: "D", Index: 1, Status: "valid"})
	s.Close()
	want := "trial D#1: started (provisioning)\n" +
		"trial D#1: warmup 0/240s, failovers 0\n" +
		"trial D#1: storm 31/240 model-s, availability 0.987, failovers 1\n" +
		"trial D#1: valid\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A trial's last line is its final figures, not the last ones seen while
// it ran (availability 0.255 and 11 failovers mid-storm, 0.389 and 13
// in its table), and says why an invalid trial is.
func TestLinesEndEachTrialWithItsFinalFigures(t *testing.T) {
	var b stormtest.SyncBuffer
	s := Lines(&b)
	s.Update(Update{Arm: "E", Index: 1, Phase: "storm", Elapsed: 120 * time.Second, Total: 240 * time.Second,
		Availability: 0.255, HasAvailability: true, Failovers: 11, Virtual: true})
	s.Update(Update{Arm: "E", Index: 1, Status: "valid", Availability: 0.389, HasAvailability: true, Failovers: 13, HasFigures: true})
	s.Update(Update{Arm: "E", Index: 2, Phase: "storm"})
	s.Update(Update{Arm: "E", Index: 2, Status: "invalid", Reason: "model: out of memory", Failovers: 2, HasFigures: true})
	s.Close()
	want := "trial E#1: started (storm)\n" +
		"trial E#1: valid, availability 0.389, failovers 13\n" +
		"trial E#2: started (storm)\n" +
		"trial E#2: invalid, failovers 2; model: out of memory\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
