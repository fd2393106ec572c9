package store

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/plan"
)

func TestRunIDs(t *testing.T) {
	created := time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC)
	a, err := NewRunID("", "abcdef0123456789", created)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewRunID("", "abcdef0123456789", created)
	if a == b || !strings.HasPrefix(a, "20260301T023000Z-") {
		t.Errorf("two runs created at one time without a stamp got %q and %q; want distinct ids starting with the time", a, b)
	}
	s1, _ := NewRunID("gh-1234", "abcdef0123456789", created)
	s2, _ := NewRunID("gh-1234", "abcdef0123456789", created.Add(time.Hour))
	if s1 != "gh-1234-abcdef012345" || s1 != s2 {
		t.Errorf("shards with one stamp got %q and %q; want both gh-1234-abcdef012345", s1, s2)
	}
	if other, _ := NewRunID("gh-1234", "999999999999999", created); other == s1 {
		t.Errorf("another plan under the same stamp got the same id %q", other)
	}
	if _, err := NewRunID("a/../b", "d", created); err == nil || !strings.Contains(err.Error(), RunIDEnv) {
		t.Errorf("a stamp with '/' = %v; want an error naming $%s", err, RunIDEnv)
	}

	recorded := &Plan{Digest: "abcdef0123456789", Units: 3, Arms: []string{"D", "E"}}
	shard := func(id string, i int) Manifest {
		return Manifest{RunID: id, Plan: recorded, Shard: &plan.Shard{Index: i, Count: 3}, Created: created.Add(time.Duration(i) * time.Minute)}
	}
	if got := GroupRunID([]Manifest{shard(s1, 1), shard(s1, 2), shard(s1, 3)}); got != s1 {
		t.Errorf("shards sharing %q group as %q", s1, got)
	}
	own := []Manifest{shard("x1", 1), shard("x2", 2), shard("x3", 3)}
	g1 := GroupRunID(own)
	g2 := GroupRunID([]Manifest{own[2], own[0], own[1]})
	g3 := GroupRunID([]Manifest{shard("y1", 1), shard("x2", 2), shard("x3", 3)})
	if g1 != g2 || g1 == g3 || !strings.HasPrefix(g1, "plan-abcdef012345-") {
		t.Errorf("shards with their own ids group as %q, reordered %q, with another shard %q; want the first two equal, the third other", g1, g2, g3)
	}
	old := []Manifest{shard("", 1), shard("", 2)}
	if a, b := GroupRunID(old), GroupRunID([]Manifest{shard("", 1), shard("", 3)}); a == b || a == "" {
		t.Errorf("old shards without ids group as %q and %q; want distinct ids from their creation times", a, b)
	}
}

func TestCompletion(t *testing.T) {
	recorded := &Plan{Digest: "d", Units: 4, Arms: []string{"D", "E"}}
	run := func(statuses ...Status) *Run {
		m := Manifest{Plan: recorded, Shard: &plan.Shard{Index: 1, Count: 2}}
		for i, s := range statuses {
			m.Trials = append(m.Trials, TrialStatus{Arm: "D", Index: i + 1, Status: s})
		}
		return &Run{Manifest: m}
	}
	one := run(Valid, Invalid, Valid, Valid)
	two := run(Valid, Pending, Interrupted, Valid)
	if f, p := Completion([]*Run{one, two}); f != 6 || p != 8 {
		t.Errorf("two shards: %d of %d finished; want 6 of 8", f, p)
	}
	if f, p := Completion([]*Run{one}); f != 4 || p != 8 {
		t.Errorf("one of two shards: %d of %d; want 4 of 8 (the missing shard is planned)", f, p)
	}
	whole := &Run{Manifest: Manifest{Trials: []TrialStatus{{Status: Valid}, {Status: Pending}, {Status: Valid}}}}
	if f, p := Completion([]*Run{whole}); f != 2 || p != 3 {
		t.Errorf("a run without a plan: %d of %d; want 2 of 3", f, p)
	}
}
