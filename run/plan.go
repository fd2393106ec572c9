package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// PlanSchema versions the plan's canonical form (what its digest hashes).
const PlanSchema = "qmlsab/plan/v1"

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
type PlannedTrial struct {
	Arm   string `json:"arm"`
	Index int    `json:"index"`
	Seed  uint64 `json:"seed"`
}

// TrialSeed is the seed of the trial of this index (1-based) of the arm at
// position armPos of nArms: the run seed plus the trial's place in the
// interleaved order D1 E1 D2 E2 …, as every run has seeded its trials.
// A trial's seed does not depend on when it runs, or on which shard.
func TrialSeed(runSeed uint64, armPos, nArms, index int) uint64 {
	return runSeed + uint64((index-1)*nArms+armPos)
}

// blockOrder is unit k's order of nArms arms: a Fisher-Yates shuffle
// driven by a PCG generator seeded with the run seed and the unit, so it
// is the same on every machine and Go version.
func blockOrder(seed uint64, k, nArms int) []int {
	rng := rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(k))
	p := make([]int, nArms)
	for i := range p {
		p[i] = i
	}
	for i := nArms - 1; i > 0; i-- {
		j := int(rng.Uint64() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// NewPlan is the plan of n trials of each arm (in the order given, the
// baseline first) of a resolved workload on a clock, from a run seed.
func NewPlan(armList []arms.Arm, n int, workloadJSON []byte, clock string, seed uint64) (Plan, error) {
	p := Plan{}
	for _, a := range armList {
		p.Arms = append(p.Arms, a.Name)
	}
	for k := range n {
		var unit []PlannedTrial
		for _, pos := range blockOrder(seed, k, len(p.Arms)) {
			unit = append(unit, PlannedTrial{Arm: p.Arms[pos], Index: k + 1, Seed: TrialSeed(seed, pos, len(p.Arms), k+1)})
		}
		p.Units = append(p.Units, unit)
	}
	wl, err := store.CanonicalJSON(workloadJSON)
	if err != nil {
		return Plan{}, fmt.Errorf("plan: workload: %w", err)
	}
	redacted := make([]arms.Arm, len(armList))
	for i, a := range armList {
		redacted[i] = a.Redacted()
	}
	armsYAML, err := arms.Marshal(redacted)
	if err != nil {
		return Plan{}, fmt.Errorf("plan: arms: %w", err)
	}
	canonical, err := json.Marshal(struct {
		Schema   string           `json:"schema"`
		Workload json.RawMessage  `json:"workload"`
		Arms     string           `json:"arms"`
		Clock    string           `json:"clock"`
		N        int              `json:"n"`
		Seed     uint64           `json:"seed"`
		Units    [][]PlannedTrial `json:"units"`
	}{PlanSchema, wl, string(armsYAML), clock, n, seed, p.Units})
	if err != nil {
		return Plan{}, err
	}
	sum := sha256.Sum256(canonical)
	p.Digest = hex.EncodeToString(sum[:])
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
