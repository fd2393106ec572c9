package run

import (
	"fmt"
	"strings"

	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Start is what a run is about to do, as Exec.Starting hears it.
type Start struct {
	Experiment Experiment
	Dir        string
	// Resumed says the run completes one begun before.
	Resumed bool
	// Shard is the part of the plan the folder holds (zero: all of it).
	Shard plan.Shard
	// Trials are the folder's trials; Left, those still to run.
	Trials, Left int
}

// Summary says what the run will do, in a line: the workload, the arms,
// the trials, each trial's length, and of a new run its seed and folder,
// of a resumed one its clock, profile and what is left.
func (s Start) Summary() string {
	e := s.Experiment
	length := TrialLength(e.workload, e.clock == store.ClockVirtual)
	if s.Resumed {
		var names []string
		for _, a := range e.arms {
			names = append(names, a.Name)
		}
		profile := ""
		if e.profile != "" {
			profile = ", profile " + e.profile
		}
		return fmt.Sprintf("%s, %s (%s) × %s, %s, %s clock%s; %d of %s left",
			e.workload.Name, texttable.Count(len(e.arms), "arm"), strings.Join(names, ","), texttable.Count(e.n, "trial"), length, e.clock, profile,
			s.Left, texttable.Count(s.Trials, "trial"))
	}
	part := ""
	if s.Shard.Count > 0 {
		var blocks []string
		for _, k := range s.Shard.Units(e.n) {
			blocks = append(blocks, fmt.Sprint(k+1))
		}
		part = fmt.Sprintf(", shard %s (repetition blocks %s)", s.Shard, strings.Join(blocks, ", "))
	}
	return fmt.Sprintf("%s, %s × %s%s, %s, seed %d", e.workload.Name, texttable.Count(len(e.arms), "arm"), texttable.Count(e.n, "trial"), part, length, e.seed)
}

// TrialLength is how long each trial of workload w runs, as people write
// a duration ("4m per trial"), in model time when the run is on the
// virtual clock.
func TrialLength(w workload.Spec, modelTime bool) string {
	d := w.Duration()
	switch {
	case d <= 0:
		return "a fixed number of ops per trial"
	case modelTime:
		return units.FormatDuration(d) + " of model time per trial"
	}
	return units.FormatDuration(d) + " per trial"
}
