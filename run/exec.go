package run

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/internal/parallel"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
)

// Exec is how one invocation carries out an experiment: how many trials
// at once, which part of the plan, where it reports, on which host. None
// of it is part of the experiment: no plan digest covers it (a manifest
// records the host, the parallelism and the shard beside the experiment,
// and a resume keeps the last two). A zero field takes its documented
// default.
type Exec struct {
	// Parallel trials at once (0: one per CPU for virtual-clock trials,
	// which are pure computation; one at a time on the wall clock, where
	// trials at once would share the CPUs they measure; a resumed run: the
	// parallelism it started with, and another one is refused).
	Parallel int
	// Shard runs one part of the plan (its units k with k mod Count =
	// Index−1); the zero Shard runs all of it (a resumed run: the part
	// its folder holds, and another one is refused).
	Shard       plan.Shard
	AllowRemote bool
	// SampleInterval is how often the members are sampled (0: a second).
	SampleInterval time.Duration
	// RunStamp, the same in every shard of one experiment, gives the
	// shards one run id (store.NewRunID); empty: $QMLSAB_RUN_ID, and
	// without that a run id of this folder alone.
	RunStamp string
	// RunID, when set, is a new run's id as Experiment.RunID made it for
	// the caller, which named the run's folder after it; empty: the run
	// makes its own.
	RunID       string
	ToolVersion string
	CommandLine []string
	Log         *slog.Logger
	// Progress shows the trials as they run (default: nowhere). Run and
	// Resume close it.
	Progress progress.Sink
	// Provisioning receives each arm's table of what will be measured,
	// once per arm of the run (default: nowhere).
	Provisioning io.Writer
	// Faults are done to every wall-clock trial's deployment while it
	// runs (the reliability suite injects them; each start is an event).
	Faults []Fault
	// Host is the machine's fingerprint, recorded with each trial it
	// runs (nil: DetectHost).
	Host *store.Host
	// Starting, when set, is told what the run will do once every check
	// has passed, before its first trial and before Progress hears of it:
	// where a command announces the run.
	Starting func(Start)

	// writeFiles writes a finished trial's files (store.WriteTrial; a
	// test puts a failing disk in its place).
	writeFiles func(dir string, files store.TrialFiles) error
}

// withDefaults is x with every documented default applied.
func (x Exec) withDefaults() Exec {
	if x.SampleInterval == 0 {
		x.SampleInterval = time.Second
	}
	if x.Log == nil {
		x.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if x.Progress == nil {
		x.Progress = progress.Lines(io.Discard)
	}
	if x.Provisioning == nil {
		x.Provisioning = io.Discard
	}
	if x.writeFiles == nil {
		x.writeFiles = store.WriteTrial
	}
	return x
}

// stamp is the run's stamp: Exec.RunStamp, else $QMLSAB_RUN_ID.
func (x Exec) stamp() string {
	if x.RunStamp != "" {
		return x.RunStamp
	}
	return os.Getenv(store.RunIDEnv)
}

// Run carries out the experiment e into the new run folder dir (a folder
// that does not exist or is empty): it checks x and the folder, takes the
// folder's lock, writes the manifest and runs the plan's trials (the
// shard's, with x.Shard). The outcome is the folder as the run left it,
// also when the run stopped (a *Stopped error).
func Run(ctx context.Context, e Experiment, dir string, x Exec) (*Outcome, error) {
	x = x.withDefaults()
	defer x.Progress.Close()
	if len(e.arms) == 0 {
		return nil, errNoArms
	}
	if err := e.checkExec(x); err != nil {
		return nil, err
	}
	// Refused before anything is made, then again under the lock.
	if err := checkNewFolder(dir); err != nil {
		return nil, err
	}
	lock, err := store.Acquire(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// What a writer of this folder killed mid-write left (its lock is
	// ours now, so it is dead).
	if err := lock.RemoveStaleTemporaries(); err != nil {
		return nil, err
	}
	if err := checkNewFolder(dir); err != nil {
		return nil, err
	}
	m, err := newManifest(e, x)
	if err != nil {
		return nil, err
	}
	return execute(ctx, &execution{exp: e, exec: x, dir: dir}, m, nil)
}

// checkNewFolder refuses a folder that holds a run, or anything else.
func checkNewFolder(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err == nil {
		return field.Errorf(FieldDir, dir, "%s already holds a run; use %v %s or another %v", dir, field.Ref(FieldResume), dir, field.Ref(FieldDir))
	}
	// A new run goes into a new or empty folder, never among files that
	// are no part of it (the lock taken is its own).
	if err := store.CheckNewRunFolder(dir); err != nil {
		return field.Errorf(FieldDir, dir, "%v %w, and is not a run (no %s in it); name a new or empty folder", field.Ref(FieldDir), err, store.ManifestFile)
	}
	return nil
}

// execution is one invocation's carrying out of an experiment.
type execution struct {
	exp  Experiment
	exec Exec
	dir  string
	// resumed says the run completes one begun before.
	resumed bool
	// shown are the arms whose provisioning table this run has printed.
	shown sync.Map
	// written are the trials this invocation wrote, by plan.Key, as it
	// wrote them.
	mu      sync.Mutex
	written map[string]store.Trial
}

// execute runs the trials m lists that have not finished, saving m after
// each; read are the finished trials a resume read (nil for a new run).
func execute(ctx context.Context, x *execution, m store.Manifest, read map[string][]store.Trial) (*Outcome, error) {
	opts := x.exec
	host := opts.Host
	if host == nil {
		h, err := DetectHost(x.exp.arms)
		if err != nil {
			return nil, err
		}
		host = &h
	}
	toRun := 0
	for _, ts := range m.Trials {
		if !finished(ts.Status) {
			toRun++
		}
	}
	shard := plan.Shard{}
	if m.Shard != nil {
		shard = *m.Shard
	}
	if opts.Starting != nil {
		opts.Starting(Start{Experiment: x.exp, Dir: x.dir, Resumed: x.resumed, Shard: shard, Trials: len(m.Trials), Left: toRun})
	}
	m.AddHost(*host)
	seed := seeds(m)
	opts.Progress.Plan(toRun)
	var mu sync.Mutex
	save := func(update func(*store.Manifest)) error {
		mu.Lock()
		defer mu.Unlock()
		update(&m)
		return store.WriteJSON(filepath.Join(x.dir, store.ManifestFile), m)
	}
	if err := save(func(*store.Manifest) {}); err != nil {
		return nil, err
	}
	limit := x.exp.defaultParallel(opts.Parallel, len(m.Trials))
	if err := save(func(m *store.Manifest) { m.Parallel = limit }); err != nil {
		return nil, err
	}
	// The trials still to run (a resume skips the finished ones), at most
	// limit at once. Each runs on ctx, not on the context Map hands it: a
	// trial already running finishes and writes its results whatever
	// happens to the others, and an error returned here (the results disk
	// failed) only stops further trials from starting.
	var todo []int
	for i, ts := range m.Trials {
		if !finished(ts.Status) {
			todo = append(todo, i)
		}
	}
	var writeErr error
	_, _ = parallel.Map(ctx, len(todo), limit, func(_ context.Context, k int) (struct{}, error) {
		i := todo[k]
		mu.Lock()
		ts := m.Trials[i]
		mu.Unlock()
		arm := x.exp.arms[slices.IndexFunc(x.exp.arms, func(a arms.Arm) bool { return a.Name == ts.Arm })]
		report := func(u progress.Update) {
			u.Arm, u.Index = ts.Arm, ts.Index
			opts.Progress.Update(u)
		}
		report(progress.Update{Phase: store.PhaseProvisioning})
		trial := x.runTrial
		switch {
		case x.exp.workload.Merge != nil:
			trial = x.runMergeTrial
		case arm.Embedded() && x.exp.clock == store.ClockVirtual:
			trial = x.runVirtualTrial
		}
		status, reason := trial(ctx, arm, ts.Index, seed[plan.Key(ts.Arm, ts.Index)], report)
		var failed error
		if diskFailed(status, reason) {
			// The results disk failed (full, gone): the harness's fault,
			// not the trial's, so the trial stays to be run again by a
			// resume, and nothing more starts.
			failed = errors.New(reason)
		}
		// The trial's last update carries its final figures, those its
		// table shows, not the last ones seen while it ran.
		simulated, final := x.finishedTrial(ts.Arm, ts.Index)
		final.Status, final.Reason = status, reason
		report(final)
		if err := save(func(m *store.Manifest) {
			m.Trials[i].Status, m.Trials[i].Reason = status, reason
			if finished(status) {
				m.Trials[i].Host = host.ID
			}
			m.Simulated = m.Simulated || simulated // a local cmd/mongosim set is a simulation too
		}); err != nil {
			failed = errors.Join(failed, err)
		}
		if failed != nil {
			mu.Lock()
			writeErr = errors.Join(writeErr, failed)
			mu.Unlock()
		}
		return struct{}{}, failed
	})
	out := &Outcome{Run: x.outcome(m, read)}
	if writeErr != nil {
		return out, &Stopped{Dir: x.dir, Err: writeErr}
	}
	if ctx.Err() != nil {
		return out, &Stopped{Dir: x.dir, Interrupted: true}
	}
	return out, nil
}

// finished reports whether a trial's status is final.
func finished(status store.Status) bool { return status == store.Valid || status == store.Invalid }

// outcome is the run folder as m and the trials say: each finished trial
// of m that wrote its trial.json, as read (read) or written (this
// invocation), by arm in m's order.
func (x *execution) outcome(m store.Manifest, read map[string][]store.Trial) *store.Run {
	r := &store.Run{Dir: x.dir, Manifest: m, Trials: map[string][]store.Trial{}}
	byKey := map[string]store.Trial{}
	for _, ts := range read {
		for _, t := range ts {
			byKey[plan.Key(t.Arm, t.Index)] = t
		}
	}
	x.mu.Lock()
	for k, t := range x.written {
		byKey[k] = t
	}
	x.mu.Unlock()
	for _, ts := range m.Trials {
		if t, ok := byKey[plan.Key(ts.Arm, ts.Index)]; ok && finished(ts.Status) {
			r.Trials[ts.Arm] = append(r.Trials[ts.Arm], t)
		}
	}
	return r
}

// finishedTrial is what a trial this invocation finished wrote: whether
// its numbers came from mongosim, and its final availability and
// failovers for its last progress update (neither when it wrote no
// trial.json).
func (x *execution) finishedTrial(arm string, index int) (simulated bool, final progress.Update) {
	x.mu.Lock()
	t, ok := x.written[plan.Key(arm, index)]
	x.mu.Unlock()
	if !ok {
		return false, final
	}
	if f, ok := t.Metrics[metric.Failovers]; ok {
		final.Failovers, final.HasFigures = int(f), true
		final.Availability, final.HasAvailability = t.Metrics[metric.Availability]
	}
	return t.Simulated, final
}

// seeds are the seeds of a manifest's trials, by plan.Key: each from the
// run seed, the trial's index and its arm's place in the plan (or, for a
// run made before plans, in its arm list, whose trials ran interleaved in
// that order).
func seeds(m store.Manifest) map[string]uint64 {
	names := m.ArmNames()
	if m.Plan != nil && len(m.Plan.Arms) > 0 {
		names = m.Plan.Arms
	}
	out := map[string]uint64{}
	for _, ts := range m.Trials {
		if pos := slices.Index(names, ts.Arm); pos >= 0 {
			out[plan.Key(ts.Arm, ts.Index)] = plan.Seed(m.Seed, pos, len(names), ts.Index)
		}
	}
	return out
}
