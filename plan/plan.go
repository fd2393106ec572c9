// Package plan is an experiment's deterministic schedule: which trials it
// runs, in what order, with which seeds, and how it splits across hosts.
// The plan is a list of units: unit k (0-based) is repetition block k+1,
// every arm's trial of index k+1 once each, in an order drawn from the run
// seed, so whatever drifts during a run (or differs between hosts) falls
// on all arms alike. A shard is a set of whole units run on one host.
//
// The same arms, n, seed and conditions (the resolved workload, the arms'
// definitions, the clock) always give the same plan, on any machine and
// Go version, and its Digest identifies it: two run folders with one
// digest are parts of one experiment. Both the run layer, which makes a
// plan, and the results store, which checks and merges the folders of
// one, use this package; it depends on neither.
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Schema versions the plan's canonical form (what its digest hashes).
const Schema = "qmlsab/plan/v1"

// Trial is one trial of a plan and its seed.
type Trial struct {
	Arm   string `json:"arm"`
	Index int    `json:"index"`
	Seed  uint64 `json:"seed"`
}

// Key names a trial of a run as people and every table of qmlsab name
// it: the arm, '#', the index (E#3).
func Key(arm string, index int) string { return arm + "#" + strconv.Itoa(index) }

// Seed is the seed of the trial of this index (1-based) of the arm at
// position armPos of nArms: the run seed plus the trial's place in the
// interleaved order D1 E1 D2 E2 …, as every run has seeded its trials.
// A trial's seed does not depend on when it runs, or on which shard.
func Seed(runSeed uint64, armPos, nArms, index int) uint64 {
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

// Units are the n units of a plan of these arms (in plan order, the
// baseline first) from a run seed: unit k is every arm's trial of index
// k+1, in its block order, each with its seed.
func Units(armNames []string, n int, seed uint64) [][]Trial {
	var units [][]Trial
	for k := range n {
		var unit []Trial
		for _, pos := range blockOrder(seed, k, len(armNames)) {
			unit = append(unit, Trial{Arm: armNames[pos], Index: k + 1, Seed: Seed(seed, pos, len(armNames), k+1)})
		}
		units = append(units, unit)
	}
	return units
}

// Unit is the unit a trial of this index belongs to (0-based).
func Unit(index int) int { return index - 1 }

// Conditions are what a plan's digest covers besides its arms' names, n,
// seed and units: the experiment as its manifest records it.
type Conditions struct {
	// Workload is the resolved workload as JSON (any key order).
	Workload []byte
	// Arms are the arms' definitions, redacted, as YAML.
	Arms string
	// Clock is the clock the trials run on.
	Clock string
	// Sim is the embedded target's simulated machine as JSON, when it is
	// not the default one (nil: the default, which the digest leaves out,
	// so a plan's digest is what it was before machines were recorded).
	Sim []byte
}

// Digest is the SHA-256 (hex) of a plan's canonical form: the schema, the
// conditions (JSON with keys sorted), n, the seed and the units. It is
// the one place a digest is made: a new plan's (New), and a recorded
// one's recomputed to check it.
func Digest(c Conditions, seed uint64, units [][]Trial) (string, error) {
	wl, err := CanonicalJSON(c.Workload)
	if err != nil {
		return "", fmt.Errorf("plan: workload: %w", err)
	}
	var sim json.RawMessage
	if len(c.Sim) > 0 {
		if sim, err = CanonicalJSON(c.Sim); err != nil {
			return "", fmt.Errorf("plan: simulated machine: %w", err)
		}
	}
	canonical, err := json.Marshal(struct {
		Schema   string          `json:"schema"`
		Workload json.RawMessage `json:"workload"`
		Arms     string          `json:"arms"`
		Clock    string          `json:"clock"`
		Sim      json.RawMessage `json:"sim,omitempty"`
		N        int             `json:"n"`
		Seed     uint64          `json:"seed"`
		Units    [][]Trial       `json:"units"`
	}{Schema, wl, c.Arms, c.Clock, sim, len(units), seed, units})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalJSON re-encodes a JSON document with object keys sorted, so
// two encodings of one value compare equal (and digest alike).
func CanonicalJSON(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Plan is an experiment's schedule: its arms in plan order (the baseline
// first), its units and its digest.
type Plan struct {
	Arms   []string
	Units  [][]Trial
	Digest string
}

// New is the plan of n trials of each of these arms (in plan order, the
// baseline first) from a run seed, under conditions c.
func New(armNames []string, n int, seed uint64, c Conditions) (Plan, error) {
	p := Plan{Arms: armNames, Units: Units(armNames, n, seed)}
	var err error
	if p.Digest, err = Digest(c, seed, p.Units); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// Trials are a shard's trials in run order (all of them for the zero
// Shard): its units, each in its block order.
func (p Plan) Trials(s Shard) []Trial {
	var out []Trial
	for k, unit := range p.Units {
		if s.Count == 0 || s.Has(k) {
			out = append(out, unit...)
		}
	}
	return out
}

// Shard names one part of a plan: the units k with k mod Count =
// Index−1 (Index is 1-based). The zero Shard is the whole plan.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// ParseShard reads a shard written as String writes it, "i/N".
func ParseShard(text string) (Shard, error) {
	i, n, ok := strings.Cut(text, "/")
	a, err1 := strconv.Atoi(strings.TrimSpace(i))
	b, err2 := strconv.Atoi(strings.TrimSpace(n))
	if s := (Shard{Index: a, Count: b}); ok && err1 == nil && err2 == nil && s.Valid() {
		return s, nil
	}
	return Shard{}, fmt.Errorf("%q: want i/N with 1 ≤ i ≤ N", text)
}

// Valid reports whether s names a shard: 1 ≤ Index ≤ Count.
func (s Shard) Valid() bool { return s.Count >= 1 && s.Index >= 1 && s.Index <= s.Count }

// Has reports whether unit k is this shard's.
func (s Shard) Has(k int) bool { return s.Count > 0 && k >= 0 && k%s.Count == s.Index-1 }

// Units are this shard's units of a plan of n units.
func (s Shard) Units(n int) []int {
	var out []int
	for k := range n {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}
