package run

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// TestNewExperimentChecksTrialMemoryAfterTheProfile checks that a
// workload whose virtual trial fits its budget as given is refused before
// any trial starts when the profile lengthens it past the budget, with
// the figure and the budget in the error.
func TestNewExperimentChecksTrialMemoryAfterTheProfile(t *testing.T) {
	w := workload.DefaultSpillToDisk()
	w.CanaryRate = workload.MaxCanaryRate
	w.Phases = workload.Phases{Warmup: 20 * time.Minute, Storm: 10 * time.Minute, Recovery: 10 * time.Minute}
	spec := workload.Spec{Name: "many-canaries", Kind: workload.KindSpillToDisk, SpillToDisk: &w}
	if err := spec.Validate(); err != nil {
		t.Fatalf("the workload as given: %v", err)
	}
	e, _ := arms.Lookup("E")
	s := Spec{Arms: []arms.Arm{e}, N: 1, Workload: spec}
	for _, profile := range []string{"", "quick", "default"} {
		s.Profile = profile
		if _, err := NewExperiment(s); err != nil {
			t.Errorf("profile %q: %v", profile, err)
		}
	}
	s.Profile = "long"
	_, err := NewExperiment(s)
	for _, want := range []string{FieldWorkload + " many-canaries with " + FieldProfile + " long", "canaryRate 1000", "needs ~1.78 GiB a virtual trial", "the budget is 1 GiB a trial"} {
		if !isField(err, FieldWorkload) || !strings.Contains(err.Error(), want) {
			t.Errorf("profile long: error %v, want it to contain %q", err, want)
		}
	}
	// The wall clock runs no trial in this process's memory.
	s.Clock = store.ClockWall
	if _, err := NewExperiment(s); err != nil {
		t.Errorf("profile long on the wall clock: %v", err)
	}
}
