package collect

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/mongosim"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCollectorCPU measures what sampling 3 members costs: process
// CPU (client and in-process server together) over a window with the
// sampler running, minus the same window with the set idle, alternating
// so drift hits both. At 1 Hz the difference (a few samples) drowned in
// the idle set's own noise (it came out negative), so the sampler runs at
// 20 Hz and the cost per sample is scaled to 3 members at 1 Hz. make bench
// prints it as CPU per second of run.
func BenchmarkCollectorCPU(b *testing.B) {
	window := 3 * time.Second
	if s, err := strconv.ParseFloat(os.Getenv("BENCHWINDOW"), 64); err == nil && s > 0 {
		window = time.Duration(s * float64(time.Second))
	}
	ctx := context.Background()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	if _, err := rs.WaitForPrimary(ctx); err != nil {
		b.Fatal(err)
	}
	measure := func(interval time.Duration) (cpu time.Duration, samples int) {
		c0 := cpuTime()
		if interval == 0 {
			time.Sleep(window)
			return cpuTime() - c0, 0
		}
		s := &Sampler{Members: rs.Hosts(), Interval: interval}
		sctx, stop := context.WithTimeout(ctx, window)
		defer stop()
		s.Run(sctx)
		return cpuTime() - c0, len(s.Samples())
	}
	var idle, at20 time.Duration
	var n20 int
	for b.Loop() {
		c, _ := measure(0)
		idle += c
		c, n := measure(50 * time.Millisecond)
		at20, n20 = at20+c, n20+n
	}
	per := func(d time.Duration) float64 {
		return float64(d) / float64(time.Millisecond) / (window.Seconds() * float64(b.N))
	}
	b.ReportMetric(per(idle), "idle-set-cpu-ms/s")
	perSample := (per(at20) - per(idle)) / (float64(n20) / (window.Seconds() * float64(b.N)))
	b.ReportMetric(perSample*3, "3-members-1Hz-cpu-ms/s")
	b.ReportMetric(perSample, "cpu-ms/sample")
}
