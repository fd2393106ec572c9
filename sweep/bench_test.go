package sweep

import (
	"context"
	"runtime"
	"testing"
	"time"

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

// BenchmarkEnsemble runs the default ensemble on the investigation's
// observations (calibrate --fit's defaults: at least 20 acceptable points ×
// 5 seeds for F and G) and, back to back, the single-point fit it
// replaced (Fit with calibrate --fit's defaults before issue 37: a
// 48-point hypercube, 12 compass polls, D and E on 2 seeds, D, E, M and F
// predicted on 5), each on every CPU. Each reports its wall seconds (the
// target: the ensemble in at most 2 minutes on this 2-core machine), its
// trials, its CPU seconds ÷ the workers (what it takes with the CPUs to
// itself) and the host's steal; the ensemble also its acceptable points,
// and it fails when it has fewer than 20 or a condition's share rests on
// fewer than 20 points × 5 seeds.
func BenchmarkEnsemble(b *testing.B) {
	b.Run("ensemble", func(b *testing.B) {
		spec, err := InvestigationEnsemble().Spec(InvestigationSource, "default")
		if err != nil {
			b.Fatal(err)
		}
		restore := TuneGC()
		defer restore()
		for b.Loop() {
			steal, cpu0, start := benchhost.ReadSteal(), benchhost.ProcessCPU(), time.Now()
			en, err := spec.RunOne(context.Background(), 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			secs := time.Since(start).Seconds()
			// What the default promises: at least MinAcceptable acceptable
			// points, and a share for each of F's and G's conditions.
			if n := len(en.Plan.Set.Points); n < spec.MinAcceptable || len(en.Predictions) != 2 {
				b.Fatalf("%d acceptable points (want at least %d), %d predicted arms (want F and G)", n, spec.MinAcceptable, len(en.Predictions))
			}
			for _, ap := range en.Predictions {
				for _, cs := range ap.Conditions {
					if cs.Of < spec.MinAcceptable*spec.PredictSeeds {
						b.Fatalf("%s %s: a share of %d fits × seeds, want at least %d", ap.Arm, cs.Name, cs.Of, spec.MinAcceptable*spec.PredictSeeds)
					}
				}
			}
			b.ReportMetric(secs, "s/ensemble")
			b.ReportMetric(float64(en.Trials), "trials")
			b.ReportMetric((benchhost.ProcessCPU()-cpu0).Seconds()/float64(runtime.GOMAXPROCS(0)), "s-own-cpus")
			b.ReportMetric(float64(len(en.Plan.Set.Points)), "acceptable")
			steal.Report(b)
		}
	})
	b.Run("single-point", func(b *testing.B) {
		arm := func(n string) arms.Arm { a, _ := arms.Lookup(n); return a }
		cfg := FitConfig{Base: virtual.DefaultConfig(1), D: arm("D"), E: arm("E"), F: arm("F"), M: arm("M"), Space: DefaultSpace(), Seed: 1,
			FitSeeds: 2, PredictSeeds: 5, Samples: 48, Refine: 12}
		restore := TuneGC()
		defer restore()
		for b.Loop() {
			steal, cpu0, start := benchhost.ReadSteal(), benchhost.ProcessCPU(), time.Now()
			r, err := Fit(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "s/fit")
			b.ReportMetric(float64(r.Evaluated), "trials")
			b.ReportMetric((benchhost.ProcessCPU()-cpu0).Seconds()/float64(runtime.GOMAXPROCS(0)), "s-own-cpus")
			steal.Report(b)
		}
	})
}
