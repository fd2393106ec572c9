package progress

import (
	"strings"
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
		"trial D#1: valid \n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTerminalRedrawsInPlace(t *testing.T) {
	var b stormtest.SyncBuffer
	s := Terminal(&b, 10*time.Millisecond)
	s.Update(Update{Arm: "D", Index: 1, Phase: "storm", Elapsed: 120 * time.Second, Total: 240 * time.Second})
	s.Update(Update{Arm: "E", Index: 1, Phase: "warmup", Elapsed: 0, Total: 240 * time.Second})
	time.Sleep(50 * time.Millisecond)
	s.Update(Update{Arm: "D", Index: 1, Status: "valid"})
	s.Close()
	out := b.String()
	if !strings.Contains(out, "\x1b[2A") {
		t.Errorf("no cursor-up over the two trial lines: %q", out)
	}
	if !strings.Contains(out, "[##########..........] storm 120/240s") {
		t.Errorf("no half-full bar for D#1: %q", out)
	}
	last := out[strings.LastIndex(out, "\x1b[2A"):]
	if !strings.Contains(last, "D#1    valid") || !strings.Contains(last, "E#1") {
		t.Errorf("final frame lacks the finished state: %q", last)
	}
}
