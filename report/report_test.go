package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/race"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

// fixture is a real run on the embedded model in virtual time: D and E,
// three trials each, 60 model-seconds per trial.
func fixture(t *testing.T) string {
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qmlsab-report-fixture")
		if err != nil {
			fixtureErr = err
			return
		}
		fixtureDir = filepath.Join(dir, "run")
		fixtureErr = makeRun(fixtureDir, []string{"D", "E"}, 3, 7)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureDir
}

func makeRun(dir string, names []string, n int, seed uint64) error {
	sel, err := arms.Select(names, nil)
	if err != nil {
		return err
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 10 * time.Second, Storm: 150 * time.Second, Recovery: 20 * time.Second}
	// A storm heavy enough that both arms fail over in the model (the
	// embedded default's does not since spill I/O is conserved), so the
	// report has failovers, primary lives and timed-out canaries to show.
	w.StormRate, w.MaxPoolSize = 300, 3000
	spec.SpillToDisk = &w
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: n, Workload: spec, Seed: seed, Clock: store.ClockVirtual,
		Sim: mongosim.SimOptions{CPUs: 8}, SimMemLimitMB: 32 << 10})
	if err != nil {
		return err
	}
	_, err = run.Run(context.Background(), e, dir, run.Exec{ToolVersion: "test"})
	return err
}

func analyze(t *testing.T, dirs ...string) *Analysis {
	in, err := Load(dirs)
	if err != nil {
		t.Fatal(err)
	}
	gs := SweeperAcceptance
	a, err := Analyze(in, Options{Gates: &gs})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// summary.json's shape is the results contract (results/README.md).
func TestSummaryJSONShape(t *testing.T) {
	a := analyze(t, fixture(t))
	b, err := SummaryJSON(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string         `json:"schema"`
		Run    map[string]any `json:"run"`
		Arms   []struct {
			Name    string `json:"name"`
			N       int    `json:"n"`
			Metrics map[string]struct {
				Median, Min, Max, Mean *float64
				Values                 []float64
			} `json:"metrics"`
			Gates []struct {
				Name  string   `json:"name"`
				Pass  *bool    `json:"pass"`
				Value *float64 `json:"value"`
			} `json:"gates"`
		} `json:"arms"`
		Comparisons []struct {
			Metric, Base, Arm string
			P, Delta          *float64
			Significant       *bool
		} `json:"comparisons"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != SummarySchema || doc.Run["simulated"] != true || doc.Run["baseline"] != "D" {
		t.Errorf("schema %q run %v", doc.Schema, doc.Run)
	}
	if len(doc.Arms) != 2 || doc.Arms[0].Name != "D" || doc.Arms[1].Name != "E" {
		t.Fatalf("arms %+v", doc.Arms)
	}
	for _, arm := range doc.Arms {
		if arm.N != 3 {
			t.Errorf("%s: n=%d", arm.Name, arm.N)
		}
		av, ok := arm.Metrics["availability"]
		if !ok || av.Median == nil || av.Min == nil || av.Max == nil || av.Mean == nil || len(av.Values) != 3 {
			t.Errorf("%s availability: %+v", arm.Name, av)
		}
		// sweeper-acceptance's gates per arm: D's two "holds", E's three "falls".
		if len(arm.Gates) != map[string]int{"D": 2, "E": 3}[arm.Name] || arm.Gates[0].Pass == nil || arm.Gates[0].Value == nil || arm.Gates[0].Name == "" {
			t.Errorf("%s gates: %+v", arm.Name, arm.Gates)
		}
	}
	var names []string
	for _, c := range doc.Comparisons {
		if c.Base != "D" || c.Arm != "E" || c.P == nil || c.Significant == nil {
			t.Errorf("comparison %+v", c)
		}
		names = append(names, c.Metric)
	}
	for _, m := range []string{"availability", "failovers", "server_sheds_per_s", "actor_kills_per_s", "admissions_per_s", "kills_per_s"} {
		if !slices.Contains(names, m) {
			t.Errorf("no comparison of %s", m)
		}
	}
}

// perf.json is Evergreen's perf.send array: arm in test_name, integer
// args, one value per arm and metric.
func TestPerfJSONShape(t *testing.T) {
	a := analyze(t, fixture(t))
	b, err := PerfJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	var tests []struct {
		Info struct {
			TestName string           `json:"test_name"`
			Trial    *int             `json:"trial"`
			Args     map[string]int32 `json:"args"`
		} `json:"info"`
		CreatedAt   time.Time `json:"created_at"`
		CompletedAt time.Time `json:"completed_at"`
		Metrics     []struct {
			Name  string   `json:"name"`
			Type  string   `json:"type"`
			Value *float64 `json:"value"`
		} `json:"metrics"`
		SubTests []any `json:"sub_tests"`
	}
	if err := json.Unmarshal(b, &tests); err != nil {
		t.Fatalf("perf.json is not an array of tests with integer args: %v\n%s", err, b)
	}
	if len(tests) != 2 || tests[0].Info.TestName != "spill_to_disk/D" || tests[1].Info.TestName != "spill_to_disk/E" {
		t.Fatalf("tests: %+v", tests)
	}
	for _, tc := range tests {
		seen := map[string]bool{}
		for _, m := range tc.Metrics {
			if seen[m.Name] || m.Value == nil {
				t.Errorf("%s: metric %s twice or without value", tc.Info.TestName, m.Name)
			}
			seen[m.Name] = true
		}
		if !seen["availability"] || tc.Info.Args["n"] != 3 || tc.Info.Trial == nil || tc.CreatedAt.IsZero() || tc.SubTests == nil {
			t.Errorf("%s: %+v", tc.Info.TestName, tc)
		}
	}
}

// bench.txt is Go benchmark format: one line per trial and metric.
func TestBenchTxtShape(t *testing.T) {
	a := analyze(t, fixture(t))
	lines := strings.Split(strings.TrimSpace(string(BenchTxt(a))), "\n")
	line := regexp.MustCompile(`^BenchmarkSpillToDisk/arm=(D|E)/metric=([a-z0-9_]+) 1 -?[0-9.e+-]+ ([a-zA-Z0-9_]+)$`)
	config := regexp.MustCompile(`^[a-z]+: .+$`)
	// The header says how to read the file: benchstat with the arms as
	// columns, and whose estimator it is (benchstat reads past # lines).
	if !strings.Contains(string(BenchTxt(a)), "\n# qmlsab bench.txt: one line per valid trial and metric. Compare the arms with: benchstat -col /arm bench.txt\n") ||
		!strings.Contains(string(BenchTxt(a)), "ratio of medians") || !strings.Contains(string(BenchTxt(a)), "Hodges-Lehmann") {
		t.Errorf("bench.txt's header does not say how to compare the arms, or by which estimator:\n%.400s", BenchTxt(a))
	}
	bench, perMetric := 0, map[string]int{}
	for _, l := range lines {
		switch {
		case line.MatchString(l):
			bench++
			m := line.FindStringSubmatch(l)
			perMetric[m[2]]++
			// Each metric in the unit its name says: bytes as B (which
			// benchstat scales), a latency named _ms in ms, never seconds.
			want := map[string]string{"rss_peak_bytes": "B", "canary_p99_ms": "ms", "canary_p50_ms": "ms", "availability": "availability"}
			if u, ok := want[m[2]]; ok && m[3] != u {
				t.Errorf("%s: unit %q, want %q", l, m[3], u)
			}
		case config.MatchString(l), strings.HasPrefix(l, "# "):
		default:
			t.Errorf("not benchmark format: %q", l)
		}
	}
	if perMetric["availability"] != 6 || perMetric["server_sheds_per_s"] != 6 {
		t.Errorf("want one availability and server_sheds_per_s line per trial (6): %v", perMetric)
	}
	want := 0
	for _, arm := range a.In.Arms {
		for _, tr := range a.In.Valid(arm) {
			want += len(tr.Metrics)
		}
	}
	if bench != want {
		t.Errorf("%d benchmark lines, want %d (trials × metrics)", bench, want)
	}
	// The latency's figure is the trial's, in ms (it once held seconds
	// under its _ms name).
	for _, arm := range a.In.Arms {
		for _, tr := range a.In.Valid(arm) {
			v, ok := tr.Metrics["canary_p99_ms"]
			if want := fmt.Sprintf("BenchmarkSpillToDisk/arm=%s/metric=canary_p99_ms 1 %.6g ms\n", arm, v); ok && !strings.Contains(string(BenchTxt(a)), want) {
				t.Errorf("bench.txt lacks %q", want)
			}
		}
	}
}

func TestLoadRefusesMixedAndCorruptRuns(t *testing.T) {
	if race.Enabled {
		t.Skip("under the race detector: loading refusals; the fixture's tests load series concurrently under the detector")
	}
	dir := fixture(t)
	// A run of another workload setting.
	other := filepath.Join(t.TempDir(), "other")
	sel, _ := arms.Select([]string{"D"}, nil)
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 5 * time.Second, Storm: 20 * time.Second, Recovery: 5 * time.Second}
	spec.SpillToDisk = &w
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: 1, Workload: spec, Seed: 1, Sim: mongosim.SimOptions{CPUs: 8}, SimMemLimitMB: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, other, run.Exec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load([]string{dir, other}); err == nil || !strings.Contains(err.Error(), filepath.Join(other, "manifest.json")) ||
		!strings.Contains(err.Error(), "workloads match") {
		t.Errorf("mixed workloads: %v", err)
	}
	// Two runs of the same workload combine, with a warning.
	same := filepath.Join(t.TempDir(), "same")
	if err := makeRun(same, []string{"D", "E"}, 1, 99); err != nil {
		t.Fatal(err)
	}
	a := analyze(t, dir, same)
	if a.Arm("D").N != 4 || !slices.ContainsFunc(a.Warnings, func(w Warning) bool { return strings.Contains(w.Text, "2 runs combined") }) {
		t.Errorf("combined: D n=%d warnings %v", a.Arm("D").N, a.Warnings)
	}
	// A run whose trials ran on another clock than the run says (a resume
	// that changed clocks) is refused, naming the trial's file.
	mixed := filepath.Join(t.TempDir(), "mixed")
	if err := makeRun(mixed, []string{"D", "E"}, 1, 5); err != nil {
		t.Fatal(err)
	}
	setKey(t, filepath.Join(mixed, store.ManifestFile), "clock", "wall")
	if _, err := Load([]string{mixed}); err == nil || !strings.Contains(err.Error(), "trial.json: the trial ran on the virtual clock but the run is on the wall clock") {
		t.Errorf("a run mixing clocks: %v", err)
	}
	// Two runs on different clocks are not combined.
	for _, arm := range []string{"D", "E"} {
		setKey(t, filepath.Join(store.TrialDir(mixed, arm, 1), store.TrialFile), "clock", "wall")
	}
	if _, err := Load([]string{dir, mixed}); err == nil || !strings.Contains(err.Error(), "runs are combined only when their clocks match") {
		t.Errorf("runs on two clocks: %v", err)
	}
	// A truncated trial file is named.
	broken := filepath.Join(t.TempDir(), "broken")
	if err := makeRun(broken, []string{"D"}, 1, 3); err != nil {
		t.Fatal(err)
	}
	tj := filepath.Join(store.TrialDir(broken, "D", 1), "trial.json")
	b, _ := os.ReadFile(tj)
	os.WriteFile(tj, b[:len(b)/2], 0o644)
	if _, err := Load([]string{broken}); err == nil || !strings.Contains(err.Error(), tj) {
		t.Errorf("truncated trial.json: %v", err)
	}
	os.WriteFile(tj, b, 0o644)
	sg := filepath.Join(store.TrialDir(broken, "D", 1), "series.jsonl.gz")
	sb, _ := os.ReadFile(sg)
	os.WriteFile(sg, sb[:len(sb)/2], 0o644)
	in, err := Load([]string{broken})
	if err != nil {
		t.Fatal(err)
	}
	an, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HTML(an, "test"); err == nil || !strings.Contains(err.Error(), sg) {
		t.Errorf("truncated series: %v", err)
	}
	// Without the derived series (an older run), they come from the samples.
	os.Remove(sg)
	if _, err := HTML(an, "test"); err != nil {
		t.Errorf("a run without series.jsonl.gz: %v", err)
	}
}

func TestGates(t *testing.T) {
	sums := map[string]Summary{
		"availability":                  Summarize([]float64{0.95, 0.97, 0.99}, 0.95),
		"failovers":                     Summarize([]float64{0, 0, 1}, 0.95),
		"lowpri_queue_sustained_growth": Summarize([]float64{0, 0, 0}, 0.95),
		"server_sheds_per_s":            Summarize([]float64{170, 180, 190}, 0.95),
		"admissions_per_s":              Summarize([]float64{150, 160, 200}, 0.95),
	}
	want := map[string]bool{"available": true, "no failover": false, "queue bounded": true, "sheds outpace admissions": true}
	for _, g := range SweeperAcceptance.Gates {
		if !SweeperAcceptance.AppliesTo(g, "X") {
			continue // D's and E's gates; an arm the set does not name gets F's
		}
		r := g.Evaluate("X", sums)
		if r.Pass != want[g.Name] {
			t.Errorf("%s (%s): value %v threshold %v pass %v", g.Name, g, r.Value, r.Threshold, r.Pass)
		}
	}
	if r := SweeperAcceptance.Gates[0].Evaluate("X", map[string]Summary{}); r.Pass || !r.NoData {
		t.Errorf("a gate over a missing metric must say no data, not pass: %+v", r)
	}
	gs, err := ParseGates("g.yaml", []byte("name: mine\ngates:\n  - metric: canary_p99_ms\n    op: \"<\"\n    value: 500\n"))
	if err != nil || gs.Gates[0].Name != "canary_p99_ms < 500" {
		t.Fatalf("%v %+v", err, gs)
	}
	for doc, want := range map[string]string{
		"name: x\ngates:\n  - metric: a\n    op: \"~\"\n":              "g.yaml:3: op",
		"name: x\ngates:\n  - metric: a\n    op: \">\"\n    of: p9\n":  "g.yaml:3: of",
		"name: x\ngates:\n  - metric: a\n    op: \">\"\n    vale: 1\n": "g.yaml:5: field vale not found",
		"name: x\ngates: []\n":             "no gates",
		"name: x\ngates:\n  - op: \">\"\n": "g.yaml:3: gate without a metric",
		"":                                 "g.yaml:1: empty",
	} {
		if _, err := ParseGates("g.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

// setKey rewrites one top-level key of a JSON file.
func setKey(t *testing.T, path, key string, value any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc[key] = value
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
