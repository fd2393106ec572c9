package run

import (
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// What a run says before its first trial, from the experiment it runs: a
// new run its workload, arms × trials (a shard's blocks), the trial's
// length in model time on the virtual clock and its seed; a resumed run
// its own conditions (clock, profile) and what is left — never the
// defaults of the command line that resumes it.
func TestStartSummarySaysWhatTheRunWillDo(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	e := trialRun{Spec: Spec{Arms: planArms(t, "D", "E"), N: 3, Workload: spec, Profile: "quick", Seed: 9}}.experiment(t)
	if got, want := (Start{Experiment: e, Trials: 6, Left: 6}).Summary(), "spill_to_disk, 2 arms × 3 trials, 24s of model time per trial, seed 9"; got != want {
		t.Errorf("a new run's summary\n%q\nwant\n%q", got, want)
	}
	shard := Start{Experiment: e, Shard: plan.Shard{Index: 1, Count: 2}, Trials: 4, Left: 4}
	if got, want := shard.Summary(), "spill_to_disk, 2 arms × 3 trials, shard 1/2 (repetition blocks 1, 3), 24s of model time per trial, seed 9"; got != want {
		t.Errorf("a shard's summary\n%q\nwant\n%q", got, want)
	}
	wall := trialRun{Spec: Spec{Arms: planArms(t, "D"), N: 1, Workload: spec, Clock: store.ClockWall, Seed: 9}}.experiment(t)
	resumed := Start{Experiment: wall, Resumed: true, Trials: 1, Left: 0}
	if got, want := resumed.Summary(), "spill_to_disk, 1 arm (D) × 1 trial, 4m per trial, wall clock, profile default; 0 of 1 trial left"; got != want {
		t.Errorf("a resumed run's summary\n%q\nwant\n%q", got, want)
	}
}

// A run whose every finished trial is invalid measured nothing: the
// verdict is an error listing the reasons; one valid trial, or none
// finished, is no such verdict.
func TestOutcomeOfARunThatMeasuredNothing(t *testing.T) {
	outcome := func(statuses ...store.Status) *Outcome {
		m := store.Manifest{}
		for i, s := range statuses {
			m.Trials = append(m.Trials, store.TrialStatus{Arm: "D", Index: i + 1, Status: s, Reason: "why " + string(s)})
		}
		return &Outcome{Run: &store.Run{Manifest: m}}
	}
	if err := outcome(store.Invalid, store.Invalid, store.Pending).MeasuredNothing(); err == nil ||
		!strings.Contains(err.Error(), "measured nothing") || !strings.Contains(err.Error(), "D#1: why invalid") || !strings.Contains(err.Error(), "D#2: why invalid") {
		t.Errorf("every finished trial invalid: %v; want the verdict with each trial's reason", err)
	}
	for _, o := range []*Outcome{outcome(store.Invalid, store.Valid), outcome(store.Pending, store.Interrupted), outcome()} {
		if err := o.MeasuredNothing(); err != nil {
			t.Errorf("%+v: %v; a valid trial, or none finished, is no such verdict", o.Run.Manifest.Trials, err)
		}
	}
}
