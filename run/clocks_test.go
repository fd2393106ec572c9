package run

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// runOne runs one trial of arm on a clock and returns the trial, its
// storm ops and its folder. On the wall clock a trial the
// busy host starved (saturated, or not pressured as the test needs) is
// run again (executeWhileTheHostKeepsUp).
func runOne(t *testing.T, cfg trialRun, pressured func(*store.Run) string) (store.Trial, []store.StormOp, string) {
	t.Helper()
	cfg.N, cfg.ToolVersion = 1, "test"
	var r *store.Run
	if cfg.Clock == store.ClockWall {
		r = executeWhileTheHostKeepsUp(t, cfg, cfg.Dir, pressured)
		cfg.Dir = r.Dir
	} else {
		out, err := cfg.run(t, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r = out.Run
	}
	name := cfg.Arms[0].Name
	if len(r.Trials[name]) != 1 || r.Manifest.Trials[0].Status != store.Valid {
		t.Fatalf("%s on the %s clock: %+v", name, cfg.Clock, r.Manifest.Trials)
	}
	storm, err := store.ReadJSONLinesGz[store.StormOp](filepath.Join(store.TrialDir(cfg.Dir, name, 1), store.StormFile))
	if err != nil {
		t.Fatal(err)
	}
	return r.Trials[name][0], storm, store.TrialDir(cfg.Dir, name, 1)
}

func stageShares(ops []store.StormOp) map[string]float64 {
	out := map[string]float64{}
	for _, o := range ops {
		out[o.Stage] += 1 / float64(len(ops))
	}
	return out
}

// One spec, one meaning: the same workload runs as the same queries on
// both clocks — the same stage mix and, through the shape each storm
// query carries to mongosim, the same sizes — so arm D's killOp actor
// finds victims of the same tracked size, stage by stage, and memory
// peaks alike.
func TestOneWorkloadSpecOnBothClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time trial")
	}
	d, _ := arms.Lookup("D")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	// 150 queries/s, not the fitted 271.5: at that rate the in-process wire set
	// saturates a 2-core host (serverStatus goes unanswered) and the
	// comparison would be of a saturated harness, not of the clocks. A
	// smaller machine than the M50 (8 GiB, 3 GiB of it mongod's own), so
	// that a 12 s storm brings resident memory to D's 70 % threshold even
	// on a busy host (on the M50 a busy host seldom took it there).
	w := *spec.SpillToDisk
	w.StormRate = 150
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 12 * time.Second, Recovery: 2 * time.Second}
	spec.SpillToDisk = &w
	base := trialRun{Spec: Spec{Arms: []arms.Arm{d}, Workload: spec, Seed: 3, Sim: mongosim.SimOptions{BaselineMB: 3 << 10}, SimMemLimitMB: 8 << 10}}
	virt, wall := base, base
	virt.Clock, virt.Dir = store.ClockVirtual, filepath.Join(t.TempDir(), "virtual")
	wall.Clock, wall.Dir = store.ClockWall, filepath.Join(t.TempDir(), "wall")
	// D's actor acts above 70 % of the memory limit: a wall trial whose
	// busy host never let memory climb that far, or starved the actor (it
	// runs on this machine too) so that it killed nothing, has no victims
	// to compare. That the actor kills is TestArmContrastOnBothClocks'.
	vt, vops, vdir := runOne(t, virt, nil)
	wt, wops, wdir := runOne(t, wall, func(r *store.Run) string {
		if why := reachedRSS(base.SimMemLimitMB, 0.7, "D")(r); why != "" {
			return why
		}
		if _, ok := r.Trials["D"][0].Metrics[metric.VictimTrackedP50]; !ok {
			// A slow host crosses the actor's threshold late: its kills
			// fall after the storm, where victims are not counted.
			return fmt.Sprintf("D#1: no victim during the storm (%v ops killed in all): the busy host delayed the memory's climb past it",
				r.Trials["D"][0].Metrics[metric.StormKilled])
		}
		return ""
	})
	vs, ws := stageShares(vops), stageShares(wops)
	for _, m := range spec.SpillToDisk.Mix {
		if math.Abs(vs[m.Stage]-ws[m.Stage]) > 0.05 {
			t.Errorf("%s share: virtual %.3f, wall %.3f", m.Stage, vs[m.Stage], ws[m.Stage])
		}
	}
	if v, w := vt.Metrics[metric.RSSPeakBytes], wt.Metrics[metric.RSSPeakBytes]; v <= 0 || w <= 0 || math.Max(v/w, w/v) > 1.25 {
		t.Errorf("%s: virtual %.3g, wall %.3g; want within ×1.25", metric.RSSPeakBytes, v, w)
	}
	// The victims' sizes, stage by stage: which stages the actor catches
	// is timing (a busy host keeps more $group ops alive on the wall
	// clock, and their larger tables moved the all-stage median from 8 to
	// 20 MB in one CI run), but a query of a stage holds the same tracked
	// memory on both clocks. Every stage with at least 10 victims on both
	// is compared; there must be one.
	vk, wk := stormKillSizes(t, vdir), stormKillSizes(t, wdir)
	compared := 0
	for stage, v := range vk {
		w := wk[stage]
		if len(v) < 10 || len(w) < 10 {
			continue
		}
		compared++
		if mv, mw := metric.Median(v), metric.Median(w); math.Max(mv/mw, mw/mv) > 2 {
			t.Errorf("%s victims' tracked bytes p50: virtual %.3g (%d), wall %.3g (%d); want within ×2", stage, mv, len(v), mw, len(w))
		}
	}
	if compared == 0 {
		t.Errorf("no stage with 10 victims on both clocks: virtual %v, wall %v", counts(vk), counts(wk))
	}
}

func counts(m map[string][]float64) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// A parameter is parsed by its declared type on both clocks: a
// fractional percentage (a double in mongod) runs everywhere, a fraction
// for an integer parameter is refused everywhere, naming the arm and the
// parameter, before any trial (TestBadEmbeddedParameterIsRefusedBeforeAnyTrial).
func TestParameterTypesAreTheSameOnBothClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: time.Second, Storm: 2 * time.Second, Recovery: time.Second}
	w.StormRate = 5
	spec.SpillToDisk = &w
	e, _ := arms.Lookup("E")
	for _, clock := range []store.Clock{store.ClockVirtual, store.ClockWall} {
		good := e
		good.SetParameters = map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "87.5"}
		cfg := trialRun{Spec: Spec{Arms: []arms.Arm{good}, N: 1, Workload: spec, Clock: clock}, Exec: Exec{ToolVersion: "test"}, Dir: filepath.Join(t.TempDir(), "good")}
		out, err := cfg.run(t, context.Background())
		if err != nil {
			t.Fatalf("%s clock: %v", clock, err)
		}
		if ts := out.Run.Manifest.Trials[0]; ts.Status != store.Valid {
			t.Errorf("%s clock: high mark 87.5 gave a %s trial: %s", clock, ts.Status, ts.Reason)
		}
	}
}

// An embedded arm's server parameters are parsed when the experiment is
// built: a bad value (a fraction for an integer parameter, an unknown
// name, a pair out of order) is refused by NewExperiment on either clock,
// naming the arm and the parameter, so no trial runs — not N invalid
// trials, one per repetition.
func TestBadEmbeddedParameterIsRefusedBeforeAnyTrial(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	e, _ := arms.Lookup("E")
	d, _ := arms.Lookup("D")
	for _, clock := range []store.Clock{store.ClockVirtual, store.ClockWall} {
		for params, want := range map[string]string{
			"throughputProbingMinConcurrency=4.5":      "throughputProbingMinConcurrency",
			"noSuchParameter=1":                        "noSuchParameter",
			"queryMemoryLoadSheddingHighMarkPercent=5": "queryMemoryLoadSheddingHighMarkPercent",
		} {
			bad := e
			bad.Name = "X"
			k, v, _ := strings.Cut(params, "=")
			bad.SetParameters = map[string]string{k: v, "queryMemoryLoadSheddingLowMarkPercent": "30"}
			_, err := NewExperiment(Spec{Arms: []arms.Arm{d, bad}, N: 5, Workload: spec, Clock: clock})
			if err == nil || !isField(err, FieldArms) || !strings.Contains(err.Error(), "arm X: ") || !strings.Contains(err.Error(), want) {
				t.Errorf("%s clock, arm X with %s: %v; want a refusal naming arm X and %s", clock, params, err, want)
			}
		}
	}
	// Run takes only a built experiment: nothing of a refused one is made.
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), Experiment{}, dir, Exec{}); err == nil {
		t.Error("a zero Experiment ran")
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a refused run made its folder")
	}
}

// A zero Spec and Exec mean every documented default: the embedded M50 with
// 32 GiB, not a machine with no memory.
func TestZeroConfigIsTheDocumentedDefault(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 5 * time.Second, Storm: 10 * time.Second, Recovery: 5 * time.Second}
	spec.SpillToDisk = &w
	d, _ := arms.Lookup("D")
	cfg := trialRun{Spec: Spec{Arms: []arms.Arm{d}, N: 1, Workload: spec}, Dir: filepath.Join(t.TempDir(), "run")}
	tr, _, _ := runOne(t, cfg, nil)
	if _, ok := tr.Metrics[metric.Availability]; tr.Metrics[metric.Restarts] != 0 || !ok {
		t.Errorf("a zero Spec's 20 s trial: %v; want no restart and an availability", tr.Metrics)
	}
	hw := cfg.experiment(t).virtualConfig(1, time.Second).Hardware
	if hw.MemLimitBytes != 32<<30 || hw.CPUs != 8 || hw.Host == nil || *hw.Host != model.DefaultHost() {
		t.Errorf("zero Spec's hardware %+v; want the M50 (8 CPUs, 32 GiB, its default host)", hw)
	}
}

// stormKillSizes are the tracked bytes of the actor's kills during the
// storm phase of the trial in dir, by the victim's stage.
func stormKillSizes(t *testing.T, dir string) map[string][]float64 {
	t.Helper()
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, store.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	var phase store.Phase
	for _, ev := range events {
		switch {
		case ev.Kind == store.EventPhase:
			phase = ev.Phase
		case ev.Kind == store.EventKill && ev.Kill != nil && phase == store.PhaseStorm && ev.Kill.TrackedBytes > 0:
			out[ev.Kill.Stage] = append(out[ev.Kill.Stage], float64(ev.Kill.TrackedBytes))
		}
	}
	return out
}
