package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// A storm trial's failovers are the most of three witnesses' counts: the
// samples' two, and the workload driver's topology monitoring, which sees
// a flip between two samples. The metric registry computes it from the
// trial's records, the driver's primaries among them, and the trial's
// events file keeps them; records without them (another clock, a folder
// written before they were kept) count the samples' changes alone.
func TestFailoversTakeTheDriversWitnessFromTheRecords(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UTC()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rec := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
		store.PhaseWarmup: t0, store.PhaseStorm: at(1), store.PhaseRecovery: at(3), store.PhaseEnd: at(4)}}}
	// The samples see one primary throughout: no failover of theirs.
	for s := 0.0; s <= 4; s++ {
		rec.Samples = append(rec.Samples, store.Sample{At: at(s), Member: "a:1", Up: true, Primary: true, ProcessID: "p1", SeenPrimary: "a:1"})
	}
	if n := metric.Evaluate(rec).Values[metric.Failovers]; n != 0 {
		t.Fatalf("failovers of steady samples and no driver witness: %v, want 0", n)
	}
	// Between two samples the primary flipped away and back: only the
	// driver saw it.
	rec.DriverPrimaries = []store.Event{{At: at(1.3), Kind: store.EventTopology, Member: "b:1"}, {At: at(1.6), Kind: store.EventTopology, Member: "a:1"}}
	if n := metric.Evaluate(rec).Values[metric.Failovers]; n != 2 {
		t.Errorf("failovers with the driver's two: %v, want 2", n)
	}
	dir := t.TempDir()
	x := &execution{exec: Exec{}.withDefaults(), dir: dir}
	trial := store.Trial{Schema: store.TrialSchema, Arm: "D", Index: 1, Started: t0, Clock: store.ClockWall}
	if status, reason := x.writeTrial(dir, trial, t0, rec); status != store.Valid {
		t.Fatalf("writing the trial: %s %s", status, reason)
	}
	b, err := os.ReadFile(filepath.Join(dir, store.TrialFile))
	if err != nil {
		t.Fatal(err)
	}
	var written store.Trial
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if written.Metrics[metric.Failovers] != 2 {
		t.Errorf("trial.json's failovers %v, want the driver's 2", written.Metrics[metric.Failovers])
	}
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, store.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	topology := 0
	for _, e := range events {
		if e.Kind == store.EventTopology {
			topology++
		}
	}
	if topology != 2 {
		t.Errorf("the events file holds %d of the driver's primaries, want 2", topology)
	}
}
