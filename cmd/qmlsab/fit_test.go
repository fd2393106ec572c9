package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/store"
)

// trueArms are D, E, F and G at the recovery test's true point: the
// probing floor at 10 (the default's 6) and D's actor on
// queued-largest-first (the default's largest-first); every other
// parameter the built-in arms'.
const trueArms = `arms:
  - name: D
    build: 472d159296b6
    setParameters: &base
      executionControlDeprioritizationGate: "true"
      throughputProbingInitialConcurrency: "256"
      internalQueryMaxBlockingSortMemoryUsageBytes: "41943040"
      throughputProbingMinConcurrency: "10"
      executionControlConcurrentReadLowPriorityTransactions: "5"
    actors:
      - killop: {rssHighPercent: 70, interval: 100ms, appName: qmlsab-storm, maxKillsPerRound: 100, policy: queued-largest-first}
  - name: E
    build: 6ab306ad
    setParameters:
      <<: *base
      queryMemoryLoadSheddingLowMarkPercent: "30"
      queryMemoryLoadSheddingHighMarkPercent: "70"
      simShedHazard: odds
  - name: F
    build: 6ab306ad+sweeper
    setParameters:
      <<: *base
      queryMemoryLoadSheddingLowMarkPercent: "30"
      queryMemoryLoadSheddingHighMarkPercent: "70"
      simShedHazard: odds
      queryMemoryLoadSheddingSweepQueuedOps: "true"
  - name: G
    build: 6ab306ad+sweeper+latch
    setParameters:
      <<: *base
      queryMemoryLoadSheddingLowMarkPercent: "30"
      queryMemoryLoadSheddingHighMarkPercent: "70"
      simShedHazard: odds
      queryMemoryLoadSheddingSweepQueuedOps: "true"
      queryMemoryLoadSheddingWriteStartedLatch: "true"
`

// trueWorkload is the storm at the true point: 260 queries/s (the
// default's 207) of 30,000 documents each (10,800).
const trueWorkload = `name: recovery
kind: spill_to_disk
spill_to_disk:
  stormRate: 260
  scanDocs: 30000
`

// recoverySpace is the fit's space: the four unknowns the true point sets.
var recoverySpace = []string{"--space", "workload.stormRate=150:330", "--space", "param.throughputProbingMinConcurrency=4:16",
	"--space", "workload.scanDocs=5000:200000:log", "--space", "killop.policy=largest-first,queued-largest-first,lowpri-queued-largest-first"}

// ensembleJSON is the part of fit.json the tests read.
type ensembleJSON struct {
	Schema     string `json:"schema"`
	Acceptable []struct {
		Params    map[string]any     `json:"params"`
		Objective float64            `json:"objective"`
		Residuals map[string]float64 `json:"residuals"`
	} `json:"acceptable"`
	Rule struct {
		WithinTolerance bool `json:"within_tolerance"`
	} `json:"rule"`
	Ranges          map[string][]any                     `json:"ranges"`
	Identifiability map[string]string                    `json:"identifiability"`
	Sensitivity     map[string]map[string]float64        `json:"sensitivity"`
	Predictions     map[string]map[string]predictionJSON `json:"predictions"`
	Observations    []struct {
		Name string `json:"name"`
	} `json:"observations"`
	Trials int `json:"trials"`
}

type predictionJSON struct {
	Share   float64 `json:"share"`
	Verdict string  `json:"verdict"`
	FlipsAt *struct {
		Unknown string `json:"unknown"`
	} `json:"flips_at"`
}

func readEnsemble(t *testing.T, path string) ensembleJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var en ensembleJSON
	if err := json.Unmarshal(b, &en); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return en
}

// Parameter recovery: a model run of D and E at a known point away from
// the default (the storm's rate and query size, the probing floor and D's
// actor policy) fitted with --observed. The acceptable set's ranges cover
// every true value, and every verdict for F and G that is not "uncertain"
// is what F and G run at the true point (5 seeds) do.
func TestFitRecoversAModelRunsPoint(t *testing.T) {
	dir := t.TempDir()
	armsFile, wl := testFile(t, "arms.yaml", trueArms), testFile(t, "recovery.yaml", trueWorkload)
	observed, truth, fit := filepath.Join(dir, "observed"), filepath.Join(dir, "truth"), filepath.Join(dir, "fit")
	for _, r := range []struct{ arms, out string }{{"D,E", observed}, {"F,G", truth}} {
		if out, code := qmlsab(t, "run", "--arms-file", armsFile, "--workload", wl, "--arms", r.arms, "--n", "5", "--profile", "quick", "--out", r.out); code != 0 {
			t.Fatalf("run %s: exit %d\n%s", r.arms, code, out)
		}
	}
	args := append([]string{"calibrate", "--fit", "--observed", observed, "--arms", "D,E", "--predict", "F,G", "--samples", "12", "--starts", "2",
		"--refine", "3", "--acceptable", "12", "--predict-points", "12", "-n", "5", "--format", "json", "--out", fit}, recoverySpace...)
	out, code := qmlsab(t, args...)
	if code != 0 {
		t.Fatalf("calibrate --fit --observed: exit %d\n%s", code, out)
	}
	en := readEnsemble(t, filepath.Join(fit, "fit.json"))
	if len(en.Acceptable) == 0 {
		t.Fatalf("no acceptable point\n%s", out)
	}
	within := func(name string, v float64) {
		r := en.Ranges[name]
		if len(r) != 2 || v < r[0].(float64) || v > r[1].(float64) {
			t.Errorf("%s: the acceptable set's range %v does not cover the true value %v", name, r, v)
		}
	}
	within("workload.stormRate", 260)
	within("param.throughputProbingMinConcurrency", 10)
	within("workload.scanDocs", 30000)
	if !slices.Contains(en.Ranges["killop.policy"], any("queued-largest-first")) {
		t.Errorf("killop.policy: the acceptable set's values %v do not hold the true queued-largest-first", en.Ranges["killop.policy"])
	}
	r, err := store.Open(truth)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, arm := range []string{"F", "G"} {
		var trials []investigation.Trial
		for _, tr := range r.Valid(arm) {
			trials = append(trials, tr.Metrics)
		}
		if len(trials) != 5 {
			t.Fatalf("%s: %d valid trials at the true point, want 5", arm, len(trials))
		}
		for _, cond := range investigation.FAcceptance {
			p, ok := en.Predictions[arm][cond.Name]
			if !ok {
				t.Errorf("%s: no prediction of %q", arm, cond.Name)
				continue
			}
			met, what := cond.Met(trials)
			switch p.Verdict {
			case "uncertain":
				continue
			case "predicted":
				if !met {
					t.Errorf("%s %s: predicted (share %.2f) but not met at the true point (%s)", arm, cond.Name, p.Share, what)
				}
			case "predicted not met":
				if met {
					t.Errorf("%s %s: predicted not met (share %.2f) but met at the true point (%s)", arm, cond.Name, p.Share, what)
				}
			default:
				t.Errorf("%s %s: verdict %q", arm, cond.Name, p.Verdict)
			}
			decided++
		}
	}
	t.Logf("%d acceptable points (within tolerance: %v), %d of 8 verdicts decided, %d trials; ranges %v", len(en.Acceptable), en.Rule.WithinTolerance, decided, en.Trials, en.Ranges)
}

// The ensemble in shards, as docs/distributed.md's recipe runs it: the
// search in two shards and their merge, the predictions in two shards from
// the merged search and their merge, is the ensemble one host finds.
func TestFitShardsMergeToTheOneHostsEnsemble(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	fit := []string{"calibrate", "--fit", "--profile", "quick", "--space", "workload.stormRate=150:330", "--space", "param.simShedHazard=odds,linear",
		"--samples", "6", "--starts", "2", "--refine", "2", "--acceptable", "4", "--predict-points", "4", "-n", "2", "--fit-seeds", "1"}
	step := func(args ...string) string {
		t.Helper()
		out, code := qmlsab(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
		return out
	}
	step(append(slices.Clone(fit), "--out", at("one"), "--format", "json")...)
	for _, s := range []string{"1", "2"} {
		out := step(append(slices.Clone(fit), "--shard", s+"/2", "--out", at("search-"+s))...)
		if !strings.Contains(out, "search shard "+s+"/2 (chains "+s+")") {
			t.Errorf("shard %s/2 says:\n%s", s, out)
		}
	}
	step("calibrate", "--fit", "--merge", "--out", at("search"), at("search-2"), at("search-1"))
	for _, s := range []string{"1", "2"} {
		step("calibrate", "--fit", "--from", at("search"), "--shard", s+"/2", "--out", at("predict-"+s))
	}
	out := step("calibrate", "--fit", "--merge", "--out", at("merged"), at("predict-1"), at("predict-2"))
	if !strings.Contains(out, "Acceptable set:") || !strings.Contains(out, "fit.html") {
		t.Errorf("the final merge prints no ensemble:\n%s", out)
	}
	one, two := readEnsemble(t, at("one/fit.json")), readEnsemble(t, at("merged/fit.json"))
	if len(one.Acceptable) == 0 {
		t.Fatal("no acceptable point: the comparison compares nothing")
	}
	for name, pair := range map[string][2]any{"acceptable": {one.Acceptable, two.Acceptable}, "ranges": {one.Ranges, two.Ranges},
		"sensitivity": {one.Sensitivity, two.Sensitivity}, "predictions": {one.Predictions, two.Predictions}} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		if string(a) != string(b) {
			t.Errorf("%s: one host %s\nsharded %s", name, a, b)
		}
	}
	page, err := os.ReadFile(at("merged/fit.html"))
	if err != nil || !strings.Contains(string(page), `data-chart="ranges"`) || !strings.Contains(string(page), "SIMULATED") {
		t.Errorf("fit.html: %v\n%.400s", err, page)
	}
	// Each stage's shards are given whole: a missing shard is refused by
	// name and nothing is written.
	if out, code := qmlsab(t, "calibrate", "--fit", "--merge", "--out", at("partial"), at("predict-1")); code != 1 || !strings.Contains(out, "shard 2/2 is missing") {
		t.Errorf("a merge without shard 2: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(at("partial")); err == nil {
		t.Error("a refused merge made its folder")
	}
}

// Bad input to calibrate --fit: exit 1, a message naming the flag, nothing
// written.
func TestCalibrateFitBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--observed", empty}, "qmlsab calibrate: --observed: name the run's arms to fit with --arms"},
		{[]string{"--observed", filepath.Join(dir, "none"), "--arms", "D,E"}, "qmlsab calibrate: --observed " + filepath.Join(dir, "none") + ": not a run folder"},
		{[]string{"--observed", empty, "--arms", "D,E", "--profile", "quick"}, "qmlsab calibrate: --profile: with --observed the model runs the run's own phases"},
		{[]string{"--predict", "D"}, "qmlsab calibrate: --predict: arm D is fitted"},
		{[]string{"--predict", "Q"}, `qmlsab calibrate: --predict: unknown arm "Q"`},
		{[]string{"--format", "yaml"}, `qmlsab calibrate: --format "yaml": want text or json`},
		{[]string{"--shard", "3/2", "--out", out}, `qmlsab calibrate: --shard "3/2": want i/N with 1 ≤ i ≤ N`},
		{[]string{"--shard", "1/9", "--out", out}, "qmlsab calibrate: --shard: shard 1/9: the search has 4 chains (--starts), so at most 4 shards"},
		{[]string{"--shard", "1/2"}, "qmlsab calibrate: --out: give the folder for fit-search.json"},
		{[]string{"--from", empty, "--seed", "3", "--shard", "1/2", "--out", out}, "qmlsab calibrate: --seed: with --from the ensemble is the merged search's"},
		{[]string{"--from", empty, "--out", out}, "qmlsab calibrate: --from: give the shard to run (--shard i/N)"},
		{[]string{"--from", empty, "--shard", "1/2", "--out", out}, "qmlsab calibrate: --from " + filepath.Join(empty, "fit-search.json")},
		{[]string{"--merge", "--out", out}, "qmlsab calibrate: --merge: give the shard folders to merge"},
		{[]string{"--merge", "--out", out, empty}, "qmlsab calibrate: --merge " + empty + ": no fit-search.json or fit-predict.json in it"},
		{[]string{"--merge", "--seed", "2", "--out", out, empty}, "qmlsab calibrate: --seed: a merge takes the ensemble from its shards"},
		{[]string{"--samples", "0"}, "qmlsab calibrate: --samples 0: at least 1"},
		{[]string{"--refine", "-1"}, "qmlsab calibrate: --refine -1: must not be negative"},
	} {
		got, code := qmlsab(t, append([]string{"calibrate", "--fit"}, tc.args...)...)
		if code != 1 || !strings.HasPrefix(strings.TrimSpace(got), tc.want) {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s…", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--out", out}, "qmlsab calibrate: --out: with --fit only"},
		{[]string{"calibrate", "--predict", "F"}, "qmlsab calibrate: --predict: with --fit only"},
		{[]string{"calibrate", "stray"}, `qmlsab calibrate: unexpected argument "stray"`},
	} {
		got, code := qmlsab(t, tc.args...)
		if code != 1 || !strings.HasPrefix(strings.TrimSpace(got), tc.want) {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s…", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("bad input still made the output folder")
	}
}

// A fit stopped by a signal writes nothing: exit 130, and the --out
// folder it made is removed.
func TestCalibrateFitOnSIGHUPLeavesNoEmptyOutFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := qmlsabBinary(t)
	out := filepath.Join(t.TempDir(), "fit")
	p := startQmlsab(t, bin, "calibrate", "--fit", "--samples", "60", "--parallel", "1", "--out", out)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fit has not made its folder within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.finish(false); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out after the interrupted fit: %v; want it removed", err)
	}
	if !strings.Contains(p.stderr.String(), "interrupted by SIGHUP") || !strings.Contains(p.stderr.String(), "nothing written") {
		t.Errorf("the message does not say why it stopped and what it left:\n%s", p.stderr.String())
	}
}
