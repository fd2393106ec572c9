package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
	"github.com/qmlsab/qmlsab/workload"
)

var (
	mongosimOnce sync.Once
	mongosimBin  string
	mongosimErr  error
)

func mongosimBinary(t *testing.T) string {
	mongosimOnce.Do(func() {
		dir, err := os.MkdirTemp("", "run-mongosim")
		if err != nil {
			mongosimErr = err
			return
		}
		mongosimBin, mongosimErr = stormtest.BuildMongosim(dir)
	})
	if mongosimErr != nil {
		t.Fatal(mongosimErr)
	}
	return mongosimBin
}

// faultConfig is one wall-clock trial of arm with faults, phases long
// enough for an election (10 s timeout) and a restart (5 s) to happen.
func faultConfig(t *testing.T, arm arms.Arm, faults ...Fault) trialRun {
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("QMLSAB_KEEP"); keep != "" {
		dir = keep // to read the member logs of a failing fault test
	}
	cfg := quickConfig(t, dir, 1)
	cfg.Arms, cfg.Faults, cfg.Parallel = []arms.Arm{arm}, faults, 1
	w := *cfg.Workload.SpillToDisk
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 12 * time.Second, Recovery: 14 * time.Second}
	w.ServerSelectionTimeout = 20 * time.Second
	cfg.Workload.SpillToDisk = &w
	return cfg
}

// runFaulted runs the trial and returns it with its events and samples;
// the trial must be valid (a fault of the system under test is an
// outcome) and every fault must have been applied.
func runFaulted(t *testing.T, cfg trialRun) (store.Trial, []store.Event, []store.Sample) {
	t.Helper()
	out, err := cfg.run(t, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := out.Run
	arm := cfg.Arms[0].Name
	if ts := r.Manifest.Trials[0]; ts.Status != store.Valid {
		t.Fatalf("the trial is %s (%s); a fault of the system under test must not invalidate it", ts.Status, ts.Reason)
	}
	dir := store.TrialDir(cfg.Dir, arm, 1)
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, "events.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(dir, "samples.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, e := range events {
		if e.Kind == "fault" {
			if e.Err != "" {
				t.Errorf("fault %s not applied: %s", e.Fault, e.Err)
			}
			applied++
		}
	}
	if applied != len(cfg.Faults) {
		t.Errorf("%d fault events, want %d", applied, len(cfg.Faults))
	}
	return r.Trials[arm][0], events, samples
}

func localArm(t *testing.T) arms.Arm {
	e, _ := arms.Lookup("E")
	e.Name, e.Target, e.Mongod = "L", arms.TargetLocal, mongosimBinary(t)
	return e
}

func killPrimary(ctx context.Context, dep target.Deployment) error {
	i, err := target.PrimaryIndex(ctx, dep)
	if err != nil {
		return err
	}
	return target.KillMember(dep, i, 5*time.Second)
}

func secondary(ctx context.Context, dep target.Deployment, nth int) (int, error) {
	p, err := target.PrimaryIndex(ctx, dep)
	if err != nil {
		return -1, err
	}
	seen := 0
	for i := range dep.Members() {
		if i != p {
			if seen == nth {
				return i, nil
			}
			seen++
		}
	}
	return -1, nil
}

func TestFaultsOnALocalSet(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials of a 3-process set")
	}
	t.Run("primary SIGKILLed mid-storm", func(t *testing.T) {
		cfg := faultConfig(t, localArm(t), Fault{Name: "SIGKILL primary", At: 4 * time.Second, Do: killPrimary})
		tr, events, samples := runFaulted(t, cfg)
		if m, err := store.Open(cfg.Dir); err != nil || !m.Manifest.Simulated || !tr.Simulated {
			t.Errorf("a local set of cmd/mongosim is a simulation: manifest and trial must say so (%v)", err)
		}
		if tr.Metrics["failovers"] < 1 || tr.Metrics["restarts"] < 1 {
			t.Errorf("failovers %v restarts %v, want the kill visible as both", tr.Metrics["failovers"], tr.Metrics["restarts"])
			for _, s := range samples {
				t.Logf("%s %s up=%v primary=%v process=%s", s.At.Format("15:04:05.000"), s.Member, s.Up, s.Primary, s.ProcessID)
			}
			for _, e := range events {
				t.Logf("%s %s %s %s", e.At.Format("15:04:05.000"), e.Kind, e.Fault, e.Member)
			}
		}
		if tr.Metrics["availability"] >= 1 {
			t.Errorf("availability %v: canaries with no primary must fail", tr.Metrics["availability"])
		}
		topology := 0
		for _, e := range events {
			if e.Kind == "topology" {
				topology++
			}
		}
		if topology < 1 {
			t.Error("the driver's topology monitoring saw no new primary")
		}
	})
	t.Run("a secondary killed and restarted, another hangs", func(t *testing.T) {
		tr, _, samples := runFaulted(t, faultConfig(t, localArm(t),
			Fault{Name: "SIGKILL a secondary", At: 3 * time.Second, Do: func(ctx context.Context, dep target.Deployment) error {
				i, err := secondary(ctx, dep, 0)
				if err != nil {
					return err
				}
				return target.KillMember(dep, i, 0)
			}},
			Fault{Name: "SIGSTOP the other secondary for 6 s", At: 14 * time.Second, Do: func(ctx context.Context, dep target.Deployment) error {
				i, err := secondary(ctx, dep, 1)
				if err != nil {
					return err
				}
				return target.Hang(ctx, dep, i, 6*time.Second)
			}}))
		if tr.Metrics["restarts"] < 1 || tr.Metrics["failovers"] != 0 {
			t.Errorf("restarts %v failovers %v: want the restart and no failover", tr.Metrics["restarts"], tr.Metrics["failovers"])
		}
		gaps := 0
		for _, s := range samples {
			if !s.Up {
				gaps++
			}
		}
		if gaps < 3 {
			t.Errorf("%d gaps in the samples: the killed and the hung member should leave gaps, not errors", gaps)
		}
	})
	t.Run("all members stop answering for 10 s", func(t *testing.T) {
		tr, _, _ := runFaulted(t, faultConfig(t, localArm(t), Fault{Name: "SIGSTOP all for 10 s", At: 5 * time.Second,
			Do: func(ctx context.Context, dep target.Deployment) error {
				var wg sync.WaitGroup
				errs := make([]error, len(dep.Members()))
				for i := range dep.Members() {
					wg.Go(func() { errs[i] = target.Hang(ctx, dep, i, 10*time.Second) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						return err
					}
				}
				return nil
			}}))
		if a := tr.Metrics["availability"]; a > 0.8 || a < 0.2 {
			t.Errorf("availability %v: ten of 28 s unanswered should cost about a third of the canaries", a)
		}
	})
}

func TestFaultsOnTheEmbeddedSet(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	onlyUnderRace(t)
	d, _ := arms.Lookup("D")
	cfg := faultConfig(t, d,
		Fault{Name: "slow primary (300 ms per find/insert/aggregate)", At: 3 * time.Second, Do: func(ctx context.Context, dep target.Deployment) error {
			i, err := target.PrimaryIndex(ctx, dep)
			if err != nil {
				return err
			}
			_, err = target.FailCommand(ctx, dep, i, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"find", "insert", "aggregate"}},
				{Key: "appName", Value: "qmlsab-canary"}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 300}})
			return err
		}},
	)
	cfg.Workload.SpillToDisk.Phases = workload.Phases{Warmup: 1 * time.Second, Storm: 10 * time.Second, Recovery: 1 * time.Second}
	_, events, _ := runFaulted(t, cfg)
	// The canaries that started once the failpoint was on (on a busy host
	// the fault can take seconds to reach the primary) are the slow ones.
	var on time.Time
	for _, e := range events {
		if e.Kind == "fault" {
			on = e.At
		}
	}
	canaries, err := store.ReadJSONLinesGz[store.CanaryOp](filepath.Join(store.TrialDir(cfg.Dir, d.Name, 1), store.CanaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var after []float64
	for _, c := range canaries {
		if c.Scheduled.After(on) && c.Code == "" {
			after = append(after, float64(c.Latency.Milliseconds()))
		}
	}
	if len(after) < 5 {
		t.Fatalf("%d canaries answered after the fault at %v; want enough to judge", len(after), on)
	}
	slices.Sort(after)
	if p50 := after[len(after)/2]; p50 < 300 {
		t.Errorf("canary p50 %v ms after the failpoint (%d canaries): the 300 ms block should show", p50, len(after))
	}
}

// The killOp actor's connection is dropped (every command it sends for a
// while fails with a closed connection): the trial stays valid and the
// actor kills again once its commands go through.
func TestKillOpActorSurvivesADroppedConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	onlyUnderRace(t)
	d, _ := arms.Lookup("D")
	d.Actors[0].KillOp.RSSHighPercent = 1                 // kill whatever runs, so kills are certain
	d.Actors[0].KillOp.Policy = killop.PolicyLargestFirst // running ops too: D's default waits for queued ones
	// The failpoint is switched off, and its count read, on a context of
	// its own: on a busy machine the trial's context may already have
	// ended when the fault's last step runs ("server selection error:
	// context canceled"), which says nothing about the actor.
	var restored time.Time
	cfg := faultConfig(t, d, Fault{Name: "drop the killOp actor's connections 10 times", At: 1500 * time.Millisecond,
		Do: func(ctx context.Context, dep target.Deployment) error {
			i, err := target.PrimaryIndex(ctx, dep)
			if err != nil {
				return err
			}
			if _, err := target.FailCommand(ctx, dep, i, bson.D{{Key: "times", Value: 10}}, bson.D{{Key: "failCommands", Value: bson.A{"aggregate", "serverStatus", "killOp"}},
				{Key: "appName", Value: "qmlsab-killop"}, {Key: "closeConnection", Value: true}}); err != nil {
				return err
			}
			time.Sleep(time.Second) // the window in which the actor's commands fail
			offCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fired, err := target.FailCommand(offCtx, dep, i, "off", nil)
			restored = time.Now()
			if err == nil && fired == 0 {
				err = fmt.Errorf("the failpoint never fired: the actor's connection was not dropped")
			}
			return err
		}})
	// A storm long enough that the actor has seconds to kill after the
	// failpoint is off, however late a busy machine switches it off.
	cfg.Workload.SpillToDisk.Phases = workload.Phases{Warmup: 1 * time.Second, Storm: 12 * time.Second, Recovery: 1 * time.Second}
	_, events, _ := runFaulted(t, cfg)
	after := 0
	for _, e := range events {
		if e.Kind == "kill" && e.Kill.Err == "" && e.At.After(restored) {
			after++
		}
	}
	if after == 0 {
		t.Error("the actor killed nothing after its connection was dropped")
	}
}

// checkStoppedForTheDisk holds a run the results disk stopped to what it
// must leave: a Stopped error naming the disk's error and the folder, no
// trial invalid for the disk (the one being written is interrupted, to
// run again), the finished trials readable.
func checkStoppedForTheDisk(t *testing.T, dir string, err error, diskErr string) {
	t.Helper()
	var stopped *Stopped
	if !errors.As(err, &stopped) || stopped.Interrupted || stopped.Dir != dir || !strings.Contains(err.Error(), diskErr) || !strings.Contains(err.Error(), "finished trials are intact") {
		t.Fatalf("the run the disk stopped: %v", err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatalf("the run is unreadable after the disk failed: %v", err)
	}
	valid, interrupted := 0, 0
	for _, ts := range r.Manifest.Trials {
		switch ts.Status {
		case store.Valid:
			valid++
		case store.Interrupted:
			interrupted++
		case store.Invalid:
			t.Errorf("%s#%d is invalid (%s): a results disk that failed is the harness's fault, and --resume never reruns an invalid trial", ts.Arm, ts.Index, ts.Reason)
		}
	}
	if valid == 0 || valid == len(r.Manifest.Trials) {
		t.Fatalf("%d of %d trials valid: the disk should fail part-way", valid, len(r.Manifest.Trials))
	}
	for _, trials := range r.Trials {
		for _, tr := range trials {
			if _, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(store.TrialDir(dir, tr.Arm, tr.Index), "samples.jsonl.gz")); err != nil {
				t.Errorf("a finished trial was damaged: %v", err)
			}
		}
	}
	t.Logf("%d trials finished, %d interrupted, before the disk failed", valid, interrupted)
}

// checkResumedToN holds a resumed run to n valid trials per arm, none twice.
func checkResumedToN(t *testing.T, dir string, n int) {
	t.Helper()
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		if got, valid := stormtest.TrialsOnce(t, r, arm), len(r.Valid(arm)); got != n || valid != n {
			t.Errorf("%s: %d trials, %d valid, after the resume; want %d valid", arm, got, valid, n)
		}
	}
}

// The results disk fills on the third trial's files (an injected ENOSPC,
// so this runs everywhere): the run stops naming the error and --resume,
// the trial is left interrupted rather than invalid, and --resume with
// the disk working completes n valid trials per arm.
func TestResultsDiskFullLeavesTheTrialToResume(t *testing.T) {
	sel, _ := arms.Select([]string{"D", "E"}, nil)
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := trialRun{Spec: Spec{Arms: sel, N: 3, Workload: spec, Profile: "quick", Seed: 1, Clock: store.ClockVirtual},
		Exec: Exec{Parallel: 1, ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}, Dir: dir}
	writes := 0
	cfg.writeFiles = func(dir string, files store.TrialFiles) error {
		if writes++; writes == 3 {
			return &os.PathError{Op: "write", Path: filepath.Join(dir, "samples.jsonl.gz"), Err: syscall.ENOSPC}
		}
		return store.WriteTrial(dir, files)
	}
	_, err := cfg.run(t, context.Background())
	checkStoppedForTheDisk(t, dir, err, "no space left on device")
	if _, err := Resume(context.Background(), dir, Exec{ToolVersion: "test", Host: cfg.Host}, Given{}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	checkResumedToN(t, dir, 3)
}

// The results disk fills up mid-run: the run stops with a message naming
// what failed and --resume, the trials finished before are intact and
// readable, and once the disk has room --resume completes the run.
func TestResultsDiskFullStopsTheRunCleanly(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	os.MkdirAll(mnt, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	sel, _ := arms.Select([]string{"D", "E"}, nil)
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	cfg := trialRun{Spec: Spec{Arms: sel, N: 5, Workload: spec, Seed: 1, Clock: store.ClockVirtual, Sim: quickConfig(t, "", 1).Sim, SimMemLimitMB: 32 << 10},
		Exec: Exec{Parallel: 1}, Dir: filepath.Join(mnt, "run")}
	cfg.Sim.CPUs, cfg.Sim.BaselineMB = 8, 6<<10
	_, err := cfg.run(t, context.Background())
	checkStoppedForTheDisk(t, cfg.Dir, err, "no space left on device")
	if out, err := exec.Command("mount", "-o", "remount,size=64m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	// The resume runs on the machine the run recorded (not the default).
	if _, err := Resume(context.Background(), cfg.Dir, Exec{}, Given{}); err != nil {
		t.Fatalf("resume once the disk has room: %v", err)
	}
	checkResumedToN(t, cfg.Dir, 5)
}

// Interrupting a run on a uri target still restores every parameter the
// arm changed on the deployment it attached to.
func TestInterruptedURITrialRestoresParameters(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trial")
	}
	ctx := context.Background()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	params := func() map[string]string {
		c, err := mongo.Connect(options.Client().ApplyURI(rs.URI()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(ctx)
		out := map[string]string{}
		for _, name := range []string{"queryMemoryLoadSheddingHighMarkPercent", "queryMemoryLoadSheddingLowMarkPercent", "executionControlDeprioritizationGate"} {
			raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
			if err != nil {
				t.Fatal(err)
			}
			out[name] = raw.Lookup(name).String()
		}
		return out
	}
	before := params()
	e, _ := arms.Lookup("E")
	e.Name, e.Target, e.URI = "U", arms.TargetURI, rs.URI()
	cfg := faultConfig(t, e)
	rctx, cancel := context.WithCancel(ctx)
	var changed map[string]string
	cfg.Faults = []Fault{{Name: "interrupt", At: 3 * time.Second, Do: func(context.Context, target.Deployment) error {
		changed = params()
		cancel() // Ctrl-C
		return nil
	}}}
	var stopped *Stopped
	if _, err := cfg.run(t, rctx); !errors.As(err, &stopped) || !stopped.Interrupted {
		t.Fatalf("interrupted run: %v", err)
	}
	if changed["queryMemoryLoadSheddingHighMarkPercent"] == before["queryMemoryLoadSheddingHighMarkPercent"] && changed["executionControlDeprioritizationGate"] == before["executionControlDeprioritizationGate"] {
		t.Fatalf("the arm changed nothing (before %v, during %v): the test proves nothing", before, changed)
	}
	if after := params(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("parameters not restored after the interrupt:\nbefore %v\nduring %v\nafter  %v", before, changed, after)
	}
}

// The results disk turns read-only mid-run: the run stops naming the
// error, and the trials finished before stay readable.
func TestResultsDiskReadOnlyStopsTheRunCleanly(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "ro")
	os.MkdirAll(mnt, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	sel, _ := arms.Select([]string{"D", "E"}, nil)
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	var buf stormtest.SyncBuffer
	cfg := trialRun{Spec: Spec{Arms: sel, N: 5, Workload: spec, Seed: 1, Clock: store.ClockVirtual, SimMemLimitMB: 32 << 10},
		Exec: Exec{Parallel: 1, Progress: progress.Lines(&buf)}, Dir: filepath.Join(mnt, "run")}
	cfg.Sim.CPUs, cfg.Sim.BaselineMB = 8, 6<<10
	go func() { // once the first trial is in, the disk turns read-only
		for !strings.Contains(buf.String(), "D#1: valid") {
			time.Sleep(10 * time.Millisecond)
		}
		exec.Command("mount", "-o", "remount,ro", mnt).Run()
	}()
	_, err := cfg.run(t, context.Background())
	if err == nil || !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), "finished trials are intact") {
		t.Fatalf("a read-only disk: %v", err)
	}
	r, err := store.Open(cfg.Dir)
	if err != nil {
		t.Fatalf("the run is unreadable: %v", err)
	}
	if len(r.Trials["D"]) < 1 {
		t.Fatal("the trial finished before the disk turned read-only is gone")
	}
	if started := strings.Count(buf.String(), ": started"); started > 3 {
		t.Errorf("%d trials started; after the disk failed nothing more should start:\n%s", started, buf.String())
	}
}
