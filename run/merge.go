package run

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
	"github.com/qmlsab/qmlsab/workload"
)

// runMergeTrial runs merge_partial_write (the partial-write investigation) on a freshly
// provisioned target. It always crosses the wire, even on the embedded
// target: the hole it measures is a secondary forwarding its $merge
// writes to the primary. On a sharded cluster it runs the sharded cases
// through the routers (workload.MergeDriver.ShardOf).
func (x *execution) runMergeTrial(ctx context.Context, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status store.Status, reason string) {
	dir, dep, status, reason := x.provision(ctx, arm, index)
	if dep == nil {
		return status, reason
	}
	defer closeTrial(dep, &status, &reason)
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	sampler := &collect.Sampler{Members: dep.Members(), Interval: x.exec.SampleInterval, Guard: x.guard()}
	d := &workload.MergeDriver{Spec: *x.exp.workload.Merge, URI: dep.URI(), Members: dep.Members(), Guard: x.guard()}
	meta := map[string]any{}
	if sh := target.ShardingOf(dep); sh != nil {
		// The sharded cases: every shard's members and the routers are
		// sampled, each sample labelled with its shard.
		sampler.ShardOf, sampler.Routers = sh.ShardOf(), sh.Routers()
		d.ShardOf = sh.ShardOf()
		meta["topology"], meta["shards"], meta["routers"] = arms.TopologySharded, sh.ShardOf(), sh.Routers()
	}
	var bg sync.WaitGroup
	bg.Go(func() { sampler.Run(tctx) })
	// The arm's killOp actor runs beside the cases (one per shard on a
	// sharded cluster), as it does beside the storm.
	var kmu sync.Mutex
	var kills []store.Kill
	if k := arm.KillOp(); k != nil {
		if _, err := startKillOp(tctx, &bg, dep, x.guard(), *k, x.exec.Log, func(e store.Kill) { kmu.Lock(); kills = append(kills, e); kmu.Unlock() }, nil); err != nil {
			return store.Invalid, err.Error()
		}
	}
	start := time.Now()
	report(progress.Update{Phase: store.PhaseMergeOps})
	res, err := d.Run(tctx)
	stop()
	bg.Wait()
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	if err != nil {
		return store.Invalid, "workload: " + err.Error()
	}
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: start, Simulated: dep.Simulated(), Clock: store.ClockWall}
	for k, v := range map[string]any{"target": dep.Describe(), "members": dep.Startup(), "capabilities": dep.Capabilities(), "seed": seed, "clock": store.ClockWall,
		"forced": res.Forced, "forced_note": res.ForcedNote} {
		meta[k] = v
	}
	trial.Metadata, _ = json.Marshal(meta)
	return x.writeTrial(dir, trial, start, store.Records{Samples: sampler.Samples(), Merge: &res, Kills: kills, KillOpActor: arm.KillOp() != nil})
}
