// Package arms defines what an A/B experiment compares: an arm is a name, a
// build, server parameters and client-side actors. The built-in arms are
// the investigations' A/B arms.
package arms

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/arms/killop"
)

// baseParameters are the sweeper investigation's Atlas M50 settings shared by every arm:
// execution control deprioritizes operations after 3 admissions (what sends
// the storm's aggregations to the low-priority queue).
//
// The blocking sort's spill limit and two admission settings the
// investigation did not report are fitted unknowns (qmlsab calibrate --fit; docs/model.md gives their ranges): the
// probing floor (throughputProbingMinConcurrency; the investigation saw
// the read pool held at ~10–14 tickets, mongod's default floor is 4) and
// the low-priority read pool (executionControlConcurrentReadLowPriorityTransactions;
// mongod's default is the number of CPUs, 8 on an M50).
var baseParameters = map[string]string{
	"executionControlDeprioritizationGate": "true",
	// The investigation saw the primary's read pool at 128 tickets before
	// the storm: both pools start at probing's maximum (mongod's own
	// start is 2 × the cores over both pools).
	"throughputProbingInitialConcurrency":                   "256",
	"internalQueryMaxBlockingSortMemoryUsageBytes":          FittedSortLimit,
	"throughputProbingMinConcurrency":                       FittedProbingFloor,
	"executionControlConcurrentReadLowPriorityTransactions": FittedLowPriorityTickets,
}

// The joint fit's admission settings (qmlsab calibrate --fit): see
// baseParameters.
const (
	FittedProbingFloor       = "6"
	FittedLowPriorityTickets = "5"
	// FittedSortLimit is the sort's spill limit, fitted between Atlas's
	// 32 MiB (seen in explain output from Atlas clusters) and mongod's
	// default 100 MiB.
	FittedSortLimit = "41943040" // 40 MiB
)

// FittedHazard is E's build variant: the shedder hazard form the joint fit
// selects from D's and E's observations (simShedHazard; docs/model.md).
// Master's form ("odds") is arm M's; at the nearest point under conserved
// spill I/O the fit selects it for E too, so E and M are the same there.
const FittedHazard = "odds"

func with(extra map[string]string) map[string]string {
	m := maps.Clone(baseParameters)
	maps.Copy(m, extra)
	return m
}

// StormAppName is the workload's appName, the killOp actor's scope.
const StormAppName = "qmlsab-storm"

// Builtin returns the built-in arms A, D, E, M, F and G. E's, F's and G's
// build (6ab306ad) sheds with the hazard form the joint fit selects from E's
// observed flows (FittedHazard); M is the same marks on master's formula.
func Builtin() []Arm {
	master := map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70"}
	shedder := maps.Clone(master)
	shedder["simShedHazard"] = FittedHazard
	sweeper := maps.Clone(shedder)
	sweeper["queryMemoryLoadSheddingSweepQueuedOps"] = "true"
	latch := maps.Clone(sweeper)
	latch["queryMemoryLoadSheddingWriteStartedLatch"] = "true"
	d := killop.Default(StormAppName)
	return []Arm{
		{Name: "A", Description: "base build, no shedding", Build: "472d159296b6", Target: TargetEmbedded, SetParameters: with(nil)},
		{Name: "D", Description: "base build + killOp actor (mongotune-style)", Build: "472d159296b6", Target: TargetEmbedded, SetParameters: with(nil),
			Actors: []Actor{{KillOp: &d}}},
		{Name: "E", Description: "in-server inline shedder, static 30/70 marks (build variant: " + FittedHazard + " hazard, fitted)", Build: "6ab306ad", Target: TargetEmbedded, SetParameters: with(shedder)},
		{Name: "M", Description: "master's inline shedder (odds hazard), E's marks: what E would do with master's formula", Build: "master", Target: TargetEmbedded, SetParameters: with(master)},
		{Name: "F", Description: "E + queued-op sweeper (the sweeper investigation's fix)", Build: "6ab306ad+sweeper", Target: TargetEmbedded, SetParameters: with(sweeper)},
		{Name: "G", Description: "F + write-started flag (the partial-write investigation's fix)", Build: "6ab306ad+sweeper+latch", Target: TargetEmbedded, SetParameters: with(latch)},
	}
}

// Select resolves --arms names against the arms of a file (when given) and
// the built-ins, in the order asked.
func Select(names []string, fromFile []Arm) ([]Arm, error) {
	var out []Arm
	for _, n := range names {
		n = strings.TrimSpace(n)
		if slices.ContainsFunc(out, func(a Arm) bool { return a.Name == n }) {
			// Two arms of one name would share a trial folder and be
			// reported as one arm of twice the trials.
			return nil, fmt.Errorf("arm %q is named twice; name each arm once", n)
		}
		i := slices.IndexFunc(fromFile, func(a Arm) bool { return a.Name == n })
		switch {
		case i >= 0:
			out = append(out, fromFile[i])
		default:
			a, ok := Lookup(n)
			if !ok {
				var known []string
				for _, a := range append(fromFile, Builtin()...) {
					if !slices.Contains(known, a.Name) {
						known = append(known, a.Name)
					}
				}
				// Arm names are case-sensitive: d is no arm, D is.
				if i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, n) }); i >= 0 {
					return nil, fmt.Errorf("unknown arm %q; did you mean %q? (arm names are case-sensitive; known: %s)", n, known[i], strings.Join(known, ", "))
				}
				return nil, fmt.Errorf("unknown arm %q (known: %s)", n, strings.Join(known, ", "))
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// Lookup returns the built-in arm with that name.
func Lookup(name string) (Arm, bool) {
	for _, a := range Builtin() {
		if a.Name == name {
			return a, true
		}
	}
	return Arm{}, false
}
