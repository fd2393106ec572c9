package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A run's plan, its shards and the hosts that ran them: what lets one
// experiment be split across machines and put back together.

// Plan is a run's deterministic schedule, as the manifest records it. The
// plan is a list of units: unit k (0-based) is repetition block k+1, that
// is every arm's trial with index k+1, in a seeded order (run.NewPlan).
// Two folders with the same Digest are parts of one experiment.
type Plan struct {
	// Digest is the SHA-256 (hex) of the plan's canonical form: the
	// resolved workload, the arms, n, the seed, the clock and every
	// unit's trials in order with their seeds.
	Digest string `json:"digest"`
	// Units is the whole plan's number of units (n).
	Units int `json:"units"`
	// Arms in plan order (the baseline first): a trial's seed is the run
	// seed + (index−1)·len(Arms) + the arm's position here.
	Arms []string `json:"arms"`
}

// PlanSchema versions the plan's canonical form (what its digest hashes).
const PlanSchema = "qmlsab/plan/v1"

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

// PlanUnits are the n units of a plan of these arms (in plan order, the
// baseline first) from a run seed: unit k is every arm's trial of index
// k+1, in its block order, each with its seed.
func PlanUnits(armNames []string, n int, seed uint64) [][]PlannedTrial {
	var units [][]PlannedTrial
	for k := range n {
		var unit []PlannedTrial
		for _, pos := range blockOrder(seed, k, len(armNames)) {
			unit = append(unit, PlannedTrial{Arm: armNames[pos], Index: k + 1, Seed: TrialSeed(seed, pos, len(armNames), k+1)})
		}
		units = append(units, unit)
	}
	return units
}

// PlanDigest is the SHA-256 (hex) of a plan's canonical form: the
// resolved workload (JSON, keys sorted), the redacted arms as their YAML
// (what a manifest's Arms holds), the clock, n, the seed and the units.
// It is the one place the digest is made: run makes a new plan's here,
// and CheckPlan recomputes a recorded one here.
func PlanDigest(workloadJSON []byte, armsYAML, clock string, seed uint64, units [][]PlannedTrial) (string, error) {
	wl, err := CanonicalJSON(workloadJSON)
	if err != nil {
		return "", fmt.Errorf("plan: workload: %w", err)
	}
	canonical, err := json.Marshal(struct {
		Schema   string           `json:"schema"`
		Workload json.RawMessage  `json:"workload"`
		Arms     string           `json:"arms"`
		Clock    string           `json:"clock"`
		N        int              `json:"n"`
		Seed     uint64           `json:"seed"`
		Units    [][]PlannedTrial `json:"units"`
	}{PlanSchema, wl, armsYAML, clock, len(units), seed, units})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// CheckPlan recomputes the digest of the manifest's plan from what the
// manifest records of it (workload, arms, clock, seed, the plan's arms and
// n) and refuses a plan whose recorded digest is not that one: a manifest
// edited by hand (another seed, say) is not taken for a part of the
// experiment its digest names. A manifest without a plan passes. The
// error names the manifest file of dir.
func (m Manifest) CheckPlan(dir string) error {
	if m.Plan == nil {
		return nil
	}
	mpath := filepath.Join(dir, ManifestFile)
	var armsYAML string
	if len(m.Arms) > 0 {
		if err := json.Unmarshal(m.Arms, &armsYAML); err != nil {
			return fmt.Errorf("%s: arms: %w", mpath, err)
		}
	}
	units := PlanUnits(m.Plan.Arms, m.Plan.Units, m.Seed)
	digest, err := PlanDigest(m.Workload, armsYAML, m.Clock, m.Seed, units)
	if err != nil {
		return fmt.Errorf("%s: %w", mpath, err)
	}
	if digest == m.Plan.Digest {
		return nil
	}
	return fmt.Errorf("%s: its plan digest %.12s is not the digest of the plan it records (workload, arms, clock, seed %d, %d units): the manifest was edited after its plan was made, so it is refused",
		mpath, m.Plan.Digest, m.Seed, m.Plan.Units)
}

// Unit is the plan unit a trial of this index belongs to (0-based).
func Unit(index int) int { return index - 1 }

// Shard names one part of a plan: the units k with k mod Count =
// Index−1 (Index is 1-based).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

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

// Host is a machine that ran trials: what differs between hosts and can
// move a figure. ID is a digest of the other fields.
type Host struct {
	ID          string `json:"id"`
	Hostname    string `json:"hostname"`
	CPUModel    string `json:"cpu_model,omitempty"`
	Cores       int    `json:"cores,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	// Target is the kind of deployment the trials ran on (embedded,
	// local, uri; several joined by ",").
	Target string `json:"target,omitempty"`
}

// WithID returns h with its ID: the first 12 hex digits of the SHA-256
// of its other fields, in hostIdentity's form.
func (h Host) WithID() Host {
	b, _ := json.Marshal(hostIdentity{Hostname: h.Hostname, CPUModel: h.CPUModel, Cores: h.Cores,
		MemoryBytes: h.MemoryBytes, Kernel: h.Kernel, Target: h.Target})
	sum := sha256.Sum256(b)
	h.ID = hex.EncodeToString(sum[:6])
	return h
}

// hostIdentity is the form a host's ID digests, frozen as the v1 format
// wrote hosts (its keys and their order), so that a machine keeps its ID
// across format versions: a run resumed or merged with a newer qmlsab
// still sees one host, not two.
type hostIdentity struct {
	ID          string `json:"id"` // always empty: the ID is not part of itself
	Hostname    string `json:"hostname"`
	CPUModel    string `json:"cpuModel,omitempty"`
	Cores       int    `json:"cores,omitempty"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	Target      string `json:"target,omitempty"`
}

// ShardSource is one shard a merged run was made from.
type ShardSource struct {
	Dir     string    `json:"dir"`
	Shard   Shard     `json:"shard"`
	Created time.Time `json:"created"`
	// Hosts are the IDs of the hosts that ran its trials.
	Hosts []string `json:"hosts"`
	// Trials are how many finished trials it gave.
	Trials int `json:"trials"`
}

// HostOf is the host that ran a trial: the manifest's host of that ID,
// or, for a run written before hosts were recorded, one named by the
// manifest's hostname alone.
func (m Manifest) HostOf(ts TrialStatus) Host {
	for _, h := range m.Hosts {
		if h.ID == ts.Host {
			return h
		}
	}
	if ts.Host != "" {
		return Host{ID: ts.Host, Hostname: ts.Host}
	}
	return Host{ID: "hostname:" + m.Host, Hostname: m.Host}
}

// AddHost records h among the manifest's hosts once.
func (m *Manifest) AddHost(h Host) {
	for _, x := range m.Hosts {
		if x.ID == h.ID {
			return
		}
	}
	m.Hosts = append(m.Hosts, h)
}

// CanonicalJSON re-encodes a JSON document with object keys sorted, so
// two encodings of one value compare equal.
func CanonicalJSON(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// trialKey names a trial of a run.
func trialKey(arm string, index int) string { return arm + "#" + strconv.Itoa(index) }

// unitList is "2, 5" (1-based unit numbers, as people count them).
func unitList(units []int) string {
	var s []string
	for _, k := range units {
		s = append(s, strconv.Itoa(k+1))
	}
	return strings.Join(s, ", ")
}

// ShardSet is shard folders of one plan, checked to fit together.
type ShardSet struct {
	Plan  Plan
	Count int
	// Runs are the shards, by shard index.
	Runs []*Run
	// Missing are the shard indexes no folder holds.
	Missing []int
	// Unfinished are the shards with trials pending or interrupted, with
	// those trials' names.
	Unfinished map[string][]string
}

// Problems are what a partial set lacks, each naming the shard, the
// folder or the units: empty when the set is whole.
func (s *ShardSet) Problems() []string {
	var out []string
	for _, i := range s.Missing {
		sh := Shard{Index: i, Count: s.Count}
		out = append(out, fmt.Sprintf("shard %s is missing (its units %s: no folder given holds them)", sh, unitList(sh.Units(s.Plan.Units))))
	}
	for _, r := range s.Runs {
		if names := s.Unfinished[r.Dir]; len(names) > 0 {
			out = append(out, fmt.Sprintf("%s: shard %s is unfinished: %d of its %d trials not run (%s); complete it with: qmlsab run --resume %s",
				r.Dir, r.Manifest.Shard, len(names), len(r.Manifest.Trials), strings.Join(names, " "), r.Dir))
		}
	}
	return out
}

// CheckShards checks that run folders are shards of one plan that fit
// together: every folder is a shard of a plan, all of the same plan and
// workload and shard count (expect, when not 0), no shard or trial given
// twice, every trial in a unit of its shard, every plan's digest the one
// its manifest's plan gives (CheckPlan). What is merely missing
// (shards, unfinished trials) is left in the set's Problems for the
// caller to refuse or warn about. Errors name the folder.
func CheckShards(runs []*Run, expect int) (*ShardSet, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("no shard folder given")
	}
	set := &ShardSet{Unfinished: map[string][]string{}}
	var firstWL []byte
	byIndex := map[int]*Run{}
	trialDir := map[string]string{}
	for _, r := range runs {
		m := r.Manifest
		mpath := filepath.Join(r.Dir, ManifestFile)
		switch {
		case m.Shards != nil:
			return nil, fmt.Errorf("%s is a merged run, not a shard: give the shard folders it was merged from", r.Dir)
		case m.Plan == nil:
			return nil, fmt.Errorf("%s: no plan in its manifest (a run made before plans existed); only shards of one plan merge", mpath)
		case m.Shard == nil:
			return nil, fmt.Errorf("%s is a whole run, not a shard (made without --shard); only shards of one plan merge", r.Dir)
		}
		wl, err := CanonicalJSON(m.Workload)
		if err != nil {
			return nil, fmt.Errorf("%s: workload: %w", mpath, err)
		}
		first := runs[0]
		if firstWL == nil {
			firstWL, set.Plan, set.Count = wl, *m.Plan, m.Shard.Count
		} else if string(wl) != string(firstWL) {
			return nil, fmt.Errorf("%s: workload %s differs from %s's (%s): it is a shard of another experiment",
				r.Dir, m.WorkloadName, first.Dir, first.Manifest.WorkloadName)
		} else if m.Plan.Digest != set.Plan.Digest {
			return nil, fmt.Errorf("%s: plan %.12s differs from %s's plan %.12s (another seed, n, arms or clock): it is a shard of another experiment",
				r.Dir, m.Plan.Digest, first.Dir, set.Plan.Digest)
		}
		if fp := first.Manifest.Parallel; m.Clock == "wall" && m.Parallel != 0 && fp != 0 && m.Parallel != fp {
			// Wall-clock trials at once share their host's CPUs: shards run
			// at other parallelism measured under other conditions.
			return nil, fmt.Errorf("%s: ran %d wall-clock trials at once, but %s ran %d: its figures were measured under other conditions",
				r.Dir, m.Parallel, first.Dir, fp)
		}
		if expect > 0 && m.Shard.Count != expect {
			return nil, fmt.Errorf("%s: shard %s, but MergeOptions.Expect %d shards", r.Dir, m.Shard, expect)
		}
		if m.Shard.Count != set.Count {
			return nil, fmt.Errorf("%s: shard %s of a split into %d, but %s is shard %s", r.Dir, m.Shard, m.Shard.Count, first.Dir, first.Manifest.Shard)
		}
		if m.Shard.Index < 1 || m.Shard.Index > m.Shard.Count {
			return nil, fmt.Errorf("%s: shard %s is not a shard index", mpath, m.Shard)
		}
		if other, ok := byIndex[m.Shard.Index]; ok {
			return nil, fmt.Errorf("%s and %s are both shard %s (a shard given twice)", other.Dir, r.Dir, m.Shard)
		}
		byIndex[m.Shard.Index] = r
		for _, ts := range m.Trials {
			key := trialKey(ts.Arm, ts.Index)
			if !m.Shard.Has(Unit(ts.Index)) || Unit(ts.Index) >= m.Plan.Units {
				return nil, fmt.Errorf("%s: trial %s is not in shard %s's units (%s)", mpath, key, m.Shard, unitList(m.Shard.Units(m.Plan.Units)))
			}
			if d, ok := trialDir[key]; ok {
				return nil, fmt.Errorf("trial %s is in both %s and %s (a trial given twice)", key, d, r.Dir)
			}
			trialDir[key] = r.Dir
			if ts.Status != Valid && ts.Status != Invalid {
				set.Unfinished[r.Dir] = append(set.Unfinished[r.Dir], key+" "+ts.Status)
			}
		}
		for _, k := range m.Shard.Units(m.Plan.Units) {
			for _, arm := range m.Plan.Arms {
				if trialDir[trialKey(arm, k+1)] != r.Dir {
					return nil, fmt.Errorf("%s: shard %s lacks trial %s of its unit %d", mpath, m.Shard, trialKey(arm, k+1), k+1)
				}
			}
		}
	}
	// Each plan's digest is recomputed, not trusted (after the checks
	// between shards, whose refusals say more).
	for _, r := range runs {
		if err := r.Manifest.CheckPlan(r.Dir); err != nil {
			return nil, err
		}
	}
	if expect == 0 {
		expect = set.Count
	}
	for i := 1; i <= expect; i++ {
		if r, ok := byIndex[i]; ok {
			set.Runs = append(set.Runs, r)
		} else {
			set.Missing = append(set.Missing, i)
		}
	}
	return set, nil
}
