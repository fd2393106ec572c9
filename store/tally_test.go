package store

import (
	"fmt"
	"testing"
)

// A manifest's tally counts its trials by how they ended, with the first
// ten invalid trials' reasons under their names; a trial that was never
// finished counts as neither.
func TestTallyCountsTrialsByHowTheyEnded(t *testing.T) {
	var m Manifest
	for i := 1; i <= 12; i++ {
		m.Trials = append(m.Trials, TrialStatus{Arm: "E", Index: i, Status: Invalid, Reason: fmt.Sprint("reason ", i)})
	}
	m.Trials = append(m.Trials, TrialStatus{Arm: "D", Index: 1, Status: Valid}, TrialStatus{Arm: "D", Index: 2, Status: Pending},
		TrialStatus{Arm: "D", Index: 3, Status: Interrupted}, TrialStatus{Arm: "D", Index: 4, Status: Invalid})
	got := m.Tally()
	if got.Trials != 16 || got.Finished != 14 || got.Invalid != 13 || len(got.Reasons) != 10 || got.Reasons[0] != "E#1: reason 1" || got.Reasons[9] != "E#10: reason 10" {
		t.Errorf("tally %+v; want 16 trials, 14 finished, 13 invalid, the first ten reasons by name", got)
	}
}

// A run's finished trial is found by its arm and index (report finds
// each listed trial's file so, without building a key of its own).
func TestRunTrialFindsATrialByArmAndIndex(t *testing.T) {
	r := &Run{Trials: map[string][]Trial{"D": {{Arm: "D", Index: 1}, {Arm: "D", Index: 3}}}}
	if tr, ok := r.Trial("D", 3); !ok || tr.Index != 3 {
		t.Errorf("D#3: %+v %v", tr, ok)
	}
	for _, missing := range []struct {
		arm   string
		index int
	}{{"D", 2}, {"E", 1}} {
		if tr, ok := r.Trial(missing.arm, missing.index); ok {
			t.Errorf("%s#%d found: %+v", missing.arm, missing.index, tr)
		}
	}
}
