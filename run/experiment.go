package run

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Fields of this package's input, as its errors name them
// (internal/field): a command maps each to the flag that sets it.
const (
	FieldArms     = "Spec.Arms"
	FieldN        = "Spec.N"
	FieldWorkload = "Spec.Workload"
	FieldProfile  = "Spec.Profile"
	FieldClock    = "Spec.Clock"
	FieldTopology = "Spec.Topology"
	FieldSeed     = "Spec.Seed"
	FieldParallel = "Exec.Parallel"
	FieldShard    = "Exec.Shard"
	// FieldDir is Run's folder, the new run's.
	FieldDir = "Run.dir"
	// FieldResume is Resume's folder, the run it completes.
	FieldResume = "Resume.dir"
	// FieldDefined are the arm definitions a resume is offered.
	FieldDefined = "Given.Defined"
)

// Spec describes an experiment, for NewExperiment to check and build. A
// zero field takes its documented default.
type Spec struct {
	// Arms are the arms to run, the baseline first.
	Arms []arms.Arm
	// N is the number of trials of each arm (at least one).
	N int
	// Workload is the workload as given; the experiment runs it with its
	// phases scaled by Profile.
	Workload workload.Spec
	// Profile scales the workload's phases (Profiles; "": default).
	Profile string
	// Clock is how embedded arms run: store.ClockVirtual (also ""; asked for by
	// name, every arm must be embedded) or store.ClockWall. Other targets always run
	// on the wall clock, as the merge workload does.
	Clock store.Clock
	// Topology, when set, is every arm's (arms.TopologySharded: each arm
	// runs on a sharded cluster, sized by its sharded: block or the
	// defaults); empty keeps each arm's own.
	Topology string
	// Seed seeds every random draw of the run (each trial's from it).
	Seed uint64
	// Sim is the embedded target's mongosim machine; zero fields take the
	// embedded M50's values (EmbeddedSim), on either clock.
	Sim mongosim.SimOptions
	// SimMemLimitMB is each embedded member's memory limit (0: the
	// model's default, 32 GiB).
	SimMemLimitMB int64
}

// Experiment is an experiment as a value: its arms, n, the workload as
// its trials run it (scaled by its profile), the clock, the topology, the
// simulated machine and the seed, and the plan they make — what a run's
// manifest records and its plan digests. NewExperiment builds one from a
// Spec, checking it there once; Resume reads one back from a manifest.
// It does not change once built (what its accessors return is a copy,
// apart from the maps and pointers inside an arm, which are not to be
// written).
type Experiment struct {
	arms          []arms.Arm
	n             int
	workload      workload.Spec // scaled
	profile       string
	clock         store.Clock // the clock its trials run on: store.ClockVirtual or store.ClockWall
	topology      string
	seed          uint64
	sim           mongosim.SimOptions
	simMemLimitMB int64
	// plan is the experiment's plan; nil for a run made before plans,
	// whose manifest lists its trials.
	plan *plan.Plan
}

// Profiles scale a workload's phases: quick is for CI and smoke tests,
// long for a nightly run that wants more storm per trial.
var Profiles = map[string]float64{"quick": 0.1, "default": 1, "long": 2}

// ProfileScale is a profile's phase scale; an unknown name is an error
// about FieldProfile.
func ProfileScale(name string) (float64, error) {
	f, ok := Profiles[name]
	if !ok {
		return 0, field.Errorf(FieldProfile, strconv.Quote(name), "want quick, default or long")
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

// simWithDefaults is s with every zero field at EmbeddedSim's value.
func simWithDefaults(s mongosim.SimOptions) mongosim.SimOptions {
	d := EmbeddedSim()
	s.CPUs = cmp.Or(s.CPUs, d.CPUs)
	s.BaselineMB = cmp.Or(s.BaselineMB, d.BaselineMB)
	s.ScanScale = cmp.Or(s.ScanScale, d.ScanScale)
	s.PartitionMB = cmp.Or(s.PartitionMB, d.PartitionMB)
	s.RestartDelay = cmp.Or(s.RestartDelay, mongosim.DefaultRestartDelay)
	s.OmitStatusSections, s.OmitHostInfo = slices.Clone(s.OmitStatusSections), slices.Clone(s.OmitHostInfo)
	return s
}

// onTopology returns the arms with the run's topology, when it has one
// (a copy: the caller's arms stay as they were).
func onTopology(in []arms.Arm, topology string) []arms.Arm {
	out := slices.Clone(in)
	if topology == "" {
		return out
	}
	for i := range out {
		out[i].Topology = topology
		if topology == arms.TopologySharded {
			out[i].Sharded = out[i].Sharded.WithDefaults()
		}
	}
	return out
}

// NewExperiment checks s and builds its experiment: the defaults applied,
// every arm on the topology, the workload scaled by the profile, each
// embedded arm's server parameters parsed, and the plan made. Every
// refusal is a *field.Error naming the Spec field it concerns.
func NewExperiment(s Spec) (Experiment, error) {
	asked := s.Clock
	s.Clock = cmp.Or(s.Clock, store.ClockVirtual)
	s.Profile = cmp.Or(s.Profile, "default")
	scale, err := ProfileScale(s.Profile)
	if err != nil {
		return Experiment{}, err
	}
	if err := s.check(); err != nil {
		return Experiment{}, err
	}
	e := Experiment{arms: onTopology(s.Arms, s.Topology), n: s.N, workload: s.Workload.Scaled(scale), profile: s.Profile,
		clock: trialClock(s.Arms, s.Clock, s.Workload), topology: s.Topology, seed: s.Seed,
		sim: simWithDefaults(s.Sim), simMemLimitMB: s.SimMemLimitMB}
	if err := e.checkArms(asked, s.Clock); err != nil {
		return Experiment{}, err
	}
	if err := e.checkTrialMemory(s.Clock); err != nil {
		return Experiment{}, err
	}
	c, err := e.conditions()
	if err != nil {
		return Experiment{}, err
	}
	names := make([]string, len(e.arms))
	for i, a := range e.arms {
		names[i] = a.Name
	}
	p, err := plan.New(names, e.n, e.seed, c)
	if err != nil {
		return Experiment{}, err
	}
	e.plan = &p
	return e, nil
}

// check refuses a Spec's settings that stand alone (NewExperiment checks
// the arms against them after).
func (s Spec) check() error {
	switch {
	case s.N < 1:
		return field.Errorf(FieldN, s.N, "at least one trial per arm")
	case len(s.Arms) == 0:
		return field.Errorf(FieldArms, nil, "no arms to run")
	case s.Clock != store.ClockVirtual && s.Clock != store.ClockWall:
		return field.Errorf(FieldClock, strconv.Quote(string(s.Clock)), "want %s or %s", store.ClockVirtual, store.ClockWall)
	case s.Topology != "" && s.Topology != arms.TopologyReplicaSet && s.Topology != arms.TopologySharded:
		return field.Errorf(FieldTopology, strconv.Quote(s.Topology), "want %s or %s", arms.TopologyReplicaSet, arms.TopologySharded)
	}
	if err := s.Workload.Validate(); err != nil {
		return field.Errorf(FieldWorkload, s.Workload.Name, "%w", err)
	}
	return nil
}

// checkArms refuses arms that cannot run the experiment: an arm asked to
// run in model time (asked is the Spec's clock as given) on another
// target than the embedded one, a sharded arm of a workload that does not
// run on a sharded cluster (or of the storm on the virtual clock, whose
// engine models one replica set), a local sharded arm without its mongos,
// and an embedded arm whose server parameters the model does not take
// (refused here, once, not in each of its trials).
func (e Experiment) checkArms(asked, clock store.Clock) error {
	for _, a := range e.arms {
		if asked == store.ClockVirtual && !a.Embedded() {
			return field.Errorf(FieldClock, asked, "arm %s runs on the %s target; only the embedded model can run in model time", a.Name, a.Target)
		}
		if a.IsSharded() && e.workload.Merge == nil && e.workload.SpillToDisk == nil {
			return field.Errorf(FieldTopology, arms.TopologySharded, "arm %s: %v %s does not run on a sharded cluster (spill_to_disk and merge_partial_write do)",
				a.Name, field.Ref(FieldWorkload), e.workload.Name)
		}
		if a.IsSharded() && e.workload.SpillToDisk != nil && a.Embedded() && clock == store.ClockVirtual {
			return field.Errorf(FieldClock, store.ClockVirtual, "with %v sharded (arm %s): the virtual clock's engine models one replica set, so the storm runs on an embedded sharded cluster only on the %s clock",
				field.Ref(FieldTopology), a.Name, store.ClockWall)
		}
		if a.IsSharded() && a.Target == arms.TargetLocal && a.Sharded.Mongos == "" {
			return field.Errorf(FieldTopology, arms.TopologySharded, "arm %s runs on the local target, which needs its sharded.mongos binary (an arms file's 'sharded: {mongos: <path>}')", a.Name)
		}
		if a.Embedded() {
			if _, err := model.ParamsFrom(a.SetParameters); err != nil {
				return field.Errorf(FieldArms, nil, "arm %s: %w", a.Name, err)
			}
		}
	}
	return nil
}

// checkTrialMemory refuses, before any trial starts, a virtual run whose
// trials would not fit their memory budget once the profile has scaled
// the phases (check held the workload as given to its bounds). asked is
// the clock as the Spec gave it: the budget binds trials run in this
// process on the virtual clock.
func (e Experiment) checkTrialMemory(asked store.Clock) error {
	if e.workload.SpillToDisk == nil || asked != store.ClockVirtual {
		return nil
	}
	w := e.workload.SpillToDisk
	need := w.TrialBytes()
	if need <= workload.MaxTrialHeapBytes {
		return nil
	}
	return field.Errorf(FieldWorkload, e.workload.Name, "%v %s with %v %s: the %v trial of canaryRate %v and stormRate %v over a %v storm needs ~%s a virtual trial, the budget is %s a trial; lower canaryRate, stormRate or the phases, or use a shorter %v",
		field.Ref(FieldWorkload), e.workload.Name, field.Ref(FieldProfile), e.profile, w.Phases.Total(), w.CanaryRate, w.StormRate, w.Phases.Storm,
		units.HumanBytes(float64(need)), units.HumanBytes(float64(workload.MaxTrialHeapBytes)), field.Ref(FieldProfile))
}

// trialClock is the clock the trials of these arms run on, given the
// clock asked for: the virtual one when an embedded arm runs the storm in
// model time, else the wall clock (other targets, and the merge workload,
// which always crosses the wire).
func trialClock(list []arms.Arm, clock store.Clock, w workload.Spec) store.Clock {
	if clock == store.ClockVirtual && w.SpillToDisk != nil && slices.ContainsFunc(list, arms.Arm.Embedded) {
		return store.ClockVirtual
	}
	return store.ClockWall
}

// simRecord is the simulated machine as a manifest records it
// (store.Manifest.Sim), when it is not the default one: mongosim's
// SimOptions, keyed as the results format keys (snake_case, durations
// in seconds), and the members' memory limit.
type simRecord struct {
	CPUs         int           `json:"cpus"`                           // the machine's CPUs
	BaselineMB   int64         `json:"baseline_mb,omitempty"`          // mongod's memory outside the cache and query memory
	DiskMBps     float64       `json:"disk_mbps,omitempty"`            // the disk's throughput
	RestartDelay store.Seconds `json:"restart_delay_s"`                // how long a killed member stays down
	ScanScale    float64       `json:"scan_scale"`                     // modelled documents per real document
	PartitionMB  int64         `json:"partition_mb"`                   // a partition a getMore loads
	Seed         uint64        `json:"seed,omitempty"`                 // the members' own draws
	MemLimitMB   int64         `json:"mem_limit_mb,omitempty"`         // each member's memory limit (absent: the model's)
	OmitStatus   []string      `json:"omit_status_sections,omitempty"` // serverStatus sections left out
	OmitHostInfo []string      `json:"omit_host_info,omitempty"`       // hostInfo.system fields left out
}

// simJSON is the experiment's simulated machine as its manifest records
// it: nil for the default machine (EmbeddedSim, the model's memory
// limit), which manifests have never recorded.
func (e Experiment) simJSON() ([]byte, error) {
	s := e.sim
	r := simRecord{CPUs: s.CPUs, BaselineMB: s.BaselineMB, DiskMBps: s.DiskMBps, RestartDelay: store.Seconds(s.RestartDelay), ScanScale: s.ScanScale,
		PartitionMB: s.PartitionMB, Seed: s.Seed, OmitStatus: s.OmitStatusSections, OmitHostInfo: s.OmitHostInfo, MemLimitMB: e.simMemLimitMB}
	d := simWithDefaults(mongosim.SimOptions{})
	if e.simMemLimitMB == 0 && len(s.OmitStatusSections) == 0 && len(s.OmitHostInfo) == 0 &&
		s.CPUs == d.CPUs && s.BaselineMB == d.BaselineMB && s.DiskMBps == d.DiskMBps && s.RestartDelay == d.RestartDelay &&
		s.ScanScale == d.ScanScale && s.PartitionMB == d.PartitionMB && s.Seed == d.Seed {
		return nil, nil
	}
	return json.Marshal(r)
}

// simFrom reads a manifest's simulated machine back (nil: the default).
func simFrom(raw json.RawMessage) (mongosim.SimOptions, int64, error) {
	if len(raw) == 0 {
		return simWithDefaults(mongosim.SimOptions{}), 0, nil
	}
	var r simRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return mongosim.SimOptions{}, 0, err
	}
	s := mongosim.SimOptions{CPUs: r.CPUs, BaselineMB: r.BaselineMB, DiskMBps: r.DiskMBps, RestartDelay: r.RestartDelay.Duration(), ScanScale: r.ScanScale,
		PartitionMB: r.PartitionMB, Seed: r.Seed, OmitStatusSections: r.OmitStatus, OmitHostInfo: r.OmitHostInfo}
	return simWithDefaults(s), r.MemLimitMB, nil
}

// recordedArms are the arms, redacted, as a manifest records them (YAML).
func recordedArms(list []arms.Arm) (string, error) {
	redacted := make([]arms.Arm, len(list))
	for i, a := range list {
		redacted[i] = a.Redacted()
	}
	y, err := arms.Marshal(redacted)
	if err != nil {
		return "", fmt.Errorf("arms: %w", err)
	}
	return string(y), nil
}

// conditions are what the experiment's plan digest covers besides its
// arms' names, n and seed: the experiment as its manifest records it.
func (e Experiment) conditions() (plan.Conditions, error) {
	wl, err := json.Marshal(e.workload)
	if err != nil {
		return plan.Conditions{}, err
	}
	armsYAML, err := recordedArms(e.arms)
	if err != nil {
		return plan.Conditions{}, err
	}
	sim, err := e.simJSON()
	if err != nil {
		return plan.Conditions{}, err
	}
	return plan.Conditions{Workload: wl, Arms: armsYAML, Clock: string(e.clock), Sim: sim}, nil
}

// Arms are the experiment's arms, the baseline first, each on the
// experiment's topology.
func (e Experiment) Arms() []arms.Arm { return slices.Clone(e.arms) }

// N is the number of trials of each arm.
func (e Experiment) N() int { return e.n }

// Workload is the workload as the trials run it (scaled by the profile).
func (e Experiment) Workload() workload.Spec { return e.workload.Scaled(1) }

// Profile is the profile that scaled the workload's phases ("" for a run
// made before profiles were recorded).
func (e Experiment) Profile() string { return e.profile }

// Clock is the clock the trials run on: store.ClockVirtual when the embedded model
// runs the storm in model time, else store.ClockWall.
func (e Experiment) Clock() store.Clock { return e.clock }

// Topology is every arm's topology ("": each arm's own).
func (e Experiment) Topology() string { return e.topology }

// Seed is the run seed.
func (e Experiment) Seed() uint64 { return e.seed }

// Plan is the experiment's plan, and whether it has one (a run made
// before plans has none).
func (e Experiment) Plan() (plan.Plan, bool) {
	if e.plan == nil {
		return plan.Plan{}, false
	}
	return *e.plan, true
}

// RunID is the id a new run of the experiment records (store.NewRunID):
// with a stamp, the stamp and the plan's digest, the same in every shard
// of it; without one, created's time and random digits. A caller that
// names the run's folder after the run passes the id on in Exec.RunID,
// so that the folder and its manifest carry one id.
func (e Experiment) RunID(stamp string, created time.Time) (string, error) {
	digest := ""
	if e.plan != nil {
		digest = e.plan.Digest
	}
	return store.NewRunID(stamp, digest, created)
}

// checkExec refuses execution options that cannot carry out e: a
// negative parallelism, a shard that is not one, or more shards than the
// plan has units.
func (e Experiment) checkExec(x Exec) error {
	switch {
	case x.Parallel < 0:
		return field.Errorf(FieldParallel, x.Parallel, "must not be negative")
	case x.Shard != (plan.Shard{}) && !x.Shard.Valid():
		return field.Errorf(FieldShard, x.Shard, "want i/N with 1 ≤ i ≤ N")
	case x.Shard.Count > e.n:
		return field.Errorf(FieldShard, x.Shard, "%v %s: the plan has %d units (one per trial of an arm, %v %d), so %d shards would leave some empty; split into at most %d",
			field.Ref(FieldShard), x.Shard, e.n, field.Ref(FieldN), e.n, x.Shard.Count, e.n)
	}
	return nil
}

// errNoArms is an experiment without arms (a zero Experiment).
var errNoArms = errors.New("the experiment has no arms (build it with NewExperiment)")

// defaultParallel is how many trials run at once: the configured number,
// else one per CPU for virtual-clock trials (pure computation: their
// figures are the same at any parallelism) and one at a time on the wall
// clock. Wall-clock trials at once share the host's CPUs, so each would
// measure the others as much as its server (docs/reliability.md, "Figures
// that could mislead", has what that did on 2 cores).
func (e Experiment) defaultParallel(parallel, trials int) int {
	if parallel > 0 {
		return parallel
	}
	if e.clock == store.ClockVirtual && e.workload.Merge == nil {
		return max(1, min(trials, runtime.GOMAXPROCS(0)))
	}
	return 1
}
