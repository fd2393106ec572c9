package run

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
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

// A plan is repetition blocks: unit k holds every arm's trial k+1 once, in
// a seeded order that varies between units, and each trial keeps the seed
// the interleaved order D1 E1 D2 E2 … has always given it.
func TestPlanBlocksKeepEveryTrialsSeed(t *testing.T) {
	sel := planArms(t, "A", "D", "E", "F")
	wl := []byte(`{"name":"w","kind":"spill_to_disk"}`)
	p, err := NewPlan(sel, 5, wl, Virtual, 11)
	if err != nil {
		t.Fatal(err)
	}
	orders := map[string]bool{}
	for k, unit := range p.Units {
		var names []string
		for _, tr := range unit {
			names = append(names, tr.Arm)
			pos := slices.Index(p.Arms, tr.Arm)
			if tr.Index != k+1 || tr.Seed != 11+uint64(k*4+pos) {
				t.Errorf("unit %d: %+v, want index %d and seed %d", k, tr, k+1, 11+k*4+pos)
			}
		}
		orders[strings.Join(names, " ")] = true
		if sorted := slices.Sorted(slices.Values(names)); strings.Join(sorted, "") != "ADEF" {
			t.Errorf("unit %d runs %v, want every arm once", k, names)
		}
	}
	if len(orders) < 2 {
		t.Errorf("every unit runs the arms in the same order %v; want a seeded order per unit", orders)
	}
	again, _ := NewPlan(sel, 5, wl, Virtual, 11)
	if again.Digest != p.Digest || len(p.Digest) != 64 {
		t.Errorf("the same plan has digests %s and %s", p.Digest, again.Digest)
	}
	for name, other := range map[string]func() (Plan, error){
		"seed":  func() (Plan, error) { return NewPlan(sel, 5, wl, Virtual, 12) },
		"n":     func() (Plan, error) { return NewPlan(sel, 6, wl, Virtual, 11) },
		"clock": func() (Plan, error) { return NewPlan(sel, 5, wl, Wall, 11) },
		"workload": func() (Plan, error) {
			return NewPlan(sel, 5, []byte(`{"name":"w2","kind":"spill_to_disk"}`), Virtual, 11)
		},
		"arms": func() (Plan, error) { return NewPlan(planArms(t, "A", "D", "E", "G"), 5, wl, Virtual, 11) },
	} {
		q, err := other()
		if err != nil || q.Digest == p.Digest {
			t.Errorf("another %s gives digest %s (err %v), the same as the plan's", name, q.Digest, err)
		}
	}
	// Key order in the workload's JSON does not change the plan.
	same, _ := NewPlan(sel, 5, []byte(`{"kind":"spill_to_disk","name":"w"}`), Virtual, 11)
	if same.Digest != p.Digest {
		t.Error("the digest depends on the workload's key order")
	}
	// The shards of any split partition the plan, each taking whole units.
	all := p.Trials(store.Shard{})
	for n := 1; n <= 5; n++ {
		var union []PlannedTrial
		for i := 1; i <= n; i++ {
			part := p.Trials(store.Shard{Index: i, Count: n})
			for _, tr := range part {
				if (tr.Index-1)%n != i-1 {
					t.Errorf("shard %d/%d has trial %s#%d", i, n, tr.Arm, tr.Index)
				}
			}
			union = append(union, part...)
		}
		if len(union) != len(all) {
			t.Fatalf("%d shards hold %d trials, want %d", n, len(union), len(all))
		}
		for _, tr := range all {
			if !slices.Contains(union, tr) {
				t.Errorf("%d shards lack %+v", n, tr)
			}
		}
	}
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
		if got := s[fmt.Sprint(ts.Arm, "#", ts.Index)]; got != 5+uint64(i) {
			t.Errorf("%s#%d: seed %d, want %d (run seed + place in the run)", ts.Arm, ts.Index, got, 5+i)
		}
	}
}

// An unsharded virtual run seeds each trial as runs always have, records
// its plan and host, and a shard runs just its units; resuming a shard
// with another --shard is refused.
func TestShardRunsItsUnitsWithTheirSeeds(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	base := Config{Arms: planArms(t, "D", "E"), N: 3, Workload: spec, Profile: "quick", Seed: 9, Clock: Virtual, ToolVersion: "test",
		Host: &store.Host{ID: "h1", Hostname: "one"}}
	whole, shard := base, base
	whole.Dir = filepath.Join(t.TempDir(), "whole")
	shard.Dir, shard.Shard = filepath.Join(t.TempDir(), "shard"), store.Shard{Index: 2, Count: 2}
	for _, cfg := range []Config{whole, shard} {
		if _, err := Execute(context.Background(), cfg); err != nil {
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
	shard.Resume, shard.Shard = true, store.Shard{Index: 1, Count: 2}
	if _, err := Execute(context.Background(), shard); err == nil || !strings.Contains(err.Error(), "Config.Shard 1/2") || !strings.Contains(err.Error(), "shard 2/2") {
		t.Errorf("resuming shard 2/2 as 1/2: %v", err)
	}
	big := base
	big.Dir, big.Shard = filepath.Join(t.TempDir(), "big"), store.Shard{Index: 1, Count: 4}
	if _, err := Execute(context.Background(), big); err == nil || !strings.Contains(err.Error(), "Config.Shard 1/4") {
		t.Errorf("4 shards of 3 units: %v", err)
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
