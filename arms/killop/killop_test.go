package killop

import "testing"

func TestDecideKillsLargestInScopeUntilExcessCovered(t *testing.T) {
	c := Default("qmlsab-storm")
	c.Policy = PolicyLargestFirst
	const gib = 1 << 30
	ops := []Op{
		{ID: 1, AppName: "qmlsab-storm", TrackedBytes: 30 << 20, Queued: true},
		{ID: 2, AppName: "other-app", TrackedBytes: 900 << 20, Queued: true},
		{ID: 3, AppName: "qmlsab-storm", TrackedBytes: 50 << 20},
		{ID: 4, AppName: "qmlsab-storm", TrackedBytes: 20 << 20, Queued: true},
		{ID: 5, AppName: "qmlsab-storm", TrackedBytes: 80 << 20, Writes: true},
	}
	if got := Decide(c, 20*gib, 32*gib, ops); got != nil {
		t.Fatalf("below the high mark: killed %v", got)
	}
	// 70% of 32 GiB = 22.4 GiB; 22.47 GiB resident is ~70 MiB over.
	got := Decide(c, 22*gib+480<<20, 32*gib, ops)
	if len(got) != 2 || got[0].ID != 3 || got[1].ID != 1 {
		t.Fatalf("kills %v, want ops 3 then 1 (largest in scope; never other apps or writers)", got)
	}
	any := c
	any.AnyApp = true
	if got := Decide(any, 23*gib, 32*gib, ops); got[0].ID != 2 {
		t.Fatalf("with anyApp the largest op of any app goes first: %v", got)
	}
}

// Each policy considers its own operations: running ones only under
// largest-first, queued ones of any priority under queued-largest-first,
// queued low-priority ones only under the low-priority policy.
func TestPoliciesChooseAmongTheirOwnOperations(t *testing.T) {
	const gib = 1 << 30
	ops := []Op{
		{ID: 1, AppName: "s", TrackedBytes: 90 << 20},                                  // running
		{ID: 2, AppName: "s", TrackedBytes: 60 << 20, Queued: true},                    // queued, normal priority
		{ID: 3, AppName: "s", TrackedBytes: 30 << 20, Queued: true, LowPriority: true}, // queued, low priority
		{ID: 4, AppName: "s", TrackedBytes: 40 << 20, LowPriority: true},               // running, low priority
	}
	want := map[string]int64{PolicyLargestFirst: 1, PolicyQueuedLargestFirst: 2, PolicyLowPriorityLargestFirst: 3}
	for _, p := range Policies {
		c := Default("s")
		c.Policy = p
		got := Decide(c, 23*gib, 32*gib, ops) // ~600 MiB over: every candidate goes
		if len(got) == 0 || got[0].ID != want[p] {
			t.Errorf("%s: kills %v, want op %d first", p, got, want[p])
		}
		for _, k := range got {
			if !c.Considers(k) {
				t.Errorf("%s killed op %d it does not consider", p, k.ID)
			}
		}
	}
	if !ValidPolicy("") || ValidPolicy("oldest-first") {
		t.Error("ValidPolicy: the empty name is the default; unknown names are refused")
	}
}
