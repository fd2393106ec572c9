package run

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/store"
)

// runVirtualTrial runs an embedded arm's trial on the model in model time
// (the virtual engine) and writes the same files as a wall-clock trial.
func (x *execution) runVirtualTrial(ctx context.Context, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status store.Status, reason string) {
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	dir := store.TrialDir(x.dir, arm.Name, index)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return resultsDiskFailed(err)
	}
	w := *x.exp.workload.SpillToDisk
	vcfg := x.exp.virtualConfig(seed, x.exec.SampleInterval)
	vcfg.Progress = func(p virtual.Progress) {
		report(progress.Update{Phase: phaseAt(w.Phases, p.Elapsed), Elapsed: p.Elapsed, Total: w.Phases.Total(), Virtual: true,
			Failovers: p.Failovers, Availability: p.Availability, HasAvailability: p.HasAvailability})
	}
	t, err := virtual.Run(ctx, vcfg, arm)
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	if err != nil {
		return store.Invalid, "model: " + err.Error()
	}
	// The engine decided the instant model time 0 stands for (vcfg is
	// this function's copy of the config, not the engine's).
	start := t.Start
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: start, Simulated: true, Clock: store.ClockVirtual,
		Phases: map[store.Phase]float64{store.PhaseWarmup: 0, store.PhaseStorm: w.Phases.Warmup.Seconds(), store.PhaseRecovery: (w.Phases.Warmup + w.Phases.Storm).Seconds()}}
	trial.Metadata, _ = json.Marshal(map[string]any{"target": "embedded mongosim replica set, model run in virtual time (no wire)",
		"clock": store.ClockVirtual, "hardware": vcfg.Hardware, "seed": seed, "parameters": arm.SetParameters})
	return x.writeTrial(dir, trial, start, t.Records)
}

// virtualConfig is the virtual engine's setting for one trial of this
// experiment: the same machine, restart delay and sampling the embedded
// target's wall-clock members get.
func (e Experiment) virtualConfig(seed uint64, sampleInterval time.Duration) virtual.Config {
	return virtual.Config{Seed: seed, Workload: *e.workload.SpillToDisk, Hardware: e.sim.Hardware(e.simMemLimitMB),
		RestartDelay: e.sim.RestartDelay, SampleInterval: sampleInterval}
}
