package workload

import (
	"context"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

// shortStormOnF is an in-process replica set running arm F's parameters
// and a spill_to_disk spec of a 3 s storm between 1 s phases, for a test
// to set its rates on.
func shortStormOnF(t *testing.T, ctx context.Context) (*mongosim.ReplicaSet, SpillToDisk) {
	t.Helper()
	f, _ := arms.Lookup("F")
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{Parameters: f.SetParameters, MemLimitMB: 4096,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	spec := DefaultSpillToDisk()
	spec.Phases = Phases{Warmup: time.Second, Storm: 3 * time.Second, Recovery: time.Second}
	return rs, spec
}

func TestDriverRunsTheStormAndCanariesOverTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time workload")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, spec := shortStormOnF(t, ctx)
	spec.StormRate, spec.CanaryRate = 20, 20
	spec.ServerSelectionTimeout = 10 * time.Second
	d := &Driver{Spec: spec, URI: rs.URI()}
	if err := d.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Load(ctx); err != nil { // idempotent: the data is there already
		t.Fatalf("second load: %v", err)
	}
	start := time.Now().Add(200 * time.Millisecond)
	res, err := d.Run(ctx, start, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Canaries); n < 95 || n > 101 {
		t.Errorf("%d canaries over 5 s at 20/s", n)
	}
	if n := len(res.Storm); n < 30 || n > 100 {
		t.Errorf("%d storm queries over 3 s at a Poisson 20/s", n)
	}
	writes, stages := 0, map[string]int{}
	for _, c := range res.Canaries {
		if c.Write {
			writes++
		}
		if c.Scheduled.Before(start) || c.Scheduled.After(res.PhaseStarts["end"]) || c.Latency < 0 {
			t.Fatalf("canary outside its schedule: %+v", c)
		}
	}
	if writes < len(res.Canaries)/2-1 || writes > len(res.Canaries)/2+1 {
		t.Errorf("%d of %d canaries were writes; they alternate", writes, len(res.Canaries))
	}
	for _, s := range res.Storm {
		stages[s.Stage]++
		if s.Outcome == "" || s.Scheduled.Before(res.PhaseStarts["storm"]) || !s.Scheduled.Before(res.PhaseStarts["recovery"]) {
			t.Fatalf("storm query outside the storm phase or unclassified: %+v", s)
		}
		if s.Outcome == store.Failed {
			t.Errorf("storm query failed with %s (expected completed, shed or killed)", s.Code)
		}
	}
	if stages["$setWindowFields"] == 0 {
		t.Errorf("the storm's mix lacks $setWindowFields: %v", stages)
	}
	if a := metric.Summarize(store.Records{Results: res})[metric.Availability]; a < 0.9 {
		t.Errorf("availability %.2f under a light storm on F", a)
	}
	t.Logf("%d canaries (availability %.2f), %d storm queries %v", len(res.Canaries), metric.Summarize(store.Records{Results: res})[metric.Availability], len(res.Storm), stages)
}

// The wall storm's client is the spec's: with one connection and a
// timeout shorter than a query, the queries that wait for the connection
// or run past the timeout fail with Timeout (the driver's timeoutMS,
// applied to each operation) and none is cut off as unfinished. (Before,
// the storm's pool was unlimited and it had no timeout: every query
// completed.)
func TestDriverUsesTheSpecsPoolAndTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time workload")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, spec := shortStormOnF(t, ctx)
	spec.StormRate, spec.CanaryRate = 40, 5
	spec.ServerSelectionTimeout = 10 * time.Second
	spec.MaxPoolSize, spec.Timeout = 1, 50*time.Millisecond
	d := &Driver{Spec: spec, URI: rs.URI()}
	if err := d.Load(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := d.Run(ctx, time.Now().Add(200*time.Millisecond), 1)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for _, s := range res.Storm {
		codes[s.Code]++
	}
	t.Logf("%d storm queries: %v", len(res.Storm), codes)
	if codes[Timeout] == 0 {
		t.Errorf("no storm query timed out with one connection and a 50 ms timeout: %v", codes)
	}
	for code, n := range codes {
		if code != "" && code != Timeout {
			t.Errorf("%d storm queries ended with %q; want success or Timeout", n, code)
		}
	}
}
