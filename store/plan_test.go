package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/plan"
)

// writeShard writes shard i/n of a plan of units D,E blocks, every trial
// valid with one metric, and returns its folder. The plan's digest is
// the one its manifest gives, made before edit changes the manifest.
func writeShard(t *testing.T, root string, i, n, units int, edit func(*Manifest)) string {
	t.Helper()
	dir := filepath.Join(root, "shard-"+string(rune('0'+i)))
	m := Manifest{Schema: ManifestSchema, Created: time.Unix(1, 0).UTC(), Seed: 1, Target: "embedded", Simulated: true,
		WorkloadName: "w", Workload: []byte(`{"name":"w","kind":"spill_to_disk"}`), ArmList: []ArmInfo{{Name: "D"}, {Name: "E"}},
		Plan: &Plan{Units: units, Arms: []string{"D", "E"}}, Shard: &plan.Shard{Index: i, Count: n}}
	digest, err := plan.Digest(plan.Conditions{Workload: m.Workload, Clock: string(m.Clock)}, m.Seed, plan.Units(m.Plan.Arms, units, m.Seed))
	if err != nil {
		t.Fatal(err)
	}
	m.Plan.Digest = digest
	h := Host{Hostname: "h" + string(rune('0'+i))}.WithID()
	m.AddHost(h)
	for _, k := range m.Shard.Units(units) {
		for _, arm := range []string{"E", "D"} {
			m.Trials = append(m.Trials, TrialStatus{Arm: arm, Index: k + 1, Status: Valid, Host: h.ID})
			tr := Trial{Schema: TrialSchema, Arm: arm, Index: k + 1, Metrics: map[string]float64{"x": float64(k)}, Simulated: true}
			if err := WriteTrial(TrialDir(dir, arm, k+1), TrialFiles{Trial: tr}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if edit != nil {
		edit(&m)
	}
	if err := WriteJSON(filepath.Join(dir, ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMergeShardsChecksBeforeWriting(t *testing.T) {
	root := t.TempDir()
	s1 := writeShard(t, root, 1, 2, 3, nil)
	s2 := writeShard(t, root, 2, 2, 3, nil)
	out := filepath.Join(root, "out", "merged")
	m, set, err := MergeShards(context.Background(), MergeOptions{Dirs: []string{s2, s1}, Expect: 2, Out: out})
	if err != nil || len(set.Problems()) != 0 {
		t.Fatalf("merge: %v %v", err, set.Problems())
	}
	var order []string
	for _, ts := range m.Trials {
		order = append(order, plan.Key(ts.Arm, ts.Index))
	}
	if strings.Join(order, " ") != "E#1 D#1 E#2 D#2 E#3 D#3" || len(m.Hosts) != 2 || len(m.Shards) != 2 || m.Shards[0].Shard.Index != 1 {
		t.Errorf("merged manifest: trials %v hosts %v shards %+v", order, m.Hosts, m.Shards)
	}
	r, err := Open(out)
	if err != nil || len(r.Trials["D"]) != 3 || r.Trials["D"][2].Metrics["x"] != 2 {
		t.Fatalf("merged run reads back %v: %+v", err, r)
	}
	if fi, _ := os.Stat(filepath.Join(TrialDir(out, "D", 2), TrialFile)); fi == nil {
		t.Error("the merged run lacks D#2's trial.json")
	}

	bad := t.TempDir()
	cases := []struct {
		name string
		dirs func() []string
		opts MergeOptions
		want string
	}{
		{"a trial outside its shard's units", func() []string {
			return []string{writeShard(t, bad, 1, 2, 3, func(m *Manifest) { m.Trials[0].Index, m.Trials[0].Status = 2, Pending }), s2}
		}, MergeOptions{Expect: 2}, "trial E#2 is not in shard 1/2's units (1, 3)"},
		{"a shard lacking a trial", func() []string {
			return []string{writeShard(t, bad, 1, 2, 3, func(m *Manifest) { m.Trials = m.Trials[1:] }), s2}
		}, MergeOptions{Expect: 2}, "shard 1/2 lacks trial E#1 of its unit 1"},
		{"another split", func() []string { return []string{s1, s2} }, MergeOptions{Expect: 3}, "shard 1/2, but " + FieldExpect + " 3"},
		{"out not empty", func() []string {
			os.MkdirAll(filepath.Join(bad, "full", "x"), 0o755)
			return []string{s1, s2}
		}, MergeOptions{Expect: 2, Out: filepath.Join(bad, "full")}, "is not empty"},
		{"out inside a shard", func() []string { return []string{s1, s2} }, MergeOptions{Expect: 2, Out: filepath.Join(s1, "m")}, "is inside shard folder"},
		{"a merged run", func() []string { return []string{out} }, MergeOptions{Expect: 2}, out + " is a merged run"},
		{"wall-clock shards run at other parallelism", func() []string {
			wall := func(par int) func(*Manifest) { return func(m *Manifest) { m.Clock, m.Parallel = ClockWall, par } }
			return []string{writeShard(t, bad, 1, 2, 3, wall(1)), writeShard(t, bad, 2, 2, 3, wall(4))}
		}, MergeOptions{Expect: 2}, "ran 4 wall-clock trials at once, but"},
	}
	for _, c := range cases {
		o := c.opts
		o.Dirs = c.dirs()
		if o.Out == "" {
			o.Out = filepath.Join(bad, "never")
		}
		before, _ := os.ReadDir(filepath.Dir(o.Out))
		_, _, err := MergeShards(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
		after, _ := os.ReadDir(filepath.Dir(o.Out))
		if len(after) != len(before) {
			t.Errorf("%s: the failed merge wrote beside --out", c.name)
		}
		os.RemoveAll(filepath.Join(bad, "shard-1"))
		os.RemoveAll(filepath.Join(bad, "shard-2"))
	}
}

// A run written before hosts were recorded names its host by the
// manifest's hostname.
func TestHostOfAnOlderRun(t *testing.T) {
	m := Manifest{Host: "box"}
	if h := m.HostOf(TrialStatus{Arm: "D", Index: 1}); h.Hostname != "box" || h.ID != "hostname:box" {
		t.Errorf("%+v", h)
	}
	a, b := Host{Hostname: "x", Cores: 2}.WithID(), Host{Hostname: "x", Cores: 4}.WithID()
	if a.ID == b.ID || a.ID != (Host{Hostname: "x", Cores: 2, ID: "junk"}).WithID().ID || len(a.ID) != 12 {
		t.Errorf("host IDs %s %s", a.ID, b.ID)
	}
}
