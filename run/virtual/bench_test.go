package virtual

import (
	"context"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/benchhost"
)

// BenchmarkTrial runs one default-profile trial of D, E and F at the
// embedded default: the units of work a calibration ensemble repeats.
// Profile it with -cpuprofile to see where a trial's time goes. Each
// sub-benchmark reports the process's CPU seconds a trial (cpu-s/trial):
// on a shared machine the wall time of a trial measures the other
// tenants as much as the engine.
func BenchmarkTrial(b *testing.B) {
	for _, name := range []string{"D", "E", "F"} {
		a, _ := arms.Lookup(name)
		b.Run(name, func(b *testing.B) {
			trials := 0
			cpu0 := benchhost.ProcessCPU()
			for b.Loop() {
				if _, err := Run(context.Background(), DefaultConfig(1), a); err != nil {
					b.Fatal(err)
				}
				trials++
			}
			b.ReportMetric((benchhost.ProcessCPU()-cpu0).Seconds()/float64(trials), "cpu-s/trial")
		})
	}
}
