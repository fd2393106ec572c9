package metric

import (
	"slices"

	"github.com/qmlsab/qmlsab/store"
)

// PrimaryLives are a trial's primaries, one per member process's run of
// samples as primary, in the order they began. A life starts at the first
// sample that saw the process primary and ends at the last; how it ended
// is read from the member's next samples: none (the trial's samples
// ended: store.LifeTrialEnded); the member answered again as the same
// process, not primary (store.LifeSteppedDown); the member never
// answered again, or came back as a new process (store.LifeCrashed: an
// OOM kill or a crash). A member the sampler could not read for a while
// that comes back as the same process, still primary, kept its life.
// Admissions per second and the tracked memory by queue at the end come
// from the member's own samples (its counters, its $currentOp census).
func PrimaryLives(r store.Records) []store.PrimaryLife {
	var out []store.PrimaryLife
	for _, ss := range ByMember(r.Samples) {
		out = append(out, memberLives(ss)...)
	}
	slices.SortStableFunc(out, func(a, b store.PrimaryLife) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.End.Compare(b.End)
	})
	return out
}

// memberLives are one member's lives as primary; ss are its samples in
// time order.
func memberLives(ss []store.Sample) []store.PrimaryLife {
	var out []store.PrimaryLife
	// up are the member's readable samples; a life is a run of them of
	// one process, primary.
	var up []int
	for i := range ss {
		if ss[i].Up {
			up = append(up, i)
		}
	}
	for k := 0; k < len(up); k++ {
		first := ss[up[k]]
		if !first.Primary {
			continue
		}
		last := k
		for last+1 < len(up) {
			next := ss[up[last+1]]
			if !next.Primary || restarted(ss[up[last]], next) {
				break
			}
			last++
		}
		end := ss[up[last]]
		life := store.PrimaryLife{Shard: first.Shard, Member: first.Member, Process: first.ProcessID, Start: first.At, End: end.At,
			Cause: store.LifeTrialEnded}
		switch {
		case last+1 < len(up) && restarted(end, ss[up[last+1]]):
			life.Cause = store.LifeCrashed
		case last+1 < len(up):
			life.Cause = store.LifeSteppedDown
		case up[last]+1 < len(ss):
			life.Cause = store.LifeCrashed // it never answered again
		}
		life.AdmissionsPerS = lifeAdmissions(ss[up[k] : up[last]+1])
		life.TrackedAtEnd, life.HeaviestQueue = heaviest(end)
		out = append(out, life)
		k = last
	}
	return out
}

// lifeAdmissions is the low-priority queue's admissions (Δ removed −
// Δ canceled) per second over a life's samples (one member process,
// primary throughout); nil when the samples give no interval of it.
func lifeAdmissions(life []store.Sample) *float64 {
	removed := Rates(life, store.FieldReadLowRemovedFromQueue)
	canceled := Rates(life, store.FieldReadLowCanceled)
	at := map[int64]float64{}
	for _, p := range canceled {
		at[p.At.UnixNano()] = p.Value
	}
	var events, secs float64
	for _, p := range removed {
		dt := p.At.Sub(p.From).Seconds()
		events += (p.Value - at[p.At.UnixNano()]) * dt
		secs += dt
	}
	if secs <= 0 {
		return nil
	}
	v := events / secs
	return &v
}

// heaviest is a sample's census of tracked bytes by place (store.Queues)
// and the place holding the most ("" when none holds any, or the sample
// has no census).
func heaviest(s store.Sample) (map[string]int64, string) {
	by := map[string]int64{}
	most, where := int64(0), ""
	for _, q := range store.Queues {
		v, ok := s.Values[store.CensusTrackedField(q)]
		if !ok {
			continue
		}
		by[q] = int64(v)
		if int64(v) > most {
			most, where = int64(v), q
		}
	}
	if len(by) == 0 {
		return nil, ""
	}
	return by, where
}
