package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/calibrate"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Clocks an embedded trial can run on.
const (
	// Virtual runs the embedded set's model in model time, without the
	// wire: four minutes of storm take about a second, so n=5 per arm is
	// a matter of seconds on a laptop. Members are sampled through the
	// same serverStatus document and extractor table as over the wire.
	Virtual = "virtual"
	// Wall runs the embedded set in real time behind the wire protocol:
	// every storm query, canary, sample and killOp is a real command.
	Wall = "wall"
)

// virtualTrial records one trial run in model time. Model times become
// wall-clock-shaped timestamps from base, so every later step (Summarize,
// the report) reads a virtual trial exactly as a wall-clock one.
type virtualTrial struct {
	base    time.Time
	slo     time.Duration
	samples []collect.Sample
	res     workload.Results
	kills   []actor.KillEvent
	err     error

	phases     workload.Phases
	report     func(progress.Update)
	lastReport time.Duration
	canariesOK int
}

func (v *virtualTrial) at(d time.Duration) time.Time { return v.base.Add(d) }

func (v *virtualTrial) Member(at time.Duration, member int, n *model.Node, primary bool, process uint64, uptime time.Duration) {
	smp := collect.Sample{At: v.at(at), Member: fmt.Sprintf("member%d", member)}
	if n != nil {
		raw, err := bson.Marshal(mongosim.ModelStatus(n, uptime))
		if err != nil {
			v.err = err
			return
		}
		smp.Up, smp.Primary, smp.ProcessID = true, primary, fmt.Sprintf("process%d", process)
		smp.Values = collect.Extract(raw)
		var ops []collect.CensusOp
		n.Ops(func(op *model.Op) {
			ops = append(ops, collect.CensusOp{Queued: op.Queued(), TrackedBytes: op.Tracked(), Stage: op.Work.Stage})
		})
		collect.AddCensus(smp.Values, ops)
	}
	v.samples = append(v.samples, smp)
	if member == 0 && at-v.lastReport >= 10*time.Second {
		v.lastReport = at
		u := progress.Update{Phase: phaseAt(v.phases, at), Elapsed: at, Total: v.phases.Total(), Virtual: true,
			Failovers: collect.PrimaryChanges(v.samples)}
		if n := len(v.res.Canaries); n > 0 {
			u.Availability, u.HasAvailability = float64(v.canariesOK)/float64(n), true
		}
		v.report(u)
	}
}

func (v *virtualTrial) Storm(r calibrate.OpRecord) {
	v.res.Storm = append(v.res.Storm, workload.StormResult{Scheduled: v.at(r.Scheduled), Latency: r.Latency, Stage: r.Stage,
		Outcome: workload.ClassifyCode(r.CodeName), Code: r.CodeName, TrackedBytes: r.TrackedBytes})
}

func (v *virtualTrial) Canary(r calibrate.OpRecord) {
	ok := r.CodeName == "" && r.Latency <= v.slo
	if ok {
		v.canariesOK++
	}
	v.res.Canaries = append(v.res.Canaries, workload.CanaryResult{Scheduled: v.at(r.Scheduled), Latency: r.Latency, Write: r.Write,
		OK: ok, Code: r.CodeName})
}

func (v *virtualTrial) Kill(at time.Duration, k killop.Op, rss int64) {
	v.kills = append(v.kills, actor.KillEvent{At: v.at(at), OpID: k.ID, AppName: k.AppName, TrackedBytes: k.TrackedBytes,
		Queued: k.Queued, Stage: k.Stage, ResidentMB: rss >> 20})
}

// runVirtualTrial runs an embedded arm's trial on the model in model time
// and writes the same files as a wall-clock trial.
func runVirtualTrial(ctx context.Context, cfg Config, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status, reason string) {
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	dir := store.TrialDir(cfg.Dir, arm.Name, index)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return store.Invalid, err.Error()
	}
	w := *cfg.Workload.SpillToDisk
	v := &virtualTrial{base: time.Now().UTC().Truncate(time.Millisecond), slo: w.CanarySLO, phases: w.Phases, report: report}
	v.res.PhaseStarts = map[string]time.Time{"warmup": v.base, "storm": v.at(w.Phases.Warmup), "recovery": v.at(w.Phases.Warmup + w.Phases.Storm)}
	hw := cfg.Sim.Hardware(cfg.SimMemLimitMB)
	restart := cfg.Sim.RestartDelay
	if restart <= 0 {
		restart = 5 * time.Second // mongosim.ReplicaSetOptions' default
	}
	ccfg := calibrate.Config{Seed: seed, Workload: w, Hardware: hw, ElectionTimeout: 10 * time.Second, RestartDelay: restart,
		Observer: v, SampleInterval: cfg.SampleInterval}
	if _, err := calibrate.Run(ccfg, arm); err != nil {
		return store.Invalid, "model: " + err.Error()
	}
	if v.err != nil {
		return store.Invalid, "model: " + v.err.Error()
	}
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: v.base, Simulated: true, Clock: Virtual,
		Phases:  map[string]float64{"warmup": 0, "storm": w.Phases.Warmup.Seconds(), "recovery": (w.Phases.Warmup + w.Phases.Storm).Seconds()},
		Metrics: Summarize(v.res, v.samples, v.kills)}
	trial.Metadata, _ = json.Marshal(map[string]any{"target": "embedded mongosim replica set, model run in virtual time (no wire)",
		"clock": Virtual, "hardware": hw, "seed": seed, "parameters": arm.SetParameters})
	return writeTrial(dir, trial, v.base, v.samples, v.res, v.kills)
}

// writeTrial writes a finished trial's files, trial.json last: a trial
// folder without trial.json is unfinished.
func writeTrial(dir string, trial store.Trial, start time.Time, samples []collect.Sample, res workload.Results, kills []actor.KillEvent, extra ...Event) (status, reason string) {
	trial.Victims = victimSummary(res, kills)
	for _, w := range []func() error{
		func() error { return store.WriteJSONLinesGz(filepath.Join(dir, "samples.jsonl.gz"), samples) },
		func() error {
			return store.WriteJSONLinesGz(filepath.Join(dir, "series.jsonl.gz"), collect.PerSecond(samples, start))
		},
		func() error { return store.WriteJSONLinesGz(filepath.Join(dir, "storm.jsonl.gz"), res.Storm) },
		func() error { return store.WriteJSONLinesGz(filepath.Join(dir, "canaries.jsonl.gz"), res.Canaries) },
		func() error {
			return store.WriteJSONLinesGz(filepath.Join(dir, "outcomes.jsonl.gz"), perSecond(start, res))
		},
		func() error {
			return store.WriteJSONLinesGz(filepath.Join(dir, "events.jsonl.gz"), trialEvents(res.PhaseStarts, samples, kills, extra...))
		},
		func() error { return store.WriteJSON(filepath.Join(dir, "trial.json"), trial) },
	} {
		if err := w(); err != nil {
			return store.Invalid, "writing results: " + err.Error()
		}
	}
	return store.Valid, ""
}
