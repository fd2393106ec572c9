// Package arms defines what an A/B experiment compares: an arm is a name, a
// build, server parameters and client-side actors. The built-in arms are
// the seed documents' A/B arms.
package arms

import (
	"maps"

	"github.com/qmlsab/qmlsab/arms/killop"
)

// Arm is one configuration under test.
type Arm struct {
	Name          string
	Description   string
	Build         string
	SetParameters map[string]string
	KillOp        *killop.Config
}

// baseParameters are the seed's Atlas M50 settings shared by every arm:
// execution control deprioritizes operations after 3 admissions (what sends
// the storm's aggregations to the low-priority queue), and Atlas's 32 MiB
// blocking-sort limit.
var baseParameters = map[string]string{
	"executionControlDeprioritizationGate":         "true",
	"internalQueryMaxBlockingSortMemoryUsageBytes": "33554432",
}

func with(extra map[string]string) map[string]string {
	m := maps.Clone(baseParameters)
	maps.Copy(m, extra)
	return m
}

// StormAppName is the workload's appName, the killOp actor's scope.
const StormAppName = "qmlsab-storm"

// Builtin returns the built-in arms A, D, E, F and G.
func Builtin() []Arm {
	shedder := map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70"}
	sweeper := maps.Clone(shedder)
	sweeper["queryMemoryLoadSheddingSweepQueuedOps"] = "true"
	latch := maps.Clone(sweeper)
	latch["queryMemoryLoadSheddingWriteStartedLatch"] = "true"
	d := killop.Default(StormAppName)
	return []Arm{
		{Name: "A", Description: "base build, no shedding", Build: "472d159296b6", SetParameters: with(nil)},
		{Name: "D", Description: "base build + killOp actor (mongotune-style)", Build: "472d159296b6", SetParameters: with(nil), KillOp: &d},
		{Name: "E", Description: "in-server inline shedder, static 30/70 marks", Build: "6ab306ad", SetParameters: with(shedder)},
		{Name: "F", Description: "E + queued-op sweeper (seed 000's fix)", Build: "6ab306ad+sweeper", SetParameters: with(sweeper)},
		{Name: "G", Description: "F + write-started flag (seed 003's fix)", Build: "6ab306ad+sweeper+latch", SetParameters: with(latch)},
	}
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
