package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// clientView is what one trial shows of the storm's client: the most
// storm operations a member held at a sample, what each new primary held
// in its first second, and the codes of the storm's failures.
type clientView struct {
	maxInFlight  map[string]int
	newPrimaries []string // "member2 at 17.3s: 12 storm ops"
	firstSecond  int      // the most any new primary held in its first second
	failures     map[string]int
}

func viewClient(t *testing.T, dir, arm string) clientView {
	t.Helper()
	tdir := store.TrialDir(dir, arm, 1)
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(tdir, store.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	storm, err := store.ReadJSONLinesGz[store.StormOp](filepath.Join(tdir, store.StormFile))
	if err != nil {
		t.Fatal(err)
	}
	v := clientView{maxInFlight: map[string]int{}, failures: map[string]int{}}
	stormOps := func(s store.Sample) int {
		n := 0.0
		for k, x := range s.Values {
			if strings.HasPrefix(k, collect.CensusStagePrefix) {
				n += x
			}
		}
		return int(n)
	}
	slices.SortStableFunc(samples, func(a, b store.Sample) int { return a.At.Compare(b.At) })
	// A primary is a member's process: one that restarts and wins is new.
	var primary string
	var elected time.Time
	for _, s := range samples {
		if !s.Up {
			continue
		}
		n := stormOps(s)
		v.maxInFlight[s.Member] = max(v.maxInFlight[s.Member], n)
		if !s.Primary {
			continue
		}
		if p := s.Member + "/" + s.ProcessID; p != primary {
			if primary != "" {
				elected = s.At
				v.newPrimaries = append(v.newPrimaries, fmt.Sprintf("%s at %v", s.Member, s.At.Sub(samples[0].At).Round(100*time.Millisecond)))
			}
			primary = p
		}
		if !elected.IsZero() && s.At.Sub(elected) < time.Second {
			v.firstSecond = max(v.firstSecond, n)
		}
	}
	for _, o := range storm {
		if o.Outcome == store.Failed {
			v.failures[o.Code]++
		}
	}
	return v
}

// One client on both clocks: the storm's client is the Go driver's on the
// wall clock and the virtual engine's model of it, with the same pool. On
// both, a member never holds more storm operations than the pool has
// connections, a new primary's first second is bounded by the pool, and
// the storm's failures are the driver's: the operations in flight on a
// member that dies fail with a network error, those waiting for one of
// its connections with the cleared pool, and a wait for a primary or a
// connection that outlasts server selection with a timeout. Bounds and
// events, never intervals: the wall clock runs on a busy host.
func TestOneClientOnBothClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time trial")
	}
	// Arm A (no shedding): since spill I/O is conserved, E's shedder (the
	// fitted odds hazard) keeps even a 4 GiB primary alive, and the test
	// needs a member to die under its client.
	e, _ := arms.Lookup("A")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	// A short storm on a small machine (4 GiB, 2 GiB of it mongod's own) so
	// that A's primary dies in it,
	// a recovery long enough for the election (10 s) and the restart
	// (5 s), and a pool small enough to bind at 150 queries/s.
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 16 * time.Second, Recovery: 24 * time.Second}
	w.StormRate, w.MaxPoolSize, w.ServerSelectionTimeout = 150, 20, 20*time.Second
	spec.SpillToDisk = &w
	base := trialRun{Spec: Spec{Arms: []arms.Arm{e}, N: 1, Workload: spec, Seed: 5, Sim: mongosim.SimOptions{BaselineMB: 2048}, SimMemLimitMB: 4 << 10},
		Exec: Exec{SampleInterval: 250 * time.Millisecond, ToolVersion: "test"}}
	restarted := func(r *store.Run) string {
		if m := r.Trials[e.Name][0].Metrics; m[metric.Restarts] < 1 || m[metric.Failovers] < 1 {
			return fmt.Sprintf(e.Name+"#1: %v OOM restarts, %v failovers: the busy host kept the primary from dying in the storm", m[metric.Restarts], m[metric.Failovers])
		}
		return ""
	}
	views := map[store.Clock]clientView{}
	for _, clock := range []store.Clock{store.ClockVirtual, store.ClockWall} {
		cfg := base
		cfg.Clock, cfg.Dir = clock, filepath.Join(t.TempDir(), string(clock))
		if clock == store.ClockWall {
			cfg.Dir = executeWhileTheHostKeepsUp(t, cfg, cfg.Dir, restarted).Dir
		} else {
			out, err := cfg.run(t, context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if why := restarted(out.Run); why != "" {
				t.Fatalf("virtual clock: %s", why)
			}
		}
		v := viewClient(t, cfg.Dir, e.Name)
		views[clock] = v
		t.Logf("%s clock: storm ops held per member at most %v; new primaries %v, holding at most %d in their first second; failures %v",
			clock, v.maxInFlight, v.newPrimaries, v.firstSecond, v.failures)
		for m, n := range v.maxInFlight {
			if n > w.MaxPoolSize {
				t.Errorf("%s clock: %s held %d storm operations at once; the storm's pool has %d connections", clock, m, n, w.MaxPoolSize)
			}
		}
		if len(v.newPrimaries) == 0 {
			t.Errorf("%s clock: no new primary after E's OOM restart", clock)
		}
		if v.firstSecond > w.MaxPoolSize {
			t.Errorf("%s clock: a new primary held %d storm operations in its first second; the pool has %d connections", clock, v.firstSecond, w.MaxPoolSize)
		}
		for code := range v.failures {
			if !slices.Contains([]string{workload.Timeout, workload.NetworkError, workload.PoolCleared}, code) {
				t.Errorf("%s clock: %d storm operations failed with %q; the driver's failures are Timeout, NetworkError and PoolCleared", clock, v.failures[code], code)
			}
		}
		// The member died with operations in flight and more waiting for
		// its connections (the pool binds): both causes show.
		for _, code := range []string{workload.NetworkError, workload.PoolCleared} {
			if v.failures[code] == 0 {
				t.Errorf("%s clock: no storm operation failed with %s when E's primary died", clock, code)
			}
		}
	}
}
