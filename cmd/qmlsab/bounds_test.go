package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/workload"
)

// TestCalibrateHoldsTheWorkloadBounds checks that calibrate's storm flags
// go through the workload's validation: what run refuses, calibrate
// refuses too, naming the flag, before any trial starts.
func TestCalibrateHoldsTheWorkloadBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--storm-rate", "1e9"}, "qmlsab calibrate: --storm-rate: spill_to_disk.stormRate: 1e+09 is outside [0.001, 1000]"},
		{[]string{"--storm-rate", "-5"}, "qmlsab calibrate: --storm-rate: spill_to_disk.stormRate: -5 is outside [0.001, 1000]"},
		{[]string{"--storm-rate", "0"}, "qmlsab calibrate: --storm-rate: spill_to_disk.stormRate: 0 is outside [0.001, 1000]"},
		{[]string{"--storm", "1000h"}, "qmlsab calibrate: --storm: spill_to_disk.phases.storm: 1000h0m0s is outside [1ms, 2h0m0s]"},
		{[]string{"--storm", "-1s"}, "qmlsab calibrate: --storm: spill_to_disk.phases.storm: -1s is outside [1ms, 2h0m0s]"},
		{[]string{"--storm-rate", "1000", "--storm", "10m"}, "qmlsab calibrate: --storm-rate: spill_to_disk.stormRate: 1000 queries/s over a 10m0s storm is 600000 queries; at most 300000 per trial"},
	} {
		got, code := qmlsab(t, append([]string{"calibrate", "--arms", "E", "-n", "1"}, tc.args...)...)
		if code != 1 || strings.TrimSpace(got) != tc.want {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
}

// TestSweepVaryRefusesAGridItCannotCount checks that a --vary range whose
// points could not be told apart (a STEP below float64's precision at
// FROM: FROM+STEP is FROM, and the grid grew until memory ran out), or
// that would have more points than an axis holds, exits 1 naming the flag
// before any trial runs, and writes nothing.
func TestSweepVaryRefusesAGridItCannotCount(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ vary, want string }{
		{"workload.stormRate=1:1:1e-300", `qmlsab sweep: --vary "workload.stormRate=1:1:1e-300": STEP 1e-300 is below the precision of float64 at 1 (2.22e-16): FROM+STEP would be FROM, or points would coincide`},
		{"workload.stormRate=0.001:1000:0.001", `qmlsab sweep: --vary "workload.stormRate=0.001:1000:0.001": 1e+06 points; at most 101 per axis`},
		{"workload.stormRate=100:300:NaN", `qmlsab sweep: --vary "workload.stormRate=100:300:NaN": "NaN" is not a number`},
	} {
		got, code := qmlsab(t, "sweep", "--arms", "E", "--n", "1", "--vary", tc.vary, "--out", filepath.Join(dir, "sweep"))
		if code != 1 || strings.TrimSpace(got) != tc.want {
			t.Errorf("--vary %s:\n exit %d: %s\nwant exit 1: %s", tc.vary, code, strings.TrimSpace(got), tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused sweep left %d entries", len(entries))
	}
}

// TestRunAndSweepRefuseATrialPastItsMemory checks that a workload file
// that fits as given but not under --profile long is refused by run and
// by sweep before anything runs, with the figure.
func TestRunAndSweepRefuseATrialPastItsMemory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "canaries.yaml")
	os.WriteFile(file, []byte("name: canaries\nkind: spill_to_disk\nspill_to_disk:\n  canaryRate: 1000\n  phases: {warmup: 20m, storm: 10m, recovery: 10m}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--arms", "E", "--n", "1", "--workload", file, "--profile", "long", "--parallel", "2", "--out", filepath.Join(dir, "run")},
			"qmlsab run: --workload canaries with --profile long: the 1h20m0s trial of canaryRate 1000 and stormRate 207 over a 20m0s storm needs ~1.78 GiB a virtual trial, the budget is 1 GiB a trial"},
		{[]string{"sweep", "--arms", "E", "--n", "1", "--workload", file, "--profile", "long", "--vary", "workload.stormRate=100,200", "--out", filepath.Join(dir, "sweep")},
			"workload: spill_to_disk.canaryRate: canaryRate 1000 over a 1h20m0s trial (4800000 canaries): a virtual trial needs ~1.66 GiB, the budget is 1 GiB a trial"},
	} {
		got, code := qmlsab(t, tc.args...)
		if code != 1 || !strings.Contains(got, tc.want) {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1 and: %s", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused run or sweep left %d entries beside the workload file", len(entries)-1)
	}
}

// memoryChild is set in the child process of TestWorstAcceptedCornerRuns
// UnderTheBudget: the run's arguments, separated by the unit separator (0x1f).
const memoryChild = "QMLSAB_TEST_MEMORY_CHILD"

// TestWorstAcceptedCornerRunsUnderTheBudget runs, at the default
// parallelism, the accepted workload with the largest memory the model
// allows: the largest storm (300,000 queries), the most canaries, the
// smallest getMore batch (batchDocs 1, 4000 getMores a query), and the
// longest trial the budget then accepts, in a child process whose Go
// memory limit is the run's budget (the trial budget × the trials at
// once); the child's peak resident memory (VmHWM) must stay under it.
func TestWorstAcceptedCornerRunsUnderTheBudget(t *testing.T) {
	if args := os.Getenv(memoryChild); args != "" {
		out, code := qmlsab(t, strings.Split(args, "\x1f")...)
		status, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				fmt.Println("peak", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
			}
		}
		if code != 0 {
			t.Fatalf("run exit %d: %s", code, out)
		}
		return
	}
	if testing.Short() {
		t.Skip("two virtual trials of 36 model minutes")
	}
	// Model time in a child process whose peak memory is its own: it runs
	// beside TestTheREADMEsNightlyRecipe once the real-time tests are done.
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status to read the peak resident memory from")
	}
	w := workload.DefaultSpillToDisk()
	w.StormRate, w.CanaryRate = workload.MaxStormRate, workload.MaxCanaryRate
	w.BatchDocs = 1 // the most getMores a cursor drains
	w.Phases = workload.Phases{Warmup: 0, Storm: time.Duration(workload.MaxStormOps/workload.MaxStormRate) * time.Second}
	spec := workload.Spec{Name: "worst", Kind: workload.KindSpillToDisk, SpillToDisk: &w}
	for { // the longest recovery the budget accepts
		w.Phases.Recovery += time.Minute
		if spec.Validate() != nil {
			w.Phases.Recovery -= time.Minute
			break
		}
	}
	if err := spec.Validate(); err != nil || w.TrialBytes() < workload.MaxTrialHeapBytes*9/10 {
		t.Fatalf("the corner: %v, %d bytes a trial, want within 10%% of the budget", err, w.TrialBytes())
	}
	b, err := workload.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "worst.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Two trials: the default parallelism runs min(trials, CPUs) at once.
	parallel := min(2, runtime.GOMAXPROCS(0))
	budget := int64(parallel) * workload.MaxTrialHeapBytes
	args := []string{"run", "--arms", "E", "--n", "2", "--workload", file, "--out", filepath.Join(dir, "run")}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorstAcceptedCornerRunsUnderTheBudget$", "-test.count=1")
	cmd.Env = append(os.Environ(), memoryChild+"="+strings.Join(args, "\x1f"), "GOMEMLIMIT="+strconv.FormatInt(budget, 10), "GOGC=100")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the worst corner's run: %v\n%s", err, out)
	}
	var peakKB int64
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "peak "); ok {
			peakKB, _ = strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
		}
	}
	if peakKB == 0 {
		t.Fatalf("the child printed no peak:\n%s", out)
	}
	t.Logf("%d trials of %v (%d canaries, %.0f storm queries each) at %d at once: peak resident %d MiB, budget %d MiB, formula %d MiB a trial, %v",
		2, w.Phases.Total(), int64(w.CanaryRate*w.Phases.Total().Seconds()), w.StormRate*w.Phases.Storm.Seconds(), parallel,
		peakKB>>10, budget>>20, w.TrialBytes()>>20, time.Since(start).Round(time.Second))
	if peakKB<<10 > budget {
		t.Errorf("peak resident memory %d MiB, over the budget of %d MiB", peakKB>>10, budget>>20)
	}
}

// TestHistoryDetectBoundsPermutations checks that --permutations past the
// documented maximum is refused, naming the flag, before the history is
// opened (it allocated 800 MB for 100,000,000 and died).
func TestHistoryDetectBoundsPermutations(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	got, code := qmlsab(t, "history", "detect", "--permutations", "100000000", "--history-db", db)
	want := "qmlsab history detect: --permutations 100000000: at most 100000 (p-values down to 1/(N+1))"
	if code != 1 || strings.TrimSpace(got) != want {
		t.Errorf("exit %d: %s\nwant exit 1: %s", code, strings.TrimSpace(got), want)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused detect created the history database")
	}
}

// TestSimRefusesDurationsThatAreNoDuration checks that sim refuses an
// election timeout or a --for that is not positive, naming the flag,
// before any member starts (it took -5s and 0 as the 10 s default, and
// --for -1s as "until interrupted").
func TestSimRefusesDurationsThatAreNoDuration(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--election-timeout", "-5s"}, "qmlsab sim: --election-timeout -5s: must be at least 1ms (settings.electionTimeoutMillis is a positive number of milliseconds)"},
		{[]string{"--election-timeout", "0"}, "qmlsab sim: --election-timeout 0s: must be at least 1ms (settings.electionTimeoutMillis is a positive number of milliseconds)"},
		{[]string{"--election-timeout", "500us"}, "qmlsab sim: --election-timeout 500µs: must be at least 1ms (settings.electionTimeoutMillis is a positive number of milliseconds)"},
		{[]string{"--for", "-1s"}, "qmlsab sim: --for -1s: must be more than 0 (leave it out to run until interrupted)"},
		{[]string{"--for", "0"}, "qmlsab sim: --for 0s: must be more than 0 (leave it out to run until interrupted)"},
	} {
		type result struct {
			out  string
			code int
		}
		done := make(chan result, 1)
		go func() {
			got, code := qmlsab(t, append([]string{"sim", "--members", "1"}, tc.args...)...)
			done <- result{got, code}
		}()
		var got string
		var code int
		select {
		case r := <-done:
			got, code = r.out, r.code
		case <-time.After(60 * time.Second): // accepted: the set runs until interrupted
			t.Fatalf("sim %v was accepted and is still running; want exit 1: %s", tc.args, tc.want)
		}
		if code != 1 || strings.TrimSpace(got) != tc.want {
			t.Errorf("sim %v:\n exit %d: %s\nwant exit 1: %s", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
	// A positive --for still runs the set and stops it.
	if got, code := qmlsab(t, "sim", "--members", "1", "--for", "1ms"); code != 0 {
		t.Errorf("sim --members 1 --for 1ms: exit %d: %s", code, got)
	}
}
