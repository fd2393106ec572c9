// Package run carries out an experiment: it provisions each trial's
// deployment, drives the workload with the arm's actors beside it, samples
// the members, and writes every finished trial to the run folder. Trials
// follow the run's plan (plan.go): repetition blocks, each running every
// arm once in a seeded order, so drift hits all arms alike; a shard runs
// some of the blocks, on one host. An interrupted run keeps its finished
// trials and Resume completes it.
package run

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/internal/zero"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
	"github.com/qmlsab/qmlsab/workload"
)

// Config is an experiment.
type Config struct {
	// Arms are the arms to run, the baseline first. A resumed run runs
	// the arms its manifest records (resumeArms): an arm given here must
	// be one of them, defined alike, and gives what the record lacks (a
	// uri arm's credentials); none given is the run's own.
	Arms     []arms.Arm
	N        int
	Workload workload.Spec
	// Dir is the run folder; with Resume, an existing one to complete.
	// A resumed run keeps the conditions its manifest records (clock,
	// profile, n, seed, parallelism, workload): a zero field means the
	// run's own, and a field given otherwise is refused (resumeConditions).
	Dir    string
	Resume bool
	Seed   uint64
	// RunStamp, the same in every shard of one experiment, gives the
	// shards one run id (store.NewRunID); empty: $QMLSAB_RUN_ID, and
	// without that a run id of this folder alone.
	RunStamp string
	// RunID, when set, is a new run's id as NewRunID made it for the
	// caller, which named the run's folder after it; empty: the run makes
	// its own.
	RunID string
	// Parallel trials at once (0: one per CPU for virtual-clock trials,
	// which are pure computation; one at a time on the wall clock, where
	// trials at once would share the CPUs they measure).
	Parallel       int
	AllowRemote    bool
	SampleInterval time.Duration
	// Clock is how embedded arms run: Virtual (default) or Wall. Other
	// targets always run on the wall clock.
	Clock string
	// Topology, when set, is every arm's (arms.TopologySharded: each arm
	// runs on a sharded cluster, sized by its sharded: block or the
	// defaults); empty keeps each arm's own.
	Topology string
	// Sim is the embedded target's mongosim configuration; zero fields
	// take the embedded M50's values (EmbeddedSim), on either clock.
	Sim mongosim.SimOptions
	// SimMemLimitMB is each embedded member's memory limit (0: the
	// model's default, 32 GiB).
	SimMemLimitMB int64
	// Profile scales the workload's phases (Profiles; "" is default). A
	// resumed run keeps the workload it started with.
	Profile     string
	ToolVersion string
	CommandLine []string
	Log         *slog.Logger
	// Progress shows the trials as they run (default: nowhere).
	Progress progress.Sink
	// Provisioning receives each arm's table of what will be measured,
	// once per arm of the run (default: nowhere).
	Provisioning io.Writer
	// Faults are done to every wall-clock trial's deployment while it
	// runs (the reliability suite injects them; each start is an event).
	Faults []Fault
	// Shard runs one part of the plan (its units k with k mod Count =
	// Index−1); the zero Shard runs all of it.
	Shard store.Shard
	// Host is the machine's fingerprint, recorded with each trial it
	// runs (nil: DetectHost).
	Host *store.Host

	// shown are the arms whose provisioning table this run has printed.
	shown *sync.Map
	// writeFiles writes a finished trial's files (store.WriteTrial; a
	// test puts a failing disk in its place).
	writeFiles func(dir string, files store.TrialFiles) error
}

// Fault is something done to a trial's deployment At after the trial's
// start; target's KillMember, Hang and FailCommand are the usual Do.
type Fault struct {
	Name string
	At   time.Duration
	Do   func(ctx context.Context, dep target.Deployment) error
}

// Profiles scale a workload's phases: quick is for CI and smoke tests,
// long for a nightly run that wants more storm per trial.
var Profiles = map[string]float64{"quick": 0.1, "default": 1, "long": 2}

// ProfileScale is a profile's phase scale; an unknown name is an error
// naming Config.Profile.
func ProfileScale(name string) (float64, error) {
	f, ok := Profiles[name]
	if !ok {
		return 0, fmt.Errorf("Config.Profile %q: want quick, default or long", name)
	}
	return f, nil
}

// EmbeddedSim is the embedded target's default: the investigation's Atlas
// M50 (8 vCPUs, 32 GiB, its host: model.DefaultHost). Pipelines that
// come without a model shape (the merge workload's, a user's) run on small
// real data standing for ScanScale times as many documents.
func EmbeddedSim() mongosim.SimOptions {
	return mongosim.SimOptions{CPUs: 8, ScanScale: 200, PartitionMB: 20}
}

// onTopology returns the arms with the run's topology, when it has one
// (a copy: the caller's arms stay as they were).
func onTopology(in []arms.Arm, topology string) []arms.Arm {
	if topology == "" {
		return in
	}
	out := slices.Clone(in)
	for i := range out {
		out[i].Topology = topology
		if topology == arms.TopologySharded {
			out[i].Sharded = out[i].Sharded.WithDefaults()
		}
	}
	return out
}

// withDefaults applies every documented default of a Config in one place:
// a zero field means its default.
func (cfg Config) withDefaults() Config {
	d := EmbeddedSim()
	zero.Default(&cfg.Sim.CPUs, d.CPUs)
	zero.Default(&cfg.Sim.BaselineMB, d.BaselineMB)
	zero.Default(&cfg.Sim.ScanScale, d.ScanScale)
	zero.Default(&cfg.Sim.PartitionMB, d.PartitionMB)
	zero.Default(&cfg.Sim.RestartDelay, mongosim.DefaultRestartDelay)
	zero.Default(&cfg.SampleInterval, time.Second)
	zero.Default(&cfg.Clock, Virtual)
	zero.Default(&cfg.Profile, "default")
	cfg.Arms = onTopology(cfg.Arms, cfg.Topology)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Progress == nil {
		cfg.Progress = progress.Lines(io.Discard)
	}
	if cfg.Provisioning == nil {
		cfg.Provisioning = io.Discard
	}
	// Each run shows an arm's provisioning table once, whichever of its
	// trials provisions it first.
	cfg.shown = &sync.Map{}
	if cfg.writeFiles == nil {
		cfg.writeFiles = store.WriteTrial
	}
	return cfg
}

// Validate checks a Config's settings; errors name the Config field
// ("Config.N 0: …"), which a command maps to its flag.
func (cfg Config) Validate() error {
	switch {
	case cfg.N < 1 && !(cfg.Resume && cfg.N == 0):
		return fmt.Errorf("Config.N %d: at least one trial per arm", cfg.N)
	case len(cfg.Arms) == 0 && !cfg.Resume:
		return errors.New("Config.Arms: no arms to run")
	case cfg.Parallel < 0:
		return fmt.Errorf("Config.Parallel %d: must not be negative", cfg.Parallel)
	case cfg.Clock != "" && cfg.Clock != Virtual && cfg.Clock != Wall:
		return fmt.Errorf("Config.Clock %q: want %s or %s", cfg.Clock, Virtual, Wall)
	case cfg.Topology != "" && cfg.Topology != arms.TopologyReplicaSet && cfg.Topology != arms.TopologySharded:
		return fmt.Errorf("Config.Topology %q: want %s or %s", cfg.Topology, arms.TopologyReplicaSet, arms.TopologySharded)
	case cfg.Shard != (store.Shard{}) && (cfg.Shard.Count < 1 || cfg.Shard.Index < 1 || cfg.Shard.Index > cfg.Shard.Count):
		return fmt.Errorf("Config.Shard %s: want i/N with 1 ≤ i ≤ N", cfg.Shard)
	case cfg.Shard.Count > cfg.N && !cfg.Resume:
		return fmt.Errorf("Config.Shard %s: the plan has %d units (one per trial of an arm, Config.N %d), so %d shards would leave some empty; split into at most %d",
			cfg.Shard, cfg.N, cfg.N, cfg.Shard.Count, cfg.N)
	}
	for _, a := range onTopology(cfg.Arms, cfg.Topology) {
		if a.IsSharded() && !cfg.Resume && cfg.Workload.Merge == nil && cfg.Workload.SpillToDisk == nil {
			return fmt.Errorf("Config.Topology sharded (arm %s): Config.Workload %s does not run on a sharded cluster (spill_to_disk and merge_partial_write do)", a.Name, cfg.Workload.Name)
		}
		if a.IsSharded() && !cfg.Resume && cfg.Workload.SpillToDisk != nil && a.Embedded() && cmp.Or(cfg.Clock, Virtual) == Virtual {
			return fmt.Errorf("Config.Clock %s with Config.Topology sharded (arm %s): the virtual clock's engine models one replica set, so the storm runs on an embedded sharded cluster only on Config.Clock %s", Virtual, a.Name, Wall)
		}
		if a.IsSharded() && a.Target == arms.TargetLocal && a.Sharded.Mongos == "" {
			return fmt.Errorf("Config.Topology sharded: arm %s runs on the local target, which needs its sharded.mongos binary (an arms file's 'sharded: {mongos: <path>}')", a.Name)
		}
	}
	if cfg.Profile != "" {
		if _, err := ProfileScale(cfg.Profile); err != nil {
			return err
		}
	}
	if !cfg.Resume {
		if err := cfg.Workload.Validate(); err != nil {
			return fmt.Errorf("Config.Workload %s: %w", cfg.Workload.Name, err)
		}
		if err := cfg.checkTrialMemory(); err != nil {
			return err
		}
	}
	return nil
}

// checkTrialMemory refuses, before any trial starts, a virtual run whose
// trials would not fit their memory budget once the profile has scaled
// the phases (Validate checked the workload as given): a run of P trials
// at once needs P × workload.TrialBytes, within P × the trial budget.
func (cfg Config) checkTrialMemory() error {
	if cfg.Workload.SpillToDisk == nil || (cfg.Clock != "" && cfg.Clock != Virtual) {
		return nil
	}
	profile := cmp.Or(cfg.Profile, "default")
	w := cfg.Workload.Scaled(Profiles[profile]).SpillToDisk
	need := w.TrialBytes()
	if need <= workload.MaxTrialHeapBytes {
		return nil
	}
	parallel := cfg.Parallel
	if parallel == 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	return fmt.Errorf("Config.Workload %s with Config.Profile %s: the %v trial of canaryRate %v and stormRate %v over a %v storm needs ~%s a virtual trial, the budget is %s × %d trials at once; lower canaryRate, stormRate or the phases, or use a shorter Config.Profile",
		cfg.Workload.Name, profile, w.Phases.Total(), w.CanaryRate, w.StormRate, w.Phases.Storm,
		workload.FormatBytes(need), workload.FormatBytes(workload.MaxTrialHeapBytes), parallel)
}

// Preflight makes the checks Execute makes before its first trial that
// need no lock (the settings; a resumed run's conditions, arms and plan;
// a new run's folder, which must hold no run and nothing else) and writes
// nothing, so that a command can refuse a run before it announces it.
// Execute checks again under the run folder's lock.
func Preflight(cfg Config) error {
	cfg, err := settle(cfg)
	if err != nil {
		return err
	}
	_, _, err = plan(cfg)
	return err
}

// settle validates cfg and completes it: a resumed run's conditions and
// arms from its manifest, the defaults, the profile's scaling.
func settle(cfg Config) (Config, error) {
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if cfg.Resume {
		r, err := store.Open(cfg.Dir)
		if err != nil {
			return cfg, err
		}
		if cfg, err = resumeConditions(cfg, r.Manifest); err != nil {
			return cfg, err
		}
		if cfg.Arms, err = resumeArms(cfg, r.Manifest, r); err != nil {
			return cfg, err
		}
	}
	cfg = cfg.withDefaults()
	if !cfg.Resume {
		cfg.Workload = cfg.Workload.Scaled(Profiles[cfg.Profile])
	}
	return cfg, nil
}

// plan is the run's manifest (a resumed run's own, a new run's made
// anew) and cfg with a resumed run's workload.
func plan(cfg Config) (Config, store.Manifest, error) {
	m, err := manifest(cfg)
	if err != nil {
		return cfg, m, err
	}
	if cfg.Resume {
		// A resumed run keeps the workload it started with.
		cfg.Workload = workload.Spec{}
		if err := json.Unmarshal(m.Workload, &cfg.Workload); err != nil {
			return cfg, m, fmt.Errorf("%s: workload: %w", filepath.Join(cfg.Dir, "manifest.json"), err)
		}
		if err := cfg.Workload.Validate(); err != nil {
			return cfg, m, fmt.Errorf("%s: workload: %w", filepath.Join(cfg.Dir, "manifest.json"), err)
		}
	}
	for _, ts := range m.Trials {
		if !slices.ContainsFunc(cfg.Arms, func(a arms.Arm) bool { return a.Name == ts.Arm }) {
			return cfg, m, fmt.Errorf("the run has trials of arm %q, which is not among the arms given", ts.Arm)
		}
	}
	return cfg, m, nil
}

// Execute runs (or resumes) the experiment and returns the run folder.
func Execute(ctx context.Context, cfg Config) (string, error) {
	cfg, err := settle(cfg)
	if err != nil {
		return "", err
	}
	defer cfg.Progress.Close()
	lock, err := store.Acquire(cfg.Dir)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	// What a writer of this folder killed mid-write left (its lock is
	// ours now, so it is dead).
	if err := lock.RemoveStaleTemporaries(); err != nil {
		return "", err
	}
	cfg, m, err := plan(cfg)
	if err != nil {
		return "", err
	}
	host := cfg.Host
	if host == nil {
		h, err := DetectHost(cfg.Arms)
		if err != nil {
			return "", err
		}
		host = &h
	}
	m.AddHost(*host)
	seed := seeds(m)
	toRun := 0
	for _, ts := range m.Trials {
		if ts.Status != store.Valid && ts.Status != store.Invalid {
			toRun++
		}
	}
	cfg.Progress.Plan(toRun)
	var mu sync.Mutex
	save := func(update func(*store.Manifest)) error {
		mu.Lock()
		defer mu.Unlock()
		update(&m)
		return store.WriteJSON(filepath.Join(cfg.Dir, "manifest.json"), m)
	}
	if err := save(func(*store.Manifest) {}); err != nil {
		return "", err
	}
	parallel := defaultParallel(cfg, m)
	if err := save(func(m *store.Manifest) { m.Parallel = parallel }); err != nil {
		return "", err
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var writeErr error
	for i, ts := range m.Trials {
		if ts.Status == store.Valid || ts.Status == store.Invalid {
			continue // finished before a resume
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		failed := writeErr != nil
		mu.Unlock()
		if failed { // the results disk failed: start nothing more
			<-sem
			break
		}
		arm := cfg.Arms[slices.IndexFunc(cfg.Arms, func(a arms.Arm) bool { return a.Name == ts.Arm })]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			report := func(u progress.Update) {
				u.Arm, u.Index = ts.Arm, ts.Index
				cfg.Progress.Update(u)
			}
			report(progress.Update{Phase: "provisioning"})
			trial := runTrial
			switch {
			case cfg.Workload.Merge != nil:
				trial = runMergeTrial
			case arm.Embedded() && cfg.Clock == Virtual:
				trial = runVirtualTrial
			}
			status, reason := trial(ctx, cfg, arm, ts.Index, seed[fmt.Sprint(ts.Arm, "#", ts.Index)], report)
			if status == resultsDiskFailed {
				// The results disk failed (full, gone): the harness's
				// fault, not the trial's, so the trial stays to be run
				// again by --resume, and nothing more starts.
				mu.Lock()
				writeErr = errors.Join(writeErr, errors.New(reason))
				mu.Unlock()
				status = store.Interrupted
			}
			// The trial's last update carries its final figures, those
			// its table shows, not the last ones seen while it ran.
			simulated, final := finishedTrial(cfg.Dir, ts.Arm, ts.Index)
			final.Status, final.Reason = status, reason
			report(final)
			if err := save(func(m *store.Manifest) {
				m.Trials[i].Status, m.Trials[i].Reason = status, reason
				if status == store.Valid || status == store.Invalid {
					m.Trials[i].Host = host.ID
				}
				m.Simulated = m.Simulated || simulated // a local cmd/mongosim set is a simulation too
			}); err != nil {
				mu.Lock()
				writeErr = errors.Join(writeErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if writeErr != nil {
		return cfg.Dir, fmt.Errorf("the run stopped: %w (finished trials are intact; the trials it could not write are left to run again: once the results disk is fixed, complete the run with: qmlsab run --resume %s)", writeErr, cfg.Dir)
	}
	if ctx.Err() != nil {
		return cfg.Dir, fmt.Errorf("interrupted; finished trials are kept, resume with: qmlsab run --resume %s", cfg.Dir)
	}
	return cfg.Dir, nil
}

// defaultParallel is how many trials run at once: the configured number,
// else one per CPU for virtual-clock trials (pure computation: their
// figures are the same at any parallelism) and one at a time on the wall
// clock. Wall-clock trials at once share the host's CPUs, so each would
// measure the others as much as its server (docs/reliability.md, "Figures
// that could mislead", has what that did on 2 cores).
func defaultParallel(cfg Config, m store.Manifest) int {
	if cfg.Parallel > 0 {
		return cfg.Parallel
	}
	if m.Clock == Virtual && cfg.Workload.Merge == nil {
		return max(1, min(len(m.Trials), runtime.GOMAXPROCS(0)))
	}
	return 1
}

// resumeConditions takes a resumed run's conditions from its manifest. A
// condition left zero in cfg becomes the run's own; one given otherwise is
// refused, naming its field, since finishing a run under other conditions
// would mix two experiments in one report.
func resumeConditions(cfg Config, m store.Manifest) (Config, error) {
	refuse := func(field, given, own string) error {
		return fmt.Errorf("%s %s: %s was started with %s %s; a resumed run keeps its conditions (leave %s out, or start a new run)",
			field, given, cfg.Dir, field, own, field)
	}
	if cfg.Clock != "" && m.Clock != "" && cfg.Clock != m.Clock {
		return cfg, refuse("Config.Clock", cfg.Clock, m.Clock)
	}
	if m.Clock != "" {
		cfg.Clock = m.Clock
	}
	if cfg.Topology != "" && cfg.Topology != m.Topology {
		own := m.Topology
		if own == "" {
			own = "(none: each arm's own)"
		}
		return cfg, refuse("Config.Topology", cfg.Topology, own)
	}
	cfg.Topology = m.Topology
	if cfg.Profile != "" && m.Profile != "" && cfg.Profile != m.Profile {
		return cfg, refuse("Config.Profile", cfg.Profile, m.Profile)
	}
	if m.Profile != "" {
		cfg.Profile = m.Profile
	}
	if n := planN(m); cfg.N != 0 && n != 0 && cfg.N != n {
		return cfg, refuse("Config.N", fmt.Sprint(cfg.N), fmt.Sprint(n))
	} else if n != 0 {
		cfg.N = n
	}
	if cfg.Seed != 0 && cfg.Seed != m.Seed {
		return cfg, refuse("Config.Seed", fmt.Sprint(cfg.Seed), fmt.Sprint(m.Seed))
	}
	cfg.Seed = m.Seed
	if cfg.Parallel != 0 && m.Parallel != 0 && cfg.Parallel != m.Parallel {
		return cfg, refuse("Config.Parallel", fmt.Sprint(cfg.Parallel), fmt.Sprint(m.Parallel))
	}
	if m.Parallel != 0 {
		cfg.Parallel = m.Parallel
	}
	if cfg.Workload.Name != "" && m.WorkloadName != "" && cfg.Workload.Name != m.WorkloadName {
		return cfg, refuse("Config.Workload", cfg.Workload.Name, m.WorkloadName)
	}
	return cfg, nil
}

// planN is the trials per arm a manifest plans (0 when it does not say).
func planN(m store.Manifest) int {
	if m.Plan != nil {
		return m.Plan.Units
	}
	n := 0
	for _, ts := range m.Trials {
		n = max(n, ts.Index)
	}
	return n
}

// manifest builds the run's manifest, or reads it back to resume.
func manifest(cfg Config) (store.Manifest, error) {
	path := filepath.Join(cfg.Dir, "manifest.json")
	if cfg.Resume {
		r, err := store.Open(cfg.Dir)
		if err != nil {
			return store.Manifest{}, err
		}
		m := r.Manifest
		// A resumed run keeps its plan: one whose digest is not its own
		// (the manifest edited since) is not resumed as that experiment.
		if err := m.CheckPlan(cfg.Dir); err != nil {
			return store.Manifest{}, err
		}
		switch {
		case m.Shards != nil:
			return store.Manifest{}, fmt.Errorf("%s is a merged run; resume its unfinished shards and merge them again", cfg.Dir)
		case cfg.Shard != (store.Shard{}) && (m.Shard == nil || *m.Shard != cfg.Shard):
			return store.Manifest{}, fmt.Errorf("Config.Shard %s: %s holds %s", cfg.Shard, cfg.Dir, shardName(m.Shard))
		}
		for i := range m.Trials {
			if m.Trials[i].Status == store.Interrupted {
				m.Trials[i].Status, m.Trials[i].Reason = store.Pending, ""
			}
		}
		return m, nil
	}
	if _, err := os.Stat(path); err == nil {
		return store.Manifest{}, fmt.Errorf("%s already holds a run; use Config.Resume %s or another Config.Dir", cfg.Dir, cfg.Dir)
	}
	// A new run goes into a new or empty folder, never among files that
	// are no part of it (the lock taken just before is its own).
	if err := store.CheckNewRunFolder(cfg.Dir); err != nil {
		return store.Manifest{}, fmt.Errorf("Config.Dir %w, and is not a run (no %s in it); name a new or empty folder", err, store.ManifestFile)
	}
	host, _ := os.Hostname()
	redacted := make([]arms.Arm, len(cfg.Arms))
	for i, a := range cfg.Arms {
		redacted[i] = a.Redacted()
	}
	armsYAML, _ := arms.Marshal(redacted)
	armsJSON, _ := json.Marshal(string(armsYAML))
	plan, clock, wl, err := newPlan(cfg)
	if err != nil {
		return store.Manifest{}, err
	}
	m := store.Manifest{Schema: store.ManifestSchema, WorkloadName: cfg.Workload.Name, ToolVersion: cfg.ToolVersion, Created: time.Now().UTC(), Host: host, Profile: cfg.Profile, Topology: cfg.Topology,
		CommandLine: redactArgs(cfg.CommandLine), Workload: wl, Arms: armsJSON, Seed: cfg.Seed, Target: cfg.Arms[0].Target}
	for _, a := range cfg.Arms {
		m.ArmList = append(m.ArmList, store.ArmInfo{Name: a.Name, Build: a.Build, Target: a.Target, Parameters: a.SetParameters})
		m.Simulated = m.Simulated || a.Embedded()
	}
	m.Clock = clock
	m.Plan = plan.Record()
	m.RunID = cfg.RunID
	if m.RunID == "" {
		if m.RunID, err = store.NewRunID(cfg.stamp(), m.Plan.Digest, m.Created); err != nil {
			return store.Manifest{}, err
		}
	}
	if cfg.Shard != (store.Shard{}) {
		m.Shard = &cfg.Shard
	}
	for _, t := range plan.Trials(cfg.Shard) {
		m.Trials = append(m.Trials, store.TrialStatus{Arm: t.Arm, Index: t.Index, Status: store.Pending})
	}
	return m, nil
}

// newPlan is the plan of a new run of cfg (defaults applied, workload
// scaled), the clock its trials run on, and its workload as the manifest
// records it.
func newPlan(cfg Config) (Plan, string, []byte, error) {
	wl, err := json.Marshal(cfg.Workload)
	if err != nil {
		return Plan{}, "", nil, err
	}
	clock := Wall
	for _, a := range cfg.Arms {
		if a.Embedded() && cfg.Clock == Virtual && cfg.Workload.SpillToDisk != nil {
			clock = Virtual
		}
	}
	plan, err := NewPlan(cfg.Arms, cfg.N, wl, clock, cfg.Seed)
	return plan, clock, wl, err
}

// stamp is the run's stamp: Config.RunStamp, else $QMLSAB_RUN_ID.
func (cfg Config) stamp() string {
	if cfg.RunStamp != "" {
		return cfg.RunStamp
	}
	return os.Getenv(store.RunIDEnv)
}

// NewRunID is the id a new run of cfg records (store.NewRunID): with a
// stamp (Config.RunStamp, else $QMLSAB_RUN_ID) the stamp and the digest of
// the run's plan, the same in every shard of it; without one, created's
// time and random digits. A caller that names the run's folder after the
// run (results/<run id>) passes the id on in Config.RunID, so that the
// folder and its manifest carry one id.
func NewRunID(cfg Config, created time.Time) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	cfg = cfg.withDefaults()
	cfg.Workload = cfg.Workload.Scaled(Profiles[cfg.Profile])
	plan, _, _, err := newPlan(cfg)
	if err != nil {
		return "", err
	}
	return store.NewRunID(cfg.stamp(), plan.Record().Digest, created)
}

// StampSeed is the seed of a run given a stamp and no seed: derived from
// the stamp (SHA-256, a number of at most 10 digits), so the shards of a
// night, and the night run again, draw alike, and every other night draws
// anew.
func StampSeed(stamp string) uint64 {
	sum := sha256.Sum256([]byte(stamp))
	return binary.BigEndian.Uint64(sum[:8])>>33 + 1
}

func shardName(s *store.Shard) string {
	if s == nil {
		return "a whole run, not a shard"
	}
	return "shard " + s.String()
}

func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		// A URI alone or as a flag's value (--history-db=mongodb://…),
		// in any case and however malformed.
		flag, value, isFlag := strings.Cut(a, "=")
		switch {
		case mongouri.HasScheme(a):
			a = arms.RedactURI(a)
		case isFlag && strings.HasPrefix(flag, "-") && mongouri.HasScheme(value):
			a = flag + "=" + arms.RedactURI(value)
		}
		out[i] = a
	}
	return out
}

// guard is which hosts the run's clients may connect to: the loopback
// range, unless the run allows remote targets.
func (cfg Config) guard() mongoclient.Guard { return mongoclient.Guard{AllowRemote: cfg.AllowRemote} }

// provision makes a trial's folder and deployment; without a deployment
// it says why the trial ended (interrupted, or invalid: a harness fault).
func provision(ctx context.Context, cfg Config, arm arms.Arm, index int) (dir string, dep target.Deployment, status, reason string) {
	dir = store.TrialDir(cfg.Dir, arm.Name, index)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, nil, resultsDiskFailed, writingResults + err.Error()
	}
	dep, err := target.Provision(ctx, arm, target.Options{Dir: dir, AllowRemote: cfg.AllowRemote, Logger: cfg.Log,
		Sim: cfg.Sim, SimMemLimitMB: cfg.SimMemLimitMB, Deadline: provisionDeadline})
	if err != nil {
		if ctx.Err() != nil {
			return dir, nil, store.Interrupted, ""
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return dir, nil, store.Invalid, fmt.Sprintf("provisioning: no reply in %s: %v", provisionDeadline, err)
		}
		return dir, nil, store.Invalid, "provisioning: " + err.Error()
	}
	showCapabilities(cfg, arm, dep)
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
func closeTrial(dep target.Deployment, status, reason *string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeDeadline)
	defer cancel()
	err := dep.Close(ctx)
	if err != nil && ctx.Err() != nil && *status == store.Valid {
		*status, *reason = store.Invalid, fmt.Sprintf("teardown: no reply in %s: %v", closeDeadline, err)
	}
}

// showCapabilities prints the provisioning table of an arm's deployment
// to cfg.Provisioning, the first time the run provisions that arm.
func showCapabilities(cfg Config, arm arms.Arm, dep target.Deployment) {
	if _, seen := cfg.shown.LoadOrStore(arm.Name, true); seen {
		return
	}
	server := "the server"
	if st := dep.Startup(); len(st) > 0 {
		server = st[0].Server() + ", " + st[0].Topology
	}
	fmt.Fprintf(cfg.Provisioning, "arm %s on %s: what will be measured\n%s", arm.Name, server, dep.Capabilities().Table())
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
func runTrial(ctx context.Context, cfg Config, arm arms.Arm, index int, seed uint64, report func(progress.Update)) (status, reason string) {
	dir, dep, status, reason := provision(ctx, cfg, arm, index)
	if dep == nil {
		return status, reason
	}
	defer closeTrial(dep, &status, &reason)
	watcher := &collect.PrimaryWatcher{}
	guard := cfg.guard()
	d := &workload.Driver{Spec: *cfg.Workload.SpillToDisk, URI: dep.URI(), Monitor: watcher.Monitor(), RealDocs: realDocs(arm), Guard: guard}
	sampler := &collect.Sampler{Members: dep.Members(), Interval: cfg.SampleInterval, Census: true, Guard: guard}
	meta := map[string]any{}
	if sh := target.ShardingOf(dep); sh != nil {
		// The storm goes through the routers to every shard: the storm's
		// collection is sharded, every shard's members and the routers are
		// sampled, each sample labelled with its shard.
		d.Sharded = true
		sampler.ShardOf, sampler.Routers = sh.ShardOf(), sh.Routers()
		meta["topology"], meta["shards"], meta["routers"] = arms.TopologySharded, sh.ShardOf(), sh.Routers()
	}
	report(progress.Update{Phase: "loading"})
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
		if actors, err = startKillOp(tctx, &bg, dep, guard, *k, cfg.Log, func(e store.Kill) { kmu.Lock(); kills = append(kills, e); kmu.Unlock() }, &rounds); err != nil {
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
		if at(start.Add(cfg.Workload.Duration())) {
			inTrial.Store(rounds.Load() - r0)
		}
	})
	var fmu sync.Mutex
	var extra []store.Event // faults applied, then topology changes
	for _, f := range cfg.Faults {
		bg.Go(func() {
			select {
			case <-tctx.Done():
				return
			case <-time.After(time.Until(start.Add(f.At))):
			}
			ev := store.Event{At: time.Now(), Kind: "fault", Fault: f.Name}
			if err := f.Do(tctx, dep); err != nil {
				ev.Err = err.Error()
			}
			fmu.Lock()
			extra = append(extra, ev)
			fmu.Unlock()
		})
	}
	wctx, cancelRun := context.WithTimeout(tctx, time.Until(start)+workloadDeadline(cfg.Workload.Duration()))
	res, err := d.Run(wctx, start, seed)
	expired := wctx.Err() != nil && tctx.Err() == nil
	cancelRun()
	stop()
	bg.Wait()
	report(progress.Update{Phase: "writing"})
	if ctx.Err() != nil {
		return store.Interrupted, ""
	}
	if expired {
		return store.Invalid, fmt.Sprintf("workload: operations still unanswered %s after the %s phases began", workloadDeadline(cfg.Workload.Duration()), phaseNames)
	}
	if err != nil {
		return store.Invalid, "workload: " + err.Error()
	}
	samples := fillGaps(cfg, dep, start, sampler.Samples()) // seconds the sampler missed, from diagnostic.data (gapfill.go)
	kmu.Lock()
	defer kmu.Unlock()
	trial := store.Trial{Schema: store.TrialSchema, Arm: arm.Name, Index: index, Started: start, Simulated: dep.Simulated(), Clock: Wall,
		Phases: map[string]float64{"warmup": 0, "storm": res.PhaseStarts["storm"].Sub(start).Seconds(), "recovery": res.PhaseStarts["recovery"].Sub(start).Seconds()},
	}
	rec := store.Records{Results: res, Samples: samples, Kills: kills, KillOpActor: arm.KillOp() != nil}
	// The driver's topology changes are failovers' third witness
	// (writeTrial).
	for _, c := range watcher.Changes() {
		extra = append(extra, store.Event{At: c.At, Kind: "topology", Member: c.Member})
	}
	for k, v := range map[string]any{"target": dep.Describe(), "members": dep.Startup(), "capabilities": dep.Capabilities(), "seed": seed, "clock": Wall} {
		meta[k] = v
	}
	trial.Metadata, _ = json.Marshal(meta)
	if status, reason := cfg.writeTrial(dir, trial, start, rec, extra...); status != store.Valid {
		return status, reason
	}
	if arm.Embedded() {
		// The embedded set lives in this process: when no member answers,
		// the host could not keep up, and the trial measured the harness.
		if lost, total := metric.Unreachable(samples), cfg.Workload.Duration(); lost > max(5*time.Second, total/10) {
			return store.Invalid, fmt.Sprintf("host saturated: no member of the in-process set answered serverStatus for %.0f s of %.0f s; run fewer trials at once (--parallel) or use --clock virtual",
				lost.Seconds(), total.Seconds())
		}
		// The killOp actor runs on this host too. On a quiet host it
		// decides at its interval's rate; one that decided at less than
		// four fifths of it was starved of CPU, and memory it would have
		// freed in time (a crash of D's set) measured the host.
		if k := arm.KillOp(); k != nil && inTrial.Load() >= 0 {
			total := cfg.Workload.Duration()
			if want := int64(actors) * int64(total/k.Interval); inTrial.Load() < want*4/5 {
				return store.Invalid, fmt.Sprintf("host saturated: the killOp actor%s decided %d times in the trial's %.0f s where its %v interval asks for %d; run fewer trials at once (--parallel) or use --clock virtual",
					actorsNote(actors), inTrial.Load(), total.Seconds(), k.Interval, want)
			}
		}
	}
	return store.Valid, ""
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
func phaseAt(ph workload.Phases, el time.Duration) string {
	switch {
	case el < ph.Warmup:
		return "warmup"
	case el < ph.Warmup+ph.Storm:
		return "storm"
	}
	return "recovery"
}

// finishedTrial reads what a finished trial wrote: whether its numbers
// came from mongosim, and its final availability and failovers for its
// last progress update (neither when it wrote no trial.json).
func finishedTrial(dir, arm string, index int) (simulated bool, final progress.Update) {
	b, err := store.ReadRunFile(filepath.Join(store.TrialDir(dir, arm, index), store.TrialFile), store.MaxTrialFileBytes)
	if err != nil {
		return false, final
	}
	var t struct {
		Simulated bool               `json:"simulated"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	if json.Unmarshal(b, &t) != nil {
		return false, final
	}
	if f, ok := t.Metrics[metric.Failovers]; ok {
		final.Failovers, final.HasFigures = int(f), true
		final.Availability, final.HasAvailability = t.Metrics[metric.Availability]
	}
	return t.Simulated, final
}

// writingResults begins the reason of a trial whose files could not be
// written: the results disk failed, and the run stops.
const writingResults = "writing results: "

// resultsDiskFailed is the status a trial function returns when the run
// folder could not take the trial's files (a full or read-only results
// disk): a fault of the harness, not of the trial. Execute stops the run
// and records the trial interrupted, so that --resume runs it again; it
// is never written to a manifest.
const resultsDiskFailed = "results disk failed"

// writeTrial computes a finished trial's metrics (and why any is absent)
// from its records and writes its files, trial.json last: a trial folder
// without trial.json is unfinished. A trial whose records measured a
// server that cannot run the workload is invalid (metric.Validity). Extra events are those the records do not hold (injected
// faults, the driver's topology changes).
func (cfg Config) writeTrial(dir string, trial store.Trial, start time.Time, rec store.Records, extra ...store.Event) (status, reason string) {
	metric.Fill(&trial, rec)
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
		end := rec.PhaseStarts["end"]
		if start.IsZero() || !end.After(start) {
			return store.Invalid, fmt.Sprintf("harness: the trial's window is unknown (start %s, end %s)", start.Format(time.RFC3339), end.Format(time.RFC3339))
		}
		// Failovers have a third witness beside the samples' two
		// (metric.PrimaryChanges): the driver's topology monitoring, which
		// sees a flip between two samples. All count the same changes, so
		// the largest count is the best one.
		topology := 0
		for _, ev := range extra {
			if ev.Kind == "topology" {
				topology++
			}
		}
		files.Trial.Metrics[metric.Failovers] = max(trial.Metrics[metric.Failovers], float64(topology))
		files.Trial.Victims = metric.VictimSummary(rec.Results, rec.Kills)
		files.Series = metric.PerSecond(rec.Samples, start, end)
		files.Storm, files.Canaries = rec.Storm, rec.Canaries
		files.Outcomes = metric.Outcomes(start, rec.Results)
		files.Events = metric.Events(rec.PhaseStarts, rec.Samples, rec.Kills, extra...)
	}
	if err := cfg.writeFiles(dir, files); err != nil {
		return resultsDiskFailed, writingResults + err.Error()
	}
	if why := metric.Validity(rec); why != "" {
		return store.Invalid, why
	}
	return store.Valid, ""
}
