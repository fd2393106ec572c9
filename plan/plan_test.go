package plan

import (
	"slices"
	"strings"
	"testing"
)

var wl = []byte(`{"name":"w","kind":"spill_to_disk"}`)

// A plan is repetition blocks: unit k holds every arm's trial k+1 once, in
// a seeded order that varies between units, and each trial keeps the seed
// the interleaved order D1 E1 D2 E2 … has always given it.
func TestBlocksKeepEveryTrialsSeed(t *testing.T) {
	names := []string{"A", "D", "E", "F"}
	c := Conditions{Workload: wl, Arms: "- name: D\n", Clock: "virtual"}
	p, err := New(names, 5, 11, c)
	if err != nil {
		t.Fatal(err)
	}
	orders := map[string]bool{}
	for k, unit := range p.Units {
		var got []string
		for _, tr := range unit {
			got = append(got, tr.Arm)
			pos := slices.Index(p.Arms, tr.Arm)
			if tr.Index != k+1 || tr.Seed != 11+uint64(k*4+pos) {
				t.Errorf("unit %d: %+v, want index %d and seed %d", k, tr, k+1, 11+k*4+pos)
			}
		}
		orders[strings.Join(got, " ")] = true
		if sorted := slices.Sorted(slices.Values(got)); strings.Join(sorted, "") != "ADEF" {
			t.Errorf("unit %d runs %v, want every arm once", k, got)
		}
	}
	if len(orders) < 2 {
		t.Errorf("every unit runs the arms in the same order %v; want a seeded order per unit", orders)
	}
	// The block order and the digest are frozen: a run split across
	// hosts (or resumed) by another qmlsab build must find the same plan.
	if first := p.Units[0]; Key(first[0].Arm, 1)+Key(first[1].Arm, 1)+Key(first[2].Arm, 1)+Key(first[3].Arm, 1) != "F#1A#1E#1D#1" {
		t.Errorf("unit 0's order %v changed", first)
	}
	if want := "b0d49af499cd41d9b498ecf73453e925bccffd2dedf055ddd8c10e508755e0c3"; p.Digest != want {
		t.Errorf("digest %s, want %s (the canonical form changed)", p.Digest, want)
	}
	other := func(edit func(*[]string, *int, *uint64, *Conditions)) string {
		names, n, seed, c := slices.Clone(names), 5, uint64(11), c
		edit(&names, &n, &seed, &c)
		q, err := New(names, n, seed, c)
		if err != nil {
			t.Fatal(err)
		}
		return q.Digest
	}
	for what, edit := range map[string]func(*[]string, *int, *uint64, *Conditions){
		"seed":     func(_ *[]string, _ *int, s *uint64, _ *Conditions) { *s = 12 },
		"n":        func(_ *[]string, n *int, _ *uint64, _ *Conditions) { *n = 6 },
		"clock":    func(_ *[]string, _ *int, _ *uint64, c *Conditions) { c.Clock = "wall" },
		"workload": func(_ *[]string, _ *int, _ *uint64, c *Conditions) { c.Workload = []byte(`{"name":"w2"}`) },
		"arms":     func(_ *[]string, _ *int, _ *uint64, c *Conditions) { c.Arms = "- name: G\n" },
		"arm list": func(a *[]string, _ *int, _ *uint64, _ *Conditions) { (*a)[3] = "G" },
		"machine":  func(_ *[]string, _ *int, _ *uint64, c *Conditions) { c.Sim = []byte(`{"cpus":4}`) },
	} {
		if d := other(edit); d == p.Digest {
			t.Errorf("another %s gives the plan's digest", what)
		}
	}
	// Key order in the JSON does not change the plan.
	if d := other(func(_ *[]string, _ *int, _ *uint64, c *Conditions) {
		c.Workload = []byte(`{"kind":"spill_to_disk","name":"w"}`)
	}); d != p.Digest {
		t.Error("the digest depends on the workload's key order")
	}
	if _, err := Digest(Conditions{Workload: []byte("{")}, 1, nil); err == nil || !strings.Contains(err.Error(), "workload") {
		t.Errorf("a corrupt workload: %v", err)
	}
}

// The shards of any split partition the plan, each taking whole units.
func TestShardsPartitionThePlan(t *testing.T) {
	p, err := New([]string{"D", "E", "F"}, 5, 3, Conditions{Workload: wl})
	if err != nil {
		t.Fatal(err)
	}
	all := p.Trials(Shard{})
	for n := 1; n <= 5; n++ {
		var union []Trial
		for i := 1; i <= n; i++ {
			s := Shard{Index: i, Count: n}
			if !s.Valid() {
				t.Errorf("%s is not a valid shard", s)
			}
			for _, tr := range p.Trials(s) {
				if !s.Has(Unit(tr.Index)) || !slices.Contains(s.Units(5), Unit(tr.Index)) {
					t.Errorf("shard %s has trial %s", s, Key(tr.Arm, tr.Index))
				}
				union = append(union, tr)
			}
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
	for _, s := range []Shard{{}, {Index: 0, Count: 2}, {Index: 3, Count: 2}, {Index: 1, Count: 0}} {
		if s.Valid() {
			t.Errorf("%s taken for a shard", s)
		}
	}
}

// A shard reads back as String writes it, and anything else is refused.
func TestParseShard(t *testing.T) {
	for _, s := range []Shard{{1, 1}, {2, 3}, {7, 7}} {
		if got, err := ParseShard(s.String()); err != nil || got != s {
			t.Errorf("ParseShard(%q) = %v, %v", s.String(), got, err)
		}
	}
	if got, err := ParseShard(" 2 / 3 "); err != nil || got != (Shard{2, 3}) {
		t.Errorf("spaces around the numbers: %v, %v", got, err)
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "-1/2", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): no error", bad)
		}
	}
}
