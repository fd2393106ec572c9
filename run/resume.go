package run

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
)

// Given is what a resume is given besides its folder: arms that supply
// what the manifest's record of them lacks, and conditions its caller
// states (the flags of a command line given again), each of which must be
// the run's own. A resumed run keeps its experiment: nothing given
// changes it.
type Given struct {
	// Arms are arms given for the run's arms (resumeArms): each must be
	// one of them, defined as the run records it, and supplies what the
	// record lacks (a uri arm's credentials).
	Arms []arms.Arm
	// AllArms says Arms name every arm of the run (a command line's
	// --arms): a run with others than those is refused.
	AllArms bool
	// Defined are definitions offered for the run's arms (an arms
	// file's): those of the run's arms are given as Arms are; the others
	// are not the run's, and are left out.
	Defined []arms.Arm
	// The conditions stated: nil is not stated; one stated otherwise
	// than the run was started with is refused, naming its field.
	N        *int
	Seed     *uint64
	Clock    *store.Clock
	Profile  *string
	Topology *string
	// Workload is a workload's name.
	Workload *string
}

// Resume completes the unfinished run in dir: it locks the folder, reads
// its manifest and finished trials once, rebuilds the experiment the
// manifest records (with the arms given, which must be its own, for what
// the record lacks), and runs the trials still pending or interrupted.
// x.Parallel and x.Shard, when set, must be the run's own. The outcome is
// the folder as the run left it, also when the run stopped (a *Stopped
// error).
func Resume(ctx context.Context, dir string, x Exec, g Given) (*Outcome, error) {
	x = x.withDefaults()
	defer x.Progress.Close()
	r, lock, err := store.Reopen(dir)
	if err != nil {
		return nil, field.Errorf(FieldResume, nil, "%w", err)
	}
	defer lock.Release()
	if err := lock.RemoveStaleTemporaries(); err != nil {
		return nil, err
	}
	e, m, err := resumed(r, x, g)
	if err != nil {
		return nil, err
	}
	return execute(ctx, &execution{exp: e, exec: x, dir: dir, resumed: true}, m, r.Trials)
}

// resumed is the experiment a run folder's manifest records, and the
// manifest with its interrupted trials pending again, after every check
// a resume makes: the plan's digest is its own, the folder is not a
// merge, the conditions stated and x's shard and parallelism are the
// run's, and the arms are.
func resumed(r *store.Run, x Exec, g Given) (Experiment, store.Manifest, error) {
	m, dir := r.Manifest, r.Dir
	mpath := filepath.Join(dir, store.ManifestFile)
	// A resumed run keeps its plan: one whose digest is not its own (the
	// manifest edited since) is not resumed as that experiment.
	if err := m.CheckPlan(dir); err != nil {
		return Experiment{}, m, err
	}
	if m.Shards != nil {
		return Experiment{}, m, fmt.Errorf("%s is a merged run; resume its unfinished shards and merge them again", dir)
	}
	if x.Shard != (plan.Shard{}) && (m.Shard == nil || *m.Shard != x.Shard) {
		return Experiment{}, m, field.Errorf(FieldShard, x.Shard, "%s holds %s", dir, shardName(m.Shard))
	}
	e := Experiment{n: planN(m), profile: m.Profile, clock: m.Clock, topology: m.Topology, seed: m.Seed}
	if e.clock == "" {
		e.clock = store.ClockWall // written before the virtual clock, and clocks, were
	}
	if err := json.Unmarshal(m.Workload, &e.workload); err != nil {
		return Experiment{}, m, fmt.Errorf("%s: workload: %w", mpath, err)
	}
	if err := e.workload.Validate(); err != nil {
		return Experiment{}, m, fmt.Errorf("%s: workload: %w", mpath, err)
	}
	var err error
	if e.sim, e.simMemLimitMB, err = simFrom(m.Sim); err != nil {
		return Experiment{}, m, fmt.Errorf("%s: sim: %w", mpath, err)
	}
	if m.Plan != nil {
		e.plan = &plan.Plan{Arms: m.Plan.Arms, Units: plan.Units(m.Plan.Arms, m.Plan.Units, m.Seed), Digest: m.Plan.Digest}
	}
	if err := e.checkExec(x); err != nil {
		return Experiment{}, m, err
	}
	if err := checkStated(dir, e, m, x, g); err != nil {
		return Experiment{}, m, err
	}
	given, err := givenArms(r, g)
	if err != nil {
		return Experiment{}, m, err
	}
	if e.arms, err = resumeArms(given, r); err != nil {
		return Experiment{}, m, err
	}
	for _, ts := range m.Trials {
		if !slices.ContainsFunc(e.arms, func(a arms.Arm) bool { return a.Name == ts.Arm }) {
			return Experiment{}, m, fmt.Errorf("%s: the run has trials of arm %q, which is not among the arms it records", mpath, ts.Arm)
		}
	}
	m.Trials = slices.Clone(m.Trials)
	for i := range m.Trials {
		if m.Trials[i].Status == store.Interrupted {
			m.Trials[i].Status, m.Trials[i].Reason = store.Pending, ""
		}
	}
	return e, m, nil
}

// checkStated refuses a condition stated otherwise than the run was
// started with, naming its field: finishing a run under other conditions
// would mix two experiments in one report.
func checkStated(dir string, e Experiment, m store.Manifest, x Exec, g Given) error {
	refuse := func(f string, given, own any) error {
		return field.Errorf(f, given, "%v %v: %s was started with %v %v; a resumed run keeps its conditions (leave %v out, or start a new run)",
			field.Ref(f), given, dir, field.Ref(f), own, field.Ref(f))
	}
	switch {
	case g.Clock != nil && m.Clock != "" && *g.Clock != m.Clock:
		return refuse(FieldClock, *g.Clock, m.Clock)
	case g.Topology != nil && *g.Topology != m.Topology:
		own := m.Topology
		if own == "" {
			own = "(none: each arm's own)"
		}
		return refuse(FieldTopology, *g.Topology, own)
	case g.Profile != nil && m.Profile != "" && *g.Profile != m.Profile:
		return refuse(FieldProfile, *g.Profile, m.Profile)
	case g.N != nil && e.n != 0 && *g.N != e.n:
		return refuse(FieldN, *g.N, e.n)
	case g.Seed != nil && *g.Seed != m.Seed:
		return refuse(FieldSeed, *g.Seed, m.Seed)
	case x.Parallel != 0 && m.Parallel != 0 && x.Parallel != m.Parallel:
		return refuse(FieldParallel, x.Parallel, m.Parallel)
	case g.Workload != nil && m.WorkloadName != "" && *g.Workload != m.WorkloadName:
		return refuse(FieldWorkload, *g.Workload, m.WorkloadName)
	}
	return nil
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

func shardName(s *plan.Shard) string {
	if s == nil {
		return "a whole run, not a shard"
	}
	return "shard " + s.String()
}

// givenArms are the arms g gives for the run: its Arms (with AllArms,
// exactly the run's), and those of its Defined that are the run's.
func givenArms(r *store.Run, g Given) ([]arms.Arm, error) {
	own := r.Manifest.ArmNames()
	given := slices.Clone(g.Arms)
	if g.AllArms {
		var names []string
		for _, a := range g.Arms {
			names = append(names, a.Name)
		}
		if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(own))) {
			return nil, field.Errorf(FieldArms, strings.Join(names, ","), "the run in %s has the arms %s; a resumed run runs the arms it started with (leave %v out)",
				r.Dir, strings.Join(own, ","), field.Ref(FieldArms))
		}
	}
	for _, a := range g.Defined {
		if slices.Contains(own, a.Name) && !slices.ContainsFunc(given, func(b arms.Arm) bool { return b.Name == a.Name }) {
			given = append(given, a)
		}
	}
	return given, nil
}

// resumeArms are the arms a resumed run runs: exactly those its manifest
// records (their resolved definitions: build, target, parameters,
// actors, topology), so that every trial of an arm ran the same arm. An
// arm given (the arms file given again, say) must be one of them and run
// alike (arms.Differences), or the resume is refused naming the arm and
// each field that differs; it then supplies what the record lacks, a uri
// arm's credentials, which the manifest holds redacted: such an arm
// cannot run from the record alone, and is refused unless given.
func resumeArms(given []arms.Arm, r *store.Run) ([]arms.Arm, error) {
	m := r.Manifest
	mpath := filepath.Join(r.Dir, store.ManifestFile)
	var doc string
	if len(m.Arms) == 0 {
		return nil, fmt.Errorf("%s records no arm definitions, so a resume could not run the arms it started with; start a new run", mpath)
	}
	if err := json.Unmarshal(m.Arms, &doc); err != nil {
		return nil, fmt.Errorf("%s: arms: %w", mpath, err)
	}
	recorded, err := arms.Parse(mpath+" (arms)", []byte(doc))
	if err != nil {
		return nil, fmt.Errorf("the arms %s records: %w", mpath, err)
	}
	// The run's topology applies to every arm, recorded or given.
	recorded = onTopology(recorded, m.Topology)
	given = onTopology(given, m.Topology)
	var names []string
	for _, a := range recorded {
		names = append(names, a.Name)
	}
	for _, g := range given {
		i := slices.IndexFunc(recorded, func(a arms.Arm) bool { return a.Name == g.Name })
		if i < 0 {
			return nil, field.Errorf(FieldArms, nil, "arm %s is not one of the arms of the run in %s (%s); a resumed run runs the arms it started with",
				g.Name, r.Dir, strings.Join(names, ", "))
		}
		diff, err := arms.Differences(recorded[i], g)
		if err != nil {
			return nil, err
		}
		if len(diff) > 0 {
			return nil, field.Errorf(FieldArms, nil, "arm %s is not the arm %s records (%s); a resumed run runs the arms it started with, so finishing it with another definition would mix two arms under one name: resume with the arms file the run was started with, or without one (the recorded arms run)",
				g.Name, mpath, strings.Join(diff, "; "))
		}
	}
	var out []arms.Arm
	for _, rec := range recorded {
		a := rec
		if i := slices.IndexFunc(given, func(g arms.Arm) bool { return g.Name == rec.Name }); i >= 0 {
			a = given[i]
		} else if arms.NeedsCredentials(rec) {
			return nil, field.Errorf(FieldDefined, nil, "arm %s: %s records its uri with the credentials redacted (%s), so the record alone cannot connect; give the arms file that defines %s again (%v FILE)",
				rec.Name, mpath, rec.URI, rec.Name, field.Ref(FieldDefined))
		}
		if err := ranAs(a, r); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ranAs refuses an arm that would run on a replica set when its finished
// trials ran on a sharded cluster: a manifest written before qmlsab
// recorded an arm's topology records an arms file's sharded arm as a
// replica set. A uri arm is sharded as discovered, so its trials say
// nothing of its definition.
func ranAs(a arms.Arm, r *store.Run) error {
	if a.IsSharded() || a.Target == arms.TargetURI || r == nil {
		return nil
	}
	for _, t := range r.Trials[a.Name] {
		var meta struct {
			Topology string `json:"topology"`
		}
		if json.Unmarshal(t.Metadata, &meta) == nil && meta.Topology == arms.TopologySharded {
			return fmt.Errorf("arm %s: its trial %d ran on a sharded cluster, but %s records the arm as a replica set (a manifest written before qmlsab recorded an arm's topology); finish the run with the qmlsab that started it, or start a new run",
				a.Name, t.Index, filepath.Join(r.Dir, store.ManifestFile))
		}
	}
	return nil
}
