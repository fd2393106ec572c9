package killop

import "testing"

func TestDecideKillsLargestInScopeUntilExcessCovered(t *testing.T) {
	c := Default("qmlsab-storm")
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
