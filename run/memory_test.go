package run

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/workload"
)

// TestValidateChecksTrialMemoryAfterTheProfile checks that a workload
// whose virtual trial fits its budget as given is refused before any trial
// starts when the profile lengthens it past the budget, with the figure,
// the budget and the parallelism in the error.
func TestValidateChecksTrialMemoryAfterTheProfile(t *testing.T) {
	w := workload.DefaultSpillToDisk()
	w.CanaryRate = workload.MaxCanaryRate
	w.Phases = workload.Phases{Warmup: 20 * time.Minute, Storm: 10 * time.Minute, Recovery: 10 * time.Minute}
	spec := workload.Spec{Name: "many-canaries", Kind: workload.KindSpillToDisk, SpillToDisk: &w}
	if err := spec.Validate(); err != nil {
		t.Fatalf("the workload as given: %v", err)
	}
	e, _ := arms.Lookup("E")
	cfg := Config{Arms: []arms.Arm{e}, N: 1, Workload: spec, Parallel: 2}
	for _, profile := range []string{"", "quick", "default"} {
		cfg.Profile = profile
		if err := cfg.Validate(); err != nil {
			t.Errorf("--profile %q: %v", profile, err)
		}
	}
	cfg.Profile = "long"
	err := cfg.Validate()
	for _, want := range []string{"Config.Workload many-canaries with Config.Profile long", "canaryRate 1000", "needs ~1.78 GiB a virtual trial", "the budget is 1 GiB × 2 trials at once"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--profile long: error %v, want it to contain %q", err, want)
		}
	}
}
