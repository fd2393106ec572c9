package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

func planArms(t *testing.T, names ...string) []arms.Arm {
	t.Helper()
	sel, err := arms.Select(names, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// A run made before plans (no plan, trials interleaved in its arm list's
// order) resumes with the seeds it started with.
func TestSeedsOfARunWithoutAPlan(t *testing.T) {
	m := store.Manifest{Seed: 5, ArmList: []store.ArmInfo{{Name: "E"}, {Name: "D"}}}
	for i := 1; i <= 3; i++ {
		for _, a := range []string{"E", "D"} {
			m.Trials = append(m.Trials, store.TrialStatus{Arm: a, Index: i})
		}
	}
	s := seeds(m)
	for i, ts := range m.Trials {
		if got := s[plan.Key(ts.Arm, ts.Index)]; got != 5+uint64(i) {
			t.Errorf("%s#%d: seed %d, want %d (run seed + place in the run)", ts.Arm, ts.Index, got, 5+i)
		}
	}
}

// An unsharded virtual run seeds each trial as runs always have, records
// its plan and host, and a shard runs just its units; resuming a shard
// as another shard is refused, and so is a split into more shards than
// the plan has units.
func TestShardRunsItsUnitsWithTheirSeeds(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	base := trialRun{Spec: Spec{Arms: planArms(t, "D", "E"), N: 3, Workload: spec, Profile: "quick", Seed: 9, Clock: store.ClockVirtual},
		Exec: Exec{ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}}
	whole, shard := base, base
	whole.Dir = filepath.Join(t.TempDir(), "whole")
	shard.Dir, shard.Shard = filepath.Join(t.TempDir(), "shard"), plan.Shard{Index: 2, Count: 2}
	for _, cfg := range []trialRun{whole, shard} {
		if _, err := cfg.run(t, context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	w, err := store.Open(whole.Dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(shard.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Manifest.Plan == nil || s.Manifest.Plan == nil || w.Manifest.Plan.Digest != s.Manifest.Plan.Digest {
		t.Fatalf("plans %+v and %+v: a shard must record the whole run's plan", w.Manifest.Plan, s.Manifest.Plan)
	}
	if s.Manifest.Shard == nil || *s.Manifest.Shard != shard.Shard || len(s.Manifest.Trials) != 2 {
		t.Fatalf("shard manifest: shard %v, trials %+v; want 2/2 with unit 2's two trials", s.Manifest.Shard, s.Manifest.Trials)
	}
	for _, arm := range []string{"D", "E"} {
		for _, tr := range w.Trials[arm] {
			var meta struct{ Seed uint64 }
			json.Unmarshal(tr.Metadata, &meta)
			want := 9 + uint64((tr.Index-1)*2+slices.Index([]string{"D", "E"}, arm))
			if meta.Seed != want {
				t.Errorf("%s#%d seeded %d, want %d (as the interleaved order seeded it)", arm, tr.Index, meta.Seed, want)
			}
		}
		if got := s.Trials[arm]; len(got) != 1 || got[0].Index != 2 || !maps(got[0].Metrics, w.Trials[arm][1].Metrics) {
			t.Errorf("shard 2/2's %s trials %+v; want trial 2, with the whole run's figures", arm, got)
		}
	}
	for _, ts := range s.Manifest.Trials {
		if ts.Host != "h1" {
			t.Errorf("%s#%d ran on host %q, want h1", ts.Arm, ts.Index, ts.Host)
		}
	}
	shard.Shard = plan.Shard{Index: 1, Count: 2}
	if _, err := shard.resume(context.Background(), Given{}); !isField(err, FieldShard) || !strings.Contains(err.Error(), FieldShard+" 1/2") || !strings.Contains(err.Error(), "shard 2/2") {
		t.Errorf("resuming shard 2/2 as 1/2: %v", err)
	}
	big := base
	big.Dir, big.Shard = filepath.Join(t.TempDir(), "big"), plan.Shard{Index: 1, Count: 4}
	if _, err := big.run(t, context.Background()); !isField(err, FieldShard) || !strings.Contains(err.Error(), FieldShard+" 1/4") {
		t.Errorf("4 shards of 3 units: %v", err)
	}
	if _, err := os.Stat(big.Dir); err == nil {
		t.Error("the refused split made its folder")
	}
}

func maps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDetectHostTakesTheEnvironmentsFields(t *testing.T) {
	sel := planArms(t, "D")
	t.Setenv(HostFingerprintEnv, "")
	real, err := DetectHost(sel)
	if err != nil || real.Hostname == "" || real.Cores < 1 || real.Target != "embedded" || real.ID == "" {
		t.Fatalf("detected %+v, %v", real, err)
	}
	t.Setenv(HostFingerprintEnv, `{"hostname":"ci-7","cores":64}`)
	fake, err := DetectHost(sel)
	if err != nil || fake.Hostname != "ci-7" || fake.Cores != 64 || fake.Kernel != real.Kernel || fake.ID == real.ID {
		t.Errorf("with %s: %+v, %v", HostFingerprintEnv, fake, err)
	}
	t.Setenv(HostFingerprintEnv, `{"host":"x"}`)
	if _, err := DetectHost(sel); err == nil || !strings.Contains(err.Error(), HostFingerprintEnv) {
		t.Errorf("a bad %s: %v", HostFingerprintEnv, err)
	}
}
