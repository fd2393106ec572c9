package run

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// runMergeTrial runs merge_partial_write (seed 003) on a freshly
// provisioned target. It always crosses the wire, even on the embedded
// target: the hole it measures is a secondary forwarding its $merge
// writes to the primary.
func runMergeTrial(ctx context.Context, cfg Config, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status, reason string) {
	dir, dep, status, reason := provision(ctx, cfg, arm, index)
	if dep == nil {
		return status, reason
	}
	defer dep.Close(context.Background())
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	sampler := &collect.Sampler{Members: dep.Members(), Interval: cfg.SampleInterval}
	done := make(chan struct{})
	go func() { sampler.Run(tctx); close(done) }()
	start := time.Now()
	report(progress.Update{Phase: "merge ops"})
	d := &workload.MergeDriver{Spec: *cfg.Workload.Merge, URI: dep.URI(), Members: dep.Members()}
	res, err := d.Run(tctx)
	stop()
	<-done
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	if err != nil {
		return store.Invalid, "workload: " + err.Error()
	}
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: start, Simulated: dep.Simulated(), Clock: Wall,
		Metrics: SummarizeMerge(res, sampler.Samples())}
	trial.Metadata, _ = json.Marshal(map[string]any{"target": dep.Describe(), "members": dep.Startup(), "seed": seed, "clock": Wall,
		"forced": res.Forced, "forcedNote": res.ForcedNote})
	for _, w := range []func() error{
		func() error { return store.WriteJSONLinesGz(filepath.Join(dir, "samples.jsonl.gz"), sampler.Samples()) },
		func() error { return store.WriteJSONLinesGz(filepath.Join(dir, "merge.jsonl.gz"), res.Ops) },
		func() error { return store.WriteJSON(filepath.Join(dir, "trial.json"), trial) },
	} {
		if err := w(); err != nil {
			return store.Invalid, "writing results: " + err.Error()
		}
	}
	return store.Valid, ""
}

// SummarizeMerge is a merge trial's metrics: unsafe_sheds (DESIGN.md), and
// the ops' outcomes by read preference.
func SummarizeMerge(res workload.MergeRun, samples []collect.Sample) map[string]float64 {
	m := map[string]float64{"unsafe_sheds": float64(res.UnsafeSheds()), "merge_ops": float64(len(res.Ops))}
	for _, o := range res.Ops {
		m["merge_"+string(o.Outcome)]++
		if o.Unsafe {
			m["unsafe_sheds_"+o.ReadPreference]++
		}
	}
	for _, k := range []string{"merge_completed", "merge_shed", "merge_killed", "merge_failed", "unsafe_sheds_primary", "unsafe_sheds_secondary"} {
		m[k] += 0 // present as zero: these are counts, not missing measurements
	}
	m["failovers"] = float64(collect.PrimaryChanges(samples))
	m["restarts"] = float64(collect.Restarts(samples))
	return m
}
