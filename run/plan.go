package run

import (
	"fmt"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// PlanSchema versions the plan's canonical form (store.PlanSchema).
const PlanSchema = store.PlanSchema

// Plan is an experiment's deterministic schedule: a list of units, unit k
// (0-based) being repetition block k+1 — every arm's trial of index k+1,
// once each, in an order drawn from the run seed — to be run on one host,
// so whatever differs between hosts falls on all arms alike. The same
// arms, n, workload, clock and seed always give the same plan, on any
// machine; its Digest identifies it.
type Plan struct {
	Arms   []string
	Units  [][]PlannedTrial
	Digest string
}

// PlannedTrial is one trial of a plan and its seed.
type PlannedTrial = store.PlannedTrial

// TrialSeed is the seed of a trial (store.TrialSeed).
func TrialSeed(runSeed uint64, armPos, nArms, index int) uint64 {
	return store.TrialSeed(runSeed, armPos, nArms, index)
}

// NewPlan is the plan of n trials of each arm (in the order given, the
// baseline first) of a resolved workload on a clock, from a run seed.
func NewPlan(armList []arms.Arm, n int, workloadJSON []byte, clock string, seed uint64) (Plan, error) {
	p := Plan{}
	for _, a := range armList {
		p.Arms = append(p.Arms, a.Name)
	}
	p.Units = store.PlanUnits(p.Arms, n, seed)
	redacted := make([]arms.Arm, len(armList))
	for i, a := range armList {
		redacted[i] = a.Redacted()
	}
	armsYAML, err := arms.Marshal(redacted)
	if err != nil {
		return Plan{}, fmt.Errorf("plan: arms: %w", err)
	}
	if p.Digest, err = store.PlanDigest(workloadJSON, string(armsYAML), clock, seed, p.Units); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// Record is the plan as a manifest records it.
func (p Plan) Record() *store.Plan {
	return &store.Plan{Digest: p.Digest, Units: len(p.Units), Arms: p.Arms}
}

// Trials are a shard's trials in run order (all of them for the zero
// Shard): its units, each in its block order.
func (p Plan) Trials(s store.Shard) []PlannedTrial {
	var out []PlannedTrial
	for k, unit := range p.Units {
		if s.Count == 0 || s.Has(k) {
			out = append(out, unit...)
		}
	}
	return out
}

// seeds are the seeds of a manifest's trials: each from the run seed, the
// trial's index and its arm's place in the plan (or, for a run made before
// plans, in its arm list, whose trials ran interleaved in that order).
func seeds(m store.Manifest) map[string]uint64 {
	names := m.ArmNames()
	if m.Plan != nil && len(m.Plan.Arms) > 0 {
		names = m.Plan.Arms
	}
	out := map[string]uint64{}
	for pos, a := range names {
		for _, ts := range m.Trials {
			if ts.Arm == a {
				out[fmt.Sprint(a, "#", ts.Index)] = TrialSeed(m.Seed, pos, len(names), ts.Index)
			}
		}
	}
	return out
}
