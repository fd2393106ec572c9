package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/internal/specdiff"
	"github.com/qmlsab/qmlsab/store"
)

// Trial is one finished trial of an input.
type Trial struct {
	Run    string       // the run folder it came from
	Dir    string       // its own folder
	Status store.Status // valid or invalid
	Reason string
	// Host is the ID of the host that ran it (Input.Hosts).
	Host string
	store.Trial
}

// Input is what a report is made from: one or more run folders of the
// same workload (nightly history, say).
type Input struct {
	Dirs      []string
	Manifests []store.Manifest
	Workload  store.WorkloadHead
	// Arms in order of first appearance (the first is the default
	// baseline).
	Arms      []string
	Trials    map[string][]Trial // by arm, valid and invalid
	Simulated bool
	Clock     store.Clock
	// Parallel is how many trials ran at once on a host (0: not
	// recorded, or not one number across the runs).
	Parallel int
	// Unfinished counts trials the manifests list as pending or
	// interrupted: a run still writing, or one stopped early.
	Unfinished int
	// Planned and Finished count the runs' trials as store.Completion
	// does: every trial a run's plan (or manifest) holds, and those that
	// finished, valid or invalid. Planned above Finished is an incomplete
	// run: unfinished trials, or whole shards missing.
	Planned, Finished int
	// Hosts are the machines that ran the trials, in order of first
	// appearance.
	Hosts []store.Host
	// Runs counts the experiments the folders hold: shard folders of one
	// plan are one run.
	Runs int
	// Notes are caveats of the combination (shards missing or
	// unfinished).
	Notes []string
	// Servers name the implementations and versions that answered, as the
	// trials' startup checks recorded them ("FerretDB 1.24.2 (reports
	// version 7.0.42), standalone"), in order of first appearance; empty
	// when no trial recorded one.
	Servers []string
}

// trialServers reads the servers a trial's metadata records.
func trialServers(meta json.RawMessage) []string {
	var m struct {
		Members []struct {
			Version        string `json:"version"`
			Implementation string `json:"implementation"`
			Topology       string `json:"topology"`
		} `json:"members"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return nil
	}
	var out []string
	for _, mem := range m.Members {
		if mem.Implementation == "" {
			continue // recorded before the implementation was
		}
		version := cmp.Or(mem.Version, "version not reported")
		s := "mongod " + version
		if mem.Implementation != "mongod" {
			s = mem.Implementation + " (reports version " + version + ")"
		}
		if mem.Topology != "" {
			s += ", " + mem.Topology
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Load reads run folders. Folders of different workloads (or different
// settings of one) are refused with the reason; a bad file is named.
func Load(dirs []string) (*Input, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no run folder given")
	}
	in := &Input{Trials: map[string][]Trial{}}
	var firstWL []byte
	firstArms, firstArmDir := map[string]json.RawMessage{}, map[string]string{}
	shards := map[string][]*store.Run{} // by plan digest
	var digests []string
	for _, dir := range dirs {
		r, err := store.Open(dir)
		if err != nil {
			return nil, err
		}
		m := r.Manifest
		if m.Shard != nil && m.Plan != nil {
			if shards[m.Plan.Digest] == nil {
				digests = append(digests, m.Plan.Digest)
			}
			shards[m.Plan.Digest] = append(shards[m.Plan.Digest], r)
		} else {
			in.Runs++
			in.countCompletion([]*store.Run{r})
		}
		for _, name := range m.ArmNames() {
			if !slices.Contains(in.Arms, name) {
				in.Arms = append(in.Arms, name)
			}
		}
		var spec store.WorkloadHead
		var whole any
		if err := json.Unmarshal(m.Workload, &spec); err != nil || spec.Kind == "" || json.Unmarshal(m.Workload, &whole) != nil {
			return nil, fmt.Errorf("%s: workload: not a workload this qmlsab reads (%v)", filepath.Join(dir, store.ManifestFile), err)
		}
		wl, _ := json.Marshal(whole) // canonical: keys sorted
		if firstWL == nil {
			firstWL, in.Workload = wl, spec
		} else if !bytes.Equal(wl, firstWL) {
			return nil, fmt.Errorf("%s: its workload differs from %s's: %s: runs are combined only when their workloads match",
				filepath.Join(dir, store.ManifestFile), dirs[0], keysDiffer(firstWL, wl, spec.Kind, in.Workload.Name, spec.Name))
		}
		defs, err := ArmDefinitions(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, store.ManifestFile), err)
		}
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			first, ok := firstArms[name]
			if !ok {
				firstArms[name], firstArmDir[name] = defs[name], dir
				continue
			}
			ch, err := specdiff.Diff(first, defs[name], specdiff.Options{Ignore: []string{"build"}})
			if err == nil && len(ch) > 0 {
				return nil, fmt.Errorf("%s: arm %s is defined otherwise than in %s: %s: runs are combined only when their arms of one name are defined alike",
					filepath.Join(dir, store.ManifestFile), name, firstArmDir[name], specdiff.Describe(ch, 4))
			}
		}
		in.Dirs = append(in.Dirs, dir)
		in.Manifests = append(in.Manifests, m)
		in.Simulated = in.Simulated || m.Simulated
		if len(in.Manifests) == 1 {
			in.Clock, in.Parallel = m.Clock, m.Parallel
		} else if m.Clock != in.Clock {
			// Model seconds and wall seconds are different measurements.
			return nil, fmt.Errorf("%s: its trials ran on the %s clock, %s's on the %s clock: runs are combined only when their clocks match",
				dir, clockName(m.Clock), dirs[0], clockName(in.Clock))
		} else if m.Clock == store.ClockWall && m.Parallel != 0 && in.Parallel != 0 && m.Parallel != in.Parallel {
			return nil, fmt.Errorf("%s: ran %d wall-clock trials at once, %s ran %d: runs are combined only when measured under the same conditions",
				dir, m.Parallel, dirs[0], in.Parallel)
		} else if m.Parallel != in.Parallel {
			in.Parallel = 0 // virtual trials: parallelism does not move a figure
		}
		for _, ts := range m.Trials {
			if !slices.Contains(in.Arms, ts.Arm) {
				in.Arms = append(in.Arms, ts.Arm)
			}
			t, ok := r.Trial(ts.Arm, ts.Index)
			switch {
			case !ok && ts.Status == store.Invalid:
				// Failed before it wrote anything: listed, with its reason.
				t = store.Trial{Arm: ts.Arm, Index: ts.Index}
			case !ok:
				in.Unfinished++
				continue
			}
			h := m.HostOf(ts)
			if !slices.ContainsFunc(in.Hosts, func(x store.Host) bool { return x.ID == h.ID }) {
				in.Hosts = append(in.Hosts, h)
			}
			in.Trials[ts.Arm] = append(in.Trials[ts.Arm], Trial{Run: dir, Dir: store.TrialDir(dir, ts.Arm, ts.Index),
				Status: ts.Status, Reason: ts.Reason, Host: h.ID, Trial: t})
			// A local target running cmd/mongosim is as simulated as the
			// embedded one: any simulated trial makes the report say so.
			in.Simulated = in.Simulated || t.Simulated
			for _, srv := range trialServers(t.Metadata) {
				if !slices.Contains(in.Servers, srv) {
					in.Servers = append(in.Servers, srv)
				}
			}
		}
	}
	// Shard folders of one plan are one run: they must fit together (no
	// shard or trial twice), and what is missing is said.
	group := map[string]int{} // run folder → the position of its run
	for i, dir := range dirs {
		group[dir] = i
	}
	for _, d := range digests {
		set, err := store.CheckShards(shards[d], 0)
		if err != nil {
			return nil, err
		}
		in.Runs++
		in.countCompletion(shards[d])
		in.Notes = append(in.Notes, set.Problems()...)
		for _, r := range shards[d] {
			group[r.Dir] = group[shards[d][0].Dir]
		}
	}
	unifyHosts(in)
	// Each run's trials in index order (a plan's order within a shard
	// group), so shards read like the run they are parts of.
	for _, ts := range in.Trials {
		slices.SortStableFunc(ts, func(a, b Trial) int {
			if c := group[a.Run] - group[b.Run]; c != 0 {
				return c
			}
			return a.Index - b.Index
		})
	}
	return in, nil
}

// countCompletion adds one run's planned and finished trials (a shard
// group is one run).
func (in *Input) countCompletion(runs []*store.Run) {
	finished, planned := store.Completion(runs)
	in.Finished += finished
	in.Planned += planned
}

// Incomplete says, when the runs have not finished every planned trial,
// how far they got ("7 of 10 planned trials finished"); "" when they have.
func (in *Input) Incomplete() string {
	if in.Finished >= in.Planned {
		return ""
	}
	return fmt.Sprintf("%d of %d planned trials finished", in.Finished, in.Planned)
}

// Invalid counts the finished trials that are invalid (harness faults).
func (in *Input) Invalid() int {
	n := 0
	for _, ts := range in.Trials {
		for _, t := range ts {
			if t.Status != store.Valid {
				n++
			}
		}
	}
	return n
}

// Conditions says what the trials ran under, for a reader: the clock and
// how many trials ran at once on a host (which matters on the wall clock,
// where trials at once share the host's CPUs).
func (in *Input) Conditions() string {
	var parts []string
	switch in.Clock {
	case store.ClockVirtual:
		parts = append(parts, "virtual clock (model time, no wire)")
	case store.ClockWall:
		parts = append(parts, "wall clock")
	}
	switch {
	case in.Parallel == 1:
		parts = append(parts, "one trial at a time")
	case in.Parallel > 1:
		parts = append(parts, fmt.Sprintf("%d trials at once per host", in.Parallel))
	default:
		parts = append(parts, "trials at once: not recorded")
	}
	return strings.Join(parts, ", ")
}

// clockName is how a manifest's clock reads in a message.
func clockName(c store.Clock) string {
	if c == "" {
		return "unrecorded"
	}
	return string(c)
}

// Valid are an arm's valid trials.
func (in *Input) Valid(arm string) []Trial {
	var out []Trial
	for _, t := range in.Trials[arm] {
		if t.Status == store.Valid {
			out = append(out, t)
		}
	}
	return out
}

// keysDiffer names the keys in which two workloads (canonical JSON)
// differ: "storm_rate 271.5 → 320", the kind's own section named without
// its kind; their names, when the keys cannot be read.
func keysDiffer(a, b []byte, kind, aName, bName string) string {
	ch, err := specdiff.Diff(a, b, specdiff.Options{Strip: kind})
	if err != nil || len(ch) == 0 {
		return fmt.Sprintf("workload %s, then %s", aName, bName)
	}
	return specdiff.Describe(ch, 4)
}

// ArmDefinitions are the arms' definitions a manifest records (its arms
// YAML, as a JSON string), by name; none in a manifest without them.
func ArmDefinitions(m store.Manifest) (map[string]json.RawMessage, error) {
	if len(m.Arms) == 0 {
		return nil, nil
	}
	var doc string
	if err := json.Unmarshal(m.Arms, &doc); err != nil {
		return nil, fmt.Errorf("arms: not the arms YAML a run records: %w", err)
	}
	return specdiff.Arms(doc)
}

// Newest is the run folder under root whose manifest was created last
// (for `qmlsab report` without a folder), as store.NewestRun finds it:
// by the creation time the manifest records, not by name, so a folder
// named my-baseline does not shadow the runs after it. Equal times go to
// the name sorting last; folders whose manifest cannot be read are passed
// over, and named when no folder is left.
func Newest(root string) (string, error) { return store.NewestRun(root) }

// unifyHosts takes a host known only by its hostname (a run written
// before fingerprints) to be the one fingerprinted host of that hostname,
// when there is exactly one.
func unifyHosts(in *Input) {
	same := map[string]string{} // placeholder ID → fingerprinted ID
	for _, h := range in.Hosts {
		if !strings.HasPrefix(h.ID, "hostname:") {
			continue
		}
		var match []string
		for _, f := range in.Hosts {
			if !strings.HasPrefix(f.ID, "hostname:") && f.Hostname == h.Hostname {
				match = append(match, f.ID)
			}
		}
		if len(match) == 1 {
			same[h.ID] = match[0]
		}
	}
	if len(same) == 0 {
		return
	}
	in.Hosts = slices.DeleteFunc(in.Hosts, func(h store.Host) bool { return same[h.ID] != "" })
	for _, ts := range in.Trials {
		for i := range ts {
			if id, ok := same[ts[i].Host]; ok {
				ts[i].Host = id
			}
		}
	}
}
