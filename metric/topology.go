package metric

import (
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Change is a topology event seen in the samples: a new primary, or a
// member's process restart.
type Change struct {
	At     time.Time `json:"at"`
	Member string    `json:"member"`
}

// PrimaryChanges counts the times the primary became a different member
// (or a restarted process). It has two witnesses in the samples: each
// primary's report of itself (NewPrimaries, which also sees a primary
// restarted in place), and each member's view of who its primary is
// (ViewedPrimaryChanges, which sees a primary that was killed before it
// was sampled as one, or before its own diagnostic data reached the disk).
// Both count the same changes, each may miss one, so the larger count is
// the better one.
func PrimaryChanges(samples []store.Sample) int {
	return max(len(NewPrimaries(samples)), ViewedPrimaryChanges(samples))
}

// ViewedPrimaryChanges is the most primary changes one member saw: the
// times the member it named as primary (Sample.SeenPrimary) became a
// different one, seconds that named none left out. One member's view,
// not all members' merged: two members' views are each a heartbeat apart,
// and interleaving them would count a change back and forth.
func ViewedPrimaryChanges(samples []store.Sample) int {
	type viewer struct{ shard, member string }
	last := map[viewer]string{}
	changes := map[viewer]int{}
	sorted := append([]store.Sample(nil), samples...)
	sortByTime(sorted)
	most := 0
	for _, s := range sorted {
		if !s.Up || s.SeenPrimary == "" {
			continue
		}
		v := viewer{s.Shard, s.Member}
		if prev, ok := last[v]; ok && prev != s.SeenPrimary {
			changes[v]++
			most = max(most, changes[v])
		}
		last[v] = s.SeenPrimary
	}
	return most
}

// NewPrimaries are the primary changes, each at the first sample that saw
// the new primary. On a sharded cluster each shard has its own primary
// (Sample.Shard): a change is one within a shard, never the samples of
// two shards' primaries taking turns.
func NewPrimaries(samples []store.Sample) []Change {
	type ident struct{ member, process string }
	lastOf := map[string]*ident{}
	var out []Change
	sorted := append([]store.Sample(nil), samples...)
	sortByTime(sorted)
	for _, s := range sorted {
		if !s.Up || !s.Primary {
			continue
		}
		cur := ident{s.Member, s.ProcessID}
		if last := lastOf[s.Shard]; last != nil && *last != cur {
			out = append(out, Change{At: s.At, Member: s.Member})
		}
		lastOf[s.Shard] = &cur
	}
	return out
}

// RestartCount counts member process restarts seen in the samples.
func RestartCount(samples []store.Sample) int { return len(RestartsSeen(samples)) }

// RestartsSeen are the member restarts, each at the first sample of the
// new process.
func RestartsSeen(samples []store.Sample) []Change {
	var out []Change
	for _, ss := range ByMember(samples) {
		var prev *store.Sample
		for i := range ss {
			if !ss[i].Up {
				continue
			}
			if prev != nil && restarted(*prev, ss[i]) {
				out = append(out, Change{At: ss[i].At, Member: ss[i].Member})
			}
			prev = &ss[i]
		}
	}
	return out
}
