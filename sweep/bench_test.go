package sweep

import (
	"context"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/benchhost"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// BenchmarkSweep runs a 2×2 sweep of D, E and F at the default profile on
// the host model (one seed: 12 trials of 4 model minutes, at 150 and 300
// queries/s) on every CPU. It reports trials per second of wall time, the
// process CPU per trial, and what a 3 arms × 100 cells × 3 seeds sweep
// takes on this many workers with the CPUs to itself (CPU per trial × 900
// ÷ workers): the wall rate alone swings with whatever else the machine
// runs. make bench prints both.
func BenchmarkSweep(b *testing.B) {
	base := virtual.DefaultConfig(1)
	base.Hardware = model.DefaultHardware()
	x, _ := ParseVary("host.otherBytes=512MiB,2GiB")
	y, _ := ParseVary("workload.stormRate=150,300")
	var list []arms.Arm
	for _, n := range []string{"D", "E", "F"} {
		a, _ := arms.Lookup(n)
		list = append(list, a)
	}
	cfg := Config{Arms: list, Base: base, Seed: 1, Seeds: 1, Axes: []Axis{x, y}}
	restore := TuneGC()
	defer restore()
	trials, secs, workers := 0, 0.0, 0
	cpu0 := benchhost.ProcessCPU()
	for b.Loop() {
		r, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		trials += r.Trials
		secs += r.WallSeconds
		workers = r.Parallel
	}
	cpuPerTrial := (benchhost.ProcessCPU() - cpu0).Seconds() / float64(trials)
	b.ReportMetric(float64(workers), "workers")
	b.ReportMetric(float64(trials)/secs, "trials/s")
	b.ReportMetric(cpuPerTrial, "cpu-s/trial")
	b.ReportMetric(cpuPerTrial*900/float64(workers), "s/900-trials-own-cpus")
	b.ReportMetric(900/(float64(trials)/secs), "s/900-trials-wall")
}
