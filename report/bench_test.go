package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/benchhost"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// synthRun writes a run of arms × n trials × dur of 1 Hz samples (three
// members) through the results package: the shape of a long nightly run,
// with a storm's worth of outcome seconds and victims.
func synthRun(tb testing.TB, dir string, armNames []string, n int, dur time.Duration) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: dur / 8, Storm: dur * 6 / 8, Recovery: dur / 8}
	spec.SpillToDisk = &w
	wl, _ := json.Marshal(spec)
	m := store.Manifest{Schema: store.ManifestSchema, ToolVersion: "bench", Created: time.Now().UTC(), Host: "bench",
		WorkloadName: spec.Name, Workload: wl, Seed: 1, Target: "embedded", Simulated: true, Clock: "virtual"}
	rng := rand.New(rand.NewPCG(1, 2))
	secs := int(dur / time.Second)
	for i := 1; i <= n; i++ {
		for _, arm := range armNames {
			m.Trials = append(m.Trials, store.TrialStatus{Arm: arm, Index: i, Status: store.Valid})
			tdir := store.TrialDir(dir, arm, i)
			if err := os.MkdirAll(tdir, 0o755); err != nil {
				tb.Fatal(err)
			}
			start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			var samples []store.Sample
			var outcomes []store.OutcomeSecond
			victims := &store.Victims{}
			for s := range secs {
				at := start.Add(time.Duration(s) * time.Second)
				load := math.Sin(float64(s) / float64(secs) * math.Pi)
				for mem := range 3 {
					v := map[string]float64{"uptimeMillis": float64(s * 1000), "residentMB": 6144 + 16000*load + 300*rng.Float64(),
						"read.totalTickets": 128 - 110*load, "read.low.queueLength": 600 * load * rng.Float64(),
						"read.low.removedFromQueue": float64(s * 170), "read.low.canceled": float64(s * 30),
						"queryMemory.operationsShed": float64(s * 50), "census.running": 12, "census.queued": 300 * load}
					samples = append(samples, store.Sample{At: at, Member: fmt.Sprintf("member%d", mem), Up: true, Primary: mem == 0, ProcessID: "p", Values: v})
				}
				outcomes = append(outcomes, store.OutcomeSecond{T: s, Storm: map[string]int{"completed": 100, "shed": 50},
					Canary: map[string]int{"ok": 19, "failed": 1}, StormLatency: []int{0, 3, 10, 40, 30, 17}, CanaryLatency: []int{15, 5}})
				for range 5 {
					victims.Add(int64(20<<20+rng.IntN(20<<20)), "$setWindowFields")
				}
			}
			events := []store.Event{{At: start, Kind: "phase", Phase: "warmup"}, {At: start.Add(w.Phases.Warmup), Kind: "phase", Phase: "storm"},
				{At: start.Add(w.Phases.Warmup + w.Phases.Storm), Kind: "phase", Phase: "recovery"}}
			tr := store.Trial{Schema: store.TrialSchema, Arm: arm, Index: i, Started: start, Simulated: true, Clock: "virtual", Victims: victims,
				Phases:  map[store.Phase]float64{"warmup": 0, "storm": w.Phases.Warmup.Seconds(), "recovery": (w.Phases.Warmup + w.Phases.Storm).Seconds()},
				Metrics: map[string]float64{"availability": 0.95 + 0.01*rng.Float64(), "failovers": 0, "server_sheds_per_s": 50 + rng.Float64(), "admissions_per_s": 160 + rng.Float64()}}
			for _, err := range []error{
				store.WriteJSONLinesGz(filepath.Join(tdir, "samples.jsonl.gz"), samples),
				store.WriteJSONLinesGz(filepath.Join(tdir, "series.jsonl.gz"), metric.PerSecond(samples, start, start.Add(dur))),
				store.WriteJSONLinesGz(filepath.Join(tdir, "outcomes.jsonl.gz"), outcomes),
				store.WriteJSONLinesGz(filepath.Join(tdir, "events.jsonl.gz"), events),
				store.WriteJSON(filepath.Join(tdir, "trial.json"), tr),
			} {
				if err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, "manifest.json"), m); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRender renders the HTML report of 3 arms × 5 trials × 1 hour
// of 1 Hz samples (make bench: ≤ 2 s and ≤ 5 MB).
func BenchmarkRender(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	synthRun(b, dir, []string{"D", "E", "F"}, 5, time.Hour)
	var size int
	steal := benchhost.ReadSteal()
	for b.Loop() {
		in, err := Load([]string{dir})
		if err != nil {
			b.Fatal(err)
		}
		gs := SweeperAcceptance
		a, err := Analyze(in, Options{Gates: &gs})
		if err != nil {
			b.Fatal(err)
		}
		html, err := HTML(a, "bench")
		if err != nil {
			b.Fatal(err)
		}
		size = len(html)
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB-html")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/report")
	steal.Report(b)
}
