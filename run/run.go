// Package run carries out an experiment: it provisions each trial's
// deployment, drives the workload with the arm's actors beside it, samples
// the members, and writes every finished trial to the run folder.
//
// An Experiment is a value (NewExperiment checks a Spec once and builds
// it): what a run's manifest records and its plan digests. Exec is how one
// invocation carries it out (parallelism, shard, progress, host, faults).
// Run carries out an experiment into a new folder; Resume reads one back
// from its folder's manifest and completes it. Trials follow the
// experiment's plan (package plan): repetition blocks, each running every
// arm once in a seeded order, so drift hits all arms alike; a shard runs
// some of the blocks, on one host. An interrupted run keeps its finished
// trials.
package run

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
	"github.com/qmlsab/qmlsab/workload"
)

// StampSeed is the seed of a run given a stamp and no seed: derived from
// the stamp (SHA-256, a number of at most 10 digits), so the shards of a
// night, and the night run again, draw alike, and every other night draws
// anew.
func StampSeed(stamp string) uint64 {
	sum := sha256.Sum256([]byte(stamp))
	return binary.BigEndian.Uint64(sum[:8])>>33 + 1
}

// guard is which hosts the run's clients may connect to: the loopback
// range, unless the run allows remote targets.
func (x *execution) guard() mongoclient.Guard {
	return mongoclient.Guard{AllowRemote: x.exec.AllowRemote}
}

// provision makes a trial's folder and deployment; without a deployment
// it says why the trial ended (interrupted, or invalid: a harness fault).
func (x *execution) provision(ctx context.Context, arm arms.Arm, index int) (dir string, dep target.Deployment, status store.Status, reason string) {
	dir = store.TrialDir(x.dir, arm.Name, index)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		status, reason := resultsDiskFailed(err)
		return dir, nil, status, reason
	}
	dep, err := target.Provision(ctx, arm, target.Options{Dir: dir, AllowRemote: x.exec.AllowRemote, Logger: x.exec.Log,
		Sim: x.exp.sim, SimMemLimitMB: x.exp.simMemLimitMB, Deadline: provisionDeadline})
	if err != nil {
		if ctx.Err() != nil {
			return dir, nil, store.Interrupted, ""
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return dir, nil, store.Invalid, fmt.Sprintf("provisioning: no reply in %s: %v", provisionDeadline, err)
		}
		return dir, nil, store.Invalid, "provisioning: " + err.Error()
	}
	x.showCapabilities(arm, dep)
	return dir, dep, "", ""
}

// Deadlines of the phases that wait on the server. Each is generous (a
// healthy server needs a fraction of it, even on a busy host); when one
// expires the trial is invalid with the phase named, instead of a hang.
const (
	// provisionDeadline bounds starting or attaching to the deployment,
	// the startup check and the probe (a local set of three processes
	// starts in seconds).
	provisionDeadline = 3 * time.Minute
	// loadBase plus loadPerDoc for each real document bounds the load.
	loadBase   = 60 * time.Second
	loadPerDoc = 10 * time.Millisecond
	// closeDeadline bounds teardown: restoring the arm's parameters on an
	// attached server, stopping a started one.
	closeDeadline = 60 * time.Second
	// driverDefaultDocs is the workload driver's collection size when
	// none is given.
	driverDefaultDocs = 400
)

// loadDeadline is the load phase's deadline for a collection of docs
// documents (0: the driver's default size).
func loadDeadline(docs int) time.Duration {
	return loadBase + time.Duration(max(docs, driverDefaultDocs))*loadPerDoc
}

// workloadDeadline bounds the workload phases (warm-up, storm, recovery):
// their scheduled length, then as long again (at least a minute) for the
// operations still running to answer.
func workloadDeadline(d time.Duration) time.Duration { return d + max(d, time.Minute) }

// closeTrial tears a trial's deployment down within closeDeadline; a
// teardown that expires makes a trial that was valid invalid, naming it.
func closeTrial(dep target.Deployment, status *store.Status, reason *string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeDeadline)
	defer cancel()
	err := dep.Close(ctx)
	if err != nil && ctx.Err() != nil && *status == store.Valid {
		*status, *reason = store.Invalid, fmt.Sprintf("teardown: no reply in %s: %v", closeDeadline, err)
	}
}

// showCapabilities prints the provisioning table of an arm's deployment
// to Exec.Provisioning, the first time the run provisions that arm.
func (x *execution) showCapabilities(arm arms.Arm, dep target.Deployment) {
	if _, seen := x.shown.LoadOrStore(arm.Name, true); seen {
		return
	}
	server := "the server"
	if st := dep.Startup(); len(st) > 0 {
		server = st[0].Server() + ", " + st[0].Topology
	}
	fmt.Fprintf(x.exec.Provisioning, "arm %s on %s: what will be measured\n%s", arm.Name, server, dep.Capabilities().Table())
}

// embeddedRealDocs is the embedded set's real collection: mongosim sizes
// each storm query from the shape it carries, so the real documents only
// give the pipeline something to compute and return. Forty (two per
// partition; a storm cursor takes one to three getMores) cost the host a
// tenth of the driver's 400, CPU the in-process members need on a busy
// machine.
const embeddedRealDocs = 40

// realDocs is the storm's real collection size for an arm: the driver's
// default on a server that sizes queries from their real input.
func realDocs(arm arms.Arm) int {
	if arm.Embedded() {
		return embeddedRealDocs
	}
	return 0
}

// runTrial provisions, drives and records one trial. Failures of the
// system under test are outcomes; only harness faults make it invalid.
func (x *execution) runTrial(ctx context.Context, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status store.Status, reason string) {
	dir, dep, status, reason := x.provision(ctx, arm, index)
	if dep == nil {
		return status, reason
	}
	defer closeTrial(dep, &status, &reason)
	watcher := &collect.PrimaryWatcher{}
	guard := x.guard()
	w := x.exp.workload
	d := &workload.Driver{Spec: *w.SpillToDisk, URI: dep.URI(), Monitor: watcher.Monitor(), RealDocs: realDocs(arm), Guard: guard}
	sampler := &collect.Sampler{Members: dep.Members(), Interval: x.exec.SampleInterval, Census: true, Guard: guard}
	meta := map[string]any{}
	if sh := target.ShardingOf(dep); sh != nil {
		// The storm goes through the routers to every shard: the storm's
		// collection is sharded, every shard's members and the routers are
		// sampled, each sample labelled with its shard.
		d.Sharded = true
		sampler.ShardOf, sampler.Routers = sh.ShardOf(), sh.Routers()
		meta["topology"], meta["shards"], meta["routers"] = arms.TopologySharded, sh.ShardOf(), sh.Routers()
	}
	report(progress.Update{Phase: store.PhaseLoading})
	lctx, cancelLoad := context.WithTimeout(ctx, loadDeadline(d.RealDocs))
	err := d.Load(lctx)
	loadExpired := lctx.Err() == context.DeadlineExceeded
	cancelLoad()
	if err != nil {
		if ctx.Err() != nil {
			return store.Interrupted, ""
		}
		if loadExpired {
			return store.Invalid, fmt.Sprintf("load: no reply in %s: %v", loadDeadline(d.RealDocs), err)
		}
		return store.Invalid, "loading data: " + err.Error()
	}
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	var bg sync.WaitGroup
	bg.Go(func() { sampler.Run(tctx) })
	var kmu sync.Mutex
	var kills []store.Kill
	var rounds atomic.Int64 // the killOp actors' decisions
	actors := 0             // how many killOp actors decide (one per shard on a sharded cluster)
	if k := arm.KillOp(); k != nil {
		var err error
		if actors, err = startKillOp(tctx, &bg, dep, guard, *k, x.exec.Log, func(e store.Kill) { kmu.Lock(); kills = append(kills, e); kmu.Unlock() }, &rounds); err != nil {
			return store.Invalid, err.Error()
		}
	}
	for _, a := range arm.Actors {
		if a.Exec != nil {
			stopExec, err := actor.Exec(*a.Exec, dep.URI(), filepath.Join(dir, "exec-actor.log"))
			if err != nil {
				return store.Invalid, err.Error()
			}
			defer stopExec()
		}
	}
	start := time.Now().Add(500 * time.Millisecond)
	bg.Go(func() { liveProgress(tctx, d, sampler, start, report) })
	// The actor's decisions within the trial's phases (-1: it ended first).
	var inTrial atomic.Int64
	inTrial.Store(-1)
	bg.Go(func() {
		at := func(t time.Time) bool {
			select {
			case <-tctx.Done():
				return false
			case <-time.After(time.Until(t)):
				return true
			}
		}
		if !at(start) {
			return
		}
		r0 := rounds.Load()
		if at(start.Add(w.Duration())) {
			inTrial.Store(rounds.Load() - r0)
		}
	})
	var fmu sync.Mutex
	var extra []store.Event // faults applied
	for _, f := range x.exec.Faults {
		bg.Go(func() {
			select {
			case <-tctx.Done():
				return
			case <-time.After(time.Until(start.Add(f.At))):
			}
			ev := store.Event{At: time.Now(), Kind: store.EventFault, Fault: f.Name}
			if err := f.Do(tctx, dep); err != nil {
				ev.Err = err.Error()
			}
			fmu.Lock()
			extra = append(extra, ev)
			fmu.Unlock()
		})
	}
	wctx, cancelRun := context.WithTimeout(tctx, time.Until(start)+workloadDeadline(w.Duration()))
	res, err := d.Run(wctx, start, seed)
	expired := wctx.Err() != nil && tctx.Err() == nil
	cancelRun()
	stop()
	bg.Wait()
	report(progress.Update{Phase: store.PhaseWriting})
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	if expired {
		return store.Invalid, fmt.Sprintf("workload: operations still unanswered %s after the %s phases began", workloadDeadline(w.Duration()), phaseNames)
	}
	if err != nil {
		return store.Invalid, "workload: " + err.Error()
	}
	samples := x.fillGaps(dep, start, sampler.Samples()) // seconds the sampler missed, from diagnostic.data (gapfill.go)
	kmu.Lock()
	defer kmu.Unlock()
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: start, Simulated: dep.Simulated(), Clock: store.ClockWall,
		Phases: map[store.Phase]float64{store.PhaseWarmup: 0, store.PhaseStorm: res.PhaseStarts[store.PhaseStorm].Sub(start).Seconds(), store.PhaseRecovery: res.PhaseStarts[store.PhaseRecovery].Sub(start).Seconds()},
	}
	rec := store.Records{Results: res, Samples: samples, Kills: kills, KillOpActor: arm.KillOp() != nil}
	// The driver's topology changes are failovers' third witness
	// (metric.Failovers).
	for _, c := range watcher.Changes() {
		rec.DriverPrimaries = append(rec.DriverPrimaries, store.Event{At: c.At, Kind: store.EventTopology, Member: c.Member})
	}
	for k, v := range map[string]any{"target": dep.Describe(), "members": dep.Startup(), "capabilities": dep.Capabilities(), "seed": seed, "clock": store.ClockWall} {
		meta[k] = v
	}
	trial.Metadata, _ = json.Marshal(meta)
	if status, reason := x.writeTrial(dir, trial, start, rec, extra...); status != store.Valid {
		return status, reason
	}
	if arm.Embedded() {
		// The embedded set lives in this process: when no member answers,
		// the host could not keep up, and the trial measured the harness.
		if lost, total := metric.Unreachable(samples), w.Duration(); lost > max(5*time.Second, total/10) {
			return store.Invalid, fmt.Sprintf("host saturated: no member of the in-process set answered serverStatus for %.0f s of %.0f s; run fewer trials at once (a lower parallelism) or run on the virtual clock",
				lost.Seconds(), total.Seconds())
		}
		// The killOp actor runs on this host too. On a quiet host it
		// decides at its interval's rate; one that decided at less than
		// four fifths of it was starved of CPU, and memory it would have
		// freed in time (a crash of D's set) measured the host.
		if k := arm.KillOp(); k != nil && inTrial.Load() >= 0 {
			total := w.Duration()
			if want := int64(actors) * int64(total/k.Interval); inTrial.Load() < want*4/5 {
				return store.Invalid, fmt.Sprintf("host saturated: the killOp actor%s decided %d times in the trial's %.0f s where its %v interval asks for %d; run fewer trials at once (a lower parallelism) or run on the virtual clock",
					actorsNote(actors), inTrial.Load(), total.Seconds(), k.Interval, want)
			}
		}
	}
	return store.Valid, ""
}

// Fault is something done to a trial's deployment At after the trial's
// start; target's KillMember, Hang and FailCommand are the usual Do.
type Fault struct {
	Name string
	At   time.Duration
	Do   func(ctx context.Context, dep target.Deployment) error
}

// phaseNames are the workload's phases, for a deadline's message.
const phaseNames = "warm-up, storm and recovery"

// liveProgress reports a running wall-clock trial every second: its
// phase, the availability of the canaries so far, and failovers seen.
func liveProgress(ctx context.Context, d *workload.Driver, s *collect.Sampler, start time.Time, report func(progress.Update)) {
	ph := d.Spec.Phases
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		el := max(time.Since(start), 0)
		u := progress.Update{Phase: phaseAt(ph, el), Elapsed: min(el, ph.Total()), Total: ph.Total(),
			Failovers: metric.PrimaryChanges(s.Samples())}
		u.Availability, u.HasAvailability = d.Availability()
		report(u)
	}
}

// phaseAt is the phase at a time into the trial.
func phaseAt(ph workload.Phases, el time.Duration) store.Phase {
	switch {
	case el < ph.Warmup:
		return store.PhaseWarmup
	case el < ph.Warmup+ph.Storm:
		return store.PhaseStorm
	}
	return store.PhaseRecovery
}

// writingResults begins the reason of a trial whose files could not be
// written: the results disk failed, and the run stops.
const writingResults = "writing results: "

// resultsDiskFailed is what a trial function returns when the run folder
// could not take the trial's files (a full or read-only results disk): a
// fault of the harness, not of the trial, so the trial is interrupted,
// for Resume to run again, with the reason the run stops for. A trial
// interrupted by the run's stop has no reason (diskFailed tells the two
// apart).
func resultsDiskFailed(err error) (store.Status, string) {
	return store.Interrupted, writingResults + err.Error()
}

// diskFailed says a trial function's result is resultsDiskFailed's.
func diskFailed(status store.Status, reason string) bool {
	return status == store.Interrupted && reason != ""
}

// writeTrial computes a finished trial's metrics (and why any is absent)
// from its records and writes its files, trial.json last: a trial folder
// without trial.json is unfinished. A trial whose records measured a
// server that cannot run the workload is invalid (metric.Validity).
// Extra events are those the records do not hold (injected faults).
func (x *execution) writeTrial(dir string, trial store.Trial, start time.Time, rec store.Records, extra ...store.Event) (status store.Status, reason string) {
	metric.Fill(&trial, rec)
	extra = append(slices.Clone(extra), rec.DriverPrimaries...)
	files := store.TrialFiles{Trial: trial, Samples: rec.Samples, Merge: rec.Merge}
	if rec.Merge != nil && rec.KillOpActor {
		// The actor's kills beside the merge ops; an empty file says it
		// ran and killed nothing.
		files.Events = append([]store.Event{}, metric.Events(nil, nil, rec.Kills, extra...)...)
	}
	if rec.Merge == nil {
		// The per-second series cover the trial's window and nothing of
		// the sampling before or after it; a window the records do not
		// give is a harness fault, never a series at a made-up time.
		end := rec.PhaseStarts[store.PhaseEnd]
		if start.IsZero() || !end.After(start) {
			return store.Invalid, fmt.Sprintf("harness: the trial's window is unknown (start %s, end %s)", start.Format(time.RFC3339), end.Format(time.RFC3339))
		}
		files.Trial.Victims = metric.VictimSummary(rec.Results, rec.Kills)
		files.Series = metric.PerSecond(rec.Samples, start, end)
		files.Storm, files.Canaries = rec.Storm, rec.Canaries
		files.Outcomes = metric.Outcomes(start, rec.Results)
		files.Events = metric.Events(rec.PhaseStarts, rec.Samples, rec.Kills, extra...)
	}
	if err := x.exec.writeFiles(dir, files); err != nil {
		return resultsDiskFailed(err)
	}
	x.mu.Lock()
	if x.written == nil {
		x.written = map[string]store.Trial{}
	}
	x.written[plan.Key(files.Trial.Arm, files.Trial.Index)] = files.Trial
	x.mu.Unlock()
	if why := metric.Validity(rec); why != "" {
		return store.Invalid, why
	}
	return store.Valid, ""
}
