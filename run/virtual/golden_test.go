package virtual

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/store"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-trials.json from the engine as it is now")

// goldenTrial is one pinned trial: its summary's metrics and a digest of
// the records the engine wrote (samples, kills, storm and canary ops).
type goldenTrial struct {
	Arm  string `json:"arm"`
	Seed uint64 `json:"seed"`
	Host bool   `json:"host_model"`
	// Setting names a trial's setting when it is not DefaultConfig's
	// (goldenSettings).
	Setting string             `json:"setting,omitempty"`
	Metrics map[string]float64 `json:"metrics"`
	// NaN is the metrics whose value is NaN (JSON has no NaN).
	NaN []string `json:"nan,omitempty"`
	// AtLeast are the metrics that are only lower bounds (a latency a
	// client timeout cut short), at their bound.
	AtLeast map[string]float64 `json:"at_least,omitempty"`
	Records string             `json:"records_sha256"`
	Samples int                `json:"samples"`
	Kills   int                `json:"kills"`
	Storm   int                `json:"storm_ops"`
}

// goldenStart is the fixed instant model time 0 stands for, so record
// times are the same from run to run.
var goldenStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// goldenSettings are the settings other than DefaultConfig's and the
// built-in arm's that the pinned trials run, by name:
//   - storm300-other2GiB, the corner of BenchmarkSweep's grid where the
//     storm is fastest and the host leaves mongod least, so that members
//     are OOM-killed, restart and fail over;
//   - yield-by-time, where a running query yields by its slice's time
//     alone (internalQueryExecYieldIterations=0), so that every tick's
//     share of a slice counts.
var goldenSettings = map[string]func(*Config, *arms.Arm){
	"storm300-other2GiB": func(c *Config, _ *arms.Arm) {
		c.Workload.StormRate = 300
		h := model.DefaultHost()
		h.OtherProcessBytes = 2 << 30
		c.Hardware.Host = &h
	},
	"yield-by-time": func(_ *Config, a *arms.Arm) {
		a.SetParameters = maps.Clone(a.SetParameters)
		a.SetParameters["internalQueryExecYieldIterations"] = "0"
	},
}

// TestTrialFiguresPinned pins per-trial figures for fixed seeds, at the
// embedded default's default profile: arms D and E, seeds 1–5 (the
// calibration's arms), F and G, seeds 1–3 (the sweeper's), and D, E and F
// on seed 1 in two more settings (goldenSettings).
// testdata/golden-trials.json pins what the engine recorded before a
// change meant only to make it faster (issue 24's speed-up; issue 37's
// parking of paused writers, whose F, G and crash trials were generated
// at commit d3bbfab, before it): such a change must change how fast a
// trial runs, never what it records. A change to the model made on
// purpose regenerates it (go test ./run/virtual -run
// TestTrialFiguresPinned -update), and says so in its commit.
func TestTrialFiguresPinned(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty-two default-profile trials")
	}
	type job struct {
		arm     string
		seed    uint64
		setting string
	}
	var jobs []job
	for _, a := range []string{"D", "E"} {
		for seed := uint64(1); seed <= 5; seed++ {
			jobs = append(jobs, job{a, seed, ""})
		}
	}
	for _, a := range []string{"F", "G"} {
		for seed := uint64(1); seed <= 3; seed++ {
			jobs = append(jobs, job{a, seed, ""})
		}
	}
	for _, setting := range []string{"storm300-other2GiB", "yield-by-time"} {
		for _, a := range []string{"D", "E", "F"} {
			jobs = append(jobs, job{a, 1, setting})
		}
	}
	got := make([]goldenTrial, len(jobs))
	// The trials run on every CPU: each is deterministic for its seed
	// whatever runs beside it.
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cfg := DefaultConfig(j.seed)
			cfg.Start = goldenStart
			a, _ := arms.Lookup(j.arm)
			if j.setting != "" {
				goldenSettings[j.setting](&cfg, &a)
			}
			tr, err := Run(context.Background(), cfg, a)
			if err != nil {
				errs[i] = err
				return
			}
			got[i] = pinTrial(j.arm, j.seed, true, tr)
			got[i].Setting = j.setting
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden-trials.json")
	if *update {
		raw, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d trials)", path, len(got))
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the pinned figures: %v", err)
	}
	var want []goldenTrial
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s pins %d trials, the test ran %d", path, len(want), len(got))
	}
	for i := range got {
		g, w := got[i], want[i]
		name := fmt.Sprintf("%s seed %d host=%v %s", g.Arm, g.Seed, g.Host, g.Setting)
		if g.Arm != w.Arm || g.Seed != w.Seed || g.Host != w.Host || g.Setting != w.Setting {
			t.Fatalf("trial %d is %s, the file pins %s seed %d host=%v %s", i, name, w.Arm, w.Seed, w.Host, w.Setting)
		}
		for k, v := range w.Metrics {
			if gv, ok := g.Metrics[k]; !ok || gv != v {
				t.Errorf("%s: %s = %v (present %v), pinned %v", name, k, gv, ok, v)
			}
		}
		for k := range g.Metrics {
			if _, ok := w.Metrics[k]; !ok {
				t.Errorf("%s: metric %s = %v is new, not pinned", name, k, g.Metrics[k])
			}
		}
		if !maps.Equal(g.AtLeast, w.AtLeast) {
			t.Errorf("%s: lower bounds %v, pinned %v", name, g.AtLeast, w.AtLeast)
		}
		if !slices.Equal(g.NaN, w.NaN) {
			t.Errorf("%s: NaN metrics %v, pinned %v", name, g.NaN, w.NaN)
		}
		if g.Samples != w.Samples || g.Kills != w.Kills || g.Storm != w.Storm {
			t.Errorf("%s: %d samples, %d kills, %d storm ops; pinned %d, %d, %d", name, g.Samples, g.Kills, g.Storm, w.Samples, w.Kills, w.Storm)
		}
		if g.Records != w.Records {
			t.Errorf("%s: the records' digest changed (%s, pinned %s): the engine recorded something else", name, g.Records, w.Records)
		}
	}
}

func pinTrial(arm string, seed uint64, host bool, tr Trial) goldenTrial {
	s := Summarize(arm, seed, tr)
	g := goldenTrial{Arm: arm, Seed: seed, Host: host, Metrics: map[string]float64{}, Samples: len(tr.Records.Samples),
		Kills: len(tr.Records.Kills), Storm: len(tr.Records.Storm), Records: recordsDigest(tr.Records)}
	for k, v := range s.Metrics {
		if math.IsNaN(v) {
			g.NaN = append(g.NaN, k)
			continue
		}
		g.Metrics[k] = v
	}
	slices.Sort(g.NaN)
	if b := metric.Evaluate(tr.Records).AtLeast; len(b) > 0 {
		g.AtLeast = b
	}
	return g
}

// recordsDigest hashes the fields of the records this engine writes, named
// one by one (not the struct's encoding), so a field added to store's
// types elsewhere does not move the pin while a changed value does.
func recordsDigest(r store.Records) string {
	h := sha256.New()
	num := func(v uint64) { _ = binary.Write(h, binary.LittleEndian, v) }
	str := func(s string) { num(uint64(len(s))); h.Write([]byte(s)) }
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	at := func(t time.Time) { num(uint64(t.UnixNano())) }
	for _, k := range slices.Sorted(maps.Keys(r.PhaseStarts)) {
		str(string(k))
		at(r.PhaseStarts[k])
	}
	for _, s := range r.Samples {
		at(s.At)
		str(s.Member)
		flag(s.Up)
		flag(s.Primary)
		str(s.ProcessID)
		values(h, s.Values)
	}
	for _, k := range r.Kills {
		at(k.At)
		num(uint64(k.OpID))
		str(k.AppName)
		num(uint64(k.TrackedBytes))
		flag(k.Queued)
		str(k.Queue)
		str(k.Stage)
		num(uint64(k.ResidentMB))
		str(k.Err)
	}
	// A member's crash fails its live operations in the model's map order,
	// so records answered at one crash instant come in no fixed order:
	// the client-side ops are hashed as a set, in a canonical order.
	storm := slices.Clone(r.Storm)
	slices.SortFunc(storm, func(a, b store.StormOp) int {
		return cmp.Or(a.Scheduled.Compare(b.Scheduled), cmp.Compare(a.Latency, b.Latency), cmp.Compare(a.Stage, b.Stage),
			cmp.Compare(a.Code, b.Code), cmp.Compare(a.TrackedBytes, b.TrackedBytes))
	})
	canaries := slices.Clone(r.Canaries)
	slices.SortFunc(canaries, func(a, b store.CanaryOp) int {
		return cmp.Or(a.Scheduled.Compare(b.Scheduled), cmp.Compare(a.Latency, b.Latency), cmp.Compare(a.Code, b.Code))
	})
	for _, o := range storm {
		at(o.Scheduled)
		num(uint64(o.Latency))
		str(o.Stage)
		str(string(o.Outcome))
		str(o.Code)
		num(uint64(o.TrackedBytes))
	}
	for _, c := range canaries {
		at(c.Scheduled)
		num(uint64(c.Latency))
		flag(c.Write)
		flag(c.OK)
		str(c.Code)
		flag(c.Censored)
	}
	flag(r.KillOpActor)
	return hex.EncodeToString(h.Sum(nil))
}

func values(h hash.Hash, m map[string]float64) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(k)))
		h.Write([]byte(k))
		_ = binary.Write(h, binary.LittleEndian, math.Float64bits(m[k]))
	}
}
