package stormtest

import (
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// Only a trial the harness marked "host saturated" counts as starved:
// another invalid trial is the server's outcome, and a valid one whose
// reason mentions the host is not a verdict on it.
func TestStarvedNamesOnlyAHostSaturatedTrial(t *testing.T) {
	m := store.Manifest{Trials: []store.TrialStatus{
		{Arm: "D", Index: 1, Status: store.Valid, Reason: "host saturated earlier, recovered"},
		{Arm: "D", Index: 2, Status: store.Invalid, Reason: "server crashed"},
	}}
	if got := Starved(m); got != "" {
		t.Fatalf("Starved = %q for a run no trial of which the host starved", got)
	}
	m.Trials = append(m.Trials, store.TrialStatus{Arm: "E", Index: 3, Status: store.Invalid, Reason: "host saturated: 40 % of samples late"})
	if got, want := Starved(m), "E#3: host saturated: 40 % of samples late"; got != want {
		t.Fatalf("Starved = %q, want %q", got, want)
	}
}
