package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/plan"
)

// A run's plan as its manifest records it, the shards of one plan and
// the hosts that ran them: what lets one experiment be split across
// machines and put back together. The plan itself (its units, seeds,
// digest and shards) is package plan's.

// Plan is a run's deterministic schedule (package plan), as the manifest
// records it: its digest, its number of units and its arms in plan
// order. Two folders with the same Digest are parts of one experiment.
type Plan struct {
	// Digest is the SHA-256 (hex) of the plan's canonical form
	// (plan.Digest): the resolved workload, the arms, n, the seed, the
	// clock and every unit's trials in order with their seeds.
	Digest string `json:"digest"`
	// Units is the whole plan's number of units (n).
	Units int `json:"units"`
	// Arms in plan order (the baseline first): a trial's seed is the run
	// seed + (index−1)·len(Arms) + the arm's position here (plan.Seed).
	Arms []string `json:"arms"`
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
	units := plan.Units(m.Plan.Arms, m.Plan.Units, m.Seed)
	digest, err := plan.Digest(plan.Conditions{Workload: m.Workload, Arms: armsYAML, Clock: string(m.Clock), Sim: m.Sim}, m.Seed, units)
	if err != nil {
		return fmt.Errorf("%s: %w", mpath, err)
	}
	if digest == m.Plan.Digest {
		return nil
	}
	return fmt.Errorf("%s: its plan digest %.12s is not the digest of the plan it records (workload, arms, clock, seed %d, %d units): the manifest was edited after its plan was made, so it is refused",
		mpath, m.Plan.Digest, m.Seed, m.Plan.Units)
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
	Dir     string     `json:"dir"`
	Shard   plan.Shard `json:"shard"`
	Created time.Time  `json:"created"`
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
		sh := plan.Shard{Index: i, Count: s.Count}
		out = append(out, fmt.Sprintf("shard %s is missing (its units %s: no folder given holds them)", sh, unitList(sh.Units(s.Plan.Units))))
	}
	for _, r := range s.Runs {
		if names := s.Unfinished[r.Dir]; len(names) > 0 {
			out = append(out, fmt.Sprintf("%s: shard %s is unfinished: %d of its %d trials not run (%s); resume it to complete it",
				r.Dir, r.Manifest.Shard, len(names), len(r.Manifest.Trials), strings.Join(names, " ")))
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
			return nil, fmt.Errorf("%s is a whole run, not a shard (it ran all of its plan); only shards of one plan merge", r.Dir)
		}
		wl, err := plan.CanonicalJSON(m.Workload)
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
		if fp := first.Manifest.Parallel; m.Clock == ClockWall && m.Parallel != 0 && fp != 0 && m.Parallel != fp {
			// Wall-clock trials at once share their host's CPUs: shards run
			// at other parallelism measured under other conditions.
			return nil, fmt.Errorf("%s: ran %d wall-clock trials at once, but %s ran %d: its figures were measured under other conditions",
				r.Dir, m.Parallel, first.Dir, fp)
		}
		if expect > 0 && m.Shard.Count != expect {
			return nil, field.Errorf(FieldExpect, expect, "%s: shard %s, but %v %d shards", r.Dir, m.Shard, field.Ref(FieldExpect), expect)
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
			key := plan.Key(ts.Arm, ts.Index)
			if !m.Shard.Has(plan.Unit(ts.Index)) || plan.Unit(ts.Index) >= m.Plan.Units {
				return nil, fmt.Errorf("%s: trial %s is not in shard %s's units (%s)", mpath, key, m.Shard, unitList(m.Shard.Units(m.Plan.Units)))
			}
			if d, ok := trialDir[key]; ok {
				return nil, fmt.Errorf("trial %s is in both %s and %s (a trial given twice)", key, d, r.Dir)
			}
			trialDir[key] = r.Dir
			if ts.Status != Valid && ts.Status != Invalid {
				set.Unfinished[r.Dir] = append(set.Unfinished[r.Dir], key+" "+string(ts.Status))
			}
		}
		for _, k := range m.Shard.Units(m.Plan.Units) {
			for _, arm := range m.Plan.Arms {
				if trialDir[plan.Key(arm, k+1)] != r.Dir {
					return nil, fmt.Errorf("%s: shard %s lacks trial %s of its unit %d", mpath, m.Shard, plan.Key(arm, k+1), k+1)
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
