package metric_test

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// collectedTrial is a storm trial whose samples hold exactly what
// collect's extractor table writes: every field, and nothing else.
func collectedTrial() store.Records {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
		store.PhaseWarmup: at(0), store.PhaseStorm: at(10), store.PhaseRecovery: at(20), store.PhaseEnd: at(30)}}}
	for i := range 30 {
		values := map[string]float64{}
		for _, f := range collect.Fields {
			values[f.Name] = float64(i + 1) // counters grow, gauges vary
		}
		r.Samples = append(r.Samples, store.Sample{At: at(i), Member: "a", Up: true, Primary: true, ProcessID: "pa", Values: values})
		r.Canaries = append(r.Canaries, store.CanaryOp{Scheduled: at(i), Latency: time.Millisecond, OK: true})
	}
	r.Storm = []store.StormOp{{Scheduled: at(12), Latency: time.Second, Stage: "$sort", Outcome: store.Shed, TrackedBytes: 1 << 20}}
	return r
}

// A metric that reads a sample field collect does not write (a misspelt
// or renamed field) would be absent on every real trial: on samples that
// hold every collected field no metric may be absent for want of a
// server field, and every per-second series must be drawn.
func TestMetricsReadOnlyFieldsCollectWrites(t *testing.T) {
	r := collectedTrial()
	_, absent := metric.Explain(r)
	for name, why := range absent {
		if strings.Contains(why, "the server reported no") || strings.Contains(why, "during the storm had") {
			t.Errorf("%s absent on samples holding every collected field: %s", name, why)
		}
	}
	secs := metric.PerSecond(r.Samples, r.PhaseStarts[store.PhaseWarmup], r.PhaseStarts[store.PhaseEnd])
	if len(secs) < 20 {
		t.Fatalf("%d seconds of series from 30 s of samples", len(secs))
	}
	s := secs[15]
	for name, v := range map[string]*float64{"read tickets": s.ReadTix, "low-priority queue": s.LowQueue,
		"admissions": s.Admissions, "queue kills": s.Kills, "server sheds": s.Sheds, "resident": s.ResidentMB,
		"low mark": s.LowMark, "high mark": s.HighMark, "memory limit": s.MemLimit} {
		if v == nil {
			t.Errorf("second %d has no %s though the samples hold every collected field", s.T, name)
		}
	}
}
