package metric

import (
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Point is a value at a time.
type Point struct {
	At    time.Time
	Value float64
	// From is where a rate's interval began (the previous sample); zero
	// for a gauge, which holds at At.
	From time.Time
}

// Mid is the instant a point stands for: a gauge's sample, or the middle
// of a rate's interval (a rate describes the whole interval, so crediting
// it to the second of its end would draw it one interval late).
func (p Point) Mid() time.Time {
	if p.From.IsZero() {
		return p.At
	}
	return p.From.Add(p.At.Sub(p.From) / 2)
}

// restarted reports whether cur is a new process compared with prev: a
// new processId, or an uptime that went backwards.
func restarted(prev, cur store.Sample) bool {
	if prev.ProcessID != "" && cur.ProcessID != "" && prev.ProcessID != cur.ProcessID {
		return true
	}
	pu, ok1 := prev.Values[store.FieldUptimeMillis]
	cu, ok2 := cur.Values[store.FieldUptimeMillis]
	return ok1 && ok2 && cu < pu
}

// Rates turns one member's samples of a counter into per-second rates over
// each interval between consecutive readable samples, using their real
// timestamps. After a restart (new process, or the counter going
// backwards) the counter started again from zero, so the interval's
// increase is the new value itself.
func Rates(samples []store.Sample, field string) []Point {
	var out []Point
	var prev *store.Sample
	for i := range samples {
		s := &samples[i]
		v, ok := s.Values[field]
		if !s.Up || !ok {
			continue
		}
		if prev != nil {
			dt := s.At.Sub(prev.At).Seconds()
			pv := prev.Values[field]
			delta := v - pv
			if restarted(*prev, *s) || delta < 0 {
				delta = v
			}
			if dt > 0 {
				out = append(out, Point{At: s.At, Value: delta / dt, From: prev.At})
			}
		}
		prev = s
	}
	return out
}

func sortByTime(ss []store.Sample) {
	slices.SortStableFunc(ss, func(a, b store.Sample) int { return a.At.Compare(b.At) })
}

// ByMember groups samples by member, each in time order.
func ByMember(samples []store.Sample) map[string][]store.Sample {
	out := map[string][]store.Sample{}
	for _, s := range samples {
		out[s.Member] = append(out[s.Member], s)
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b store.Sample) int { return a.At.Compare(b.At) })
	}
	return out
}

// PrimaryRates is a counter's rate on whichever member was primary: each
// member's rates come from its own counters (so a change of primary never
// shows as a jump between two members' totals), and each interval is
// credited to the member that was primary at its end.
func PrimaryRates(samples []store.Sample, field string) []Point {
	var out []Point
	for _, ss := range ByMember(samples) {
		primaryAt := map[time.Time]bool{}
		for _, s := range ss {
			if s.Up && s.Primary {
				primaryAt[s.At] = true
			}
		}
		for _, p := range Rates(ss, field) {
			if primaryAt[p.At] {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return a.At.Compare(b.At) })
	return out
}

// PrimaryGauge is a gauge's value on whichever member was primary.
func PrimaryGauge(samples []store.Sample, field string) []Point {
	var out []Point
	for _, s := range samples {
		if v, ok := s.Values[field]; s.Up && s.Primary && ok {
			out = append(out, Point{At: s.At, Value: v})
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return a.At.Compare(b.At) })
	return out
}

// Departures splits the low-priority read queue's departures on the
// primary into admissions (left with a ticket: Δremoved − Δcanceled) and
// kills (left without one: Δcanceled), per second.
func Departures(samples []store.Sample) (admissions, kills []Point) {
	removed := PrimaryRates(samples, store.FieldReadLowRemovedFromQueue)
	canceled := PrimaryRates(samples, store.FieldReadLowCanceled)
	at := map[time.Time]float64{}
	for _, p := range canceled {
		at[p.At] = p.Value
	}
	for _, p := range removed {
		k := at[p.At]
		admissions = append(admissions, Point{At: p.At, Value: p.Value - k, From: p.From})
		kills = append(kills, Point{At: p.At, Value: k, From: p.From})
	}
	return admissions, kills
}

// Unreachable is how long no member answered: the time from a sample that
// left every member down until the next sample of a member that is up.
// On an in-process set it means the host, not the server, failed to keep
// up; on a real deployment it is an outage or a partition from the harness.
func Unreachable(samples []store.Sample) time.Duration {
	ss := slices.Clone(samples)
	sortByTime(ss)
	up := map[string]bool{}
	members := map[string]bool{}
	for _, s := range ss {
		members[s.Member] = true
	}
	var total time.Duration
	var since time.Time
	for _, s := range ss {
		up[s.Member] = s.Up
		allDown := len(up) == len(members)
		for _, u := range up {
			allDown = allDown && !u
		}
		switch {
		case allDown && since.IsZero():
			since = s.At
		case !allDown && !since.IsZero():
			total += s.At.Sub(since)
			since = time.Time{}
		}
	}
	if !since.IsZero() && len(ss) > 0 {
		total += ss[len(ss)-1].At.Sub(since)
	}
	return total
}

// PrimaryIntervals are the sampling intervals that closed on a sample of
// a primary: each member's consecutive readable samples whose second is
// primary (the intervals PrimaryRates credits a counter's rate over,
// whatever the counter). A point's From and At are the interval's ends;
// its Value is unused.
func PrimaryIntervals(samples []store.Sample) []Point {
	var out []Point
	for _, ss := range ByMember(samples) {
		var prev *store.Sample
		for i := range ss {
			s := &ss[i]
			if !s.Up {
				continue
			}
			if prev != nil && s.Primary && s.At.After(prev.At) {
				out = append(out, Point{At: s.At, From: prev.At})
			}
			prev = s
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return a.At.Compare(b.At) })
	return out
}

// covered is how many seconds the intervals [From, At] of ps cover, each
// instant once (two members that both claim to be primary for a moment
// do not make it count twice).
func covered(ps []Point) float64 {
	spans := slices.Clone(ps)
	slices.SortFunc(spans, func(a, b Point) int { return a.From.Compare(b.From) })
	var total time.Duration
	var from, to time.Time
	for i, p := range spans {
		switch {
		case i == 0:
			from, to = p.From, p.At
		case p.From.After(to):
			total += to.Sub(from)
			from, to = p.From, p.At
		case p.At.After(to):
			to = p.At
		}
	}
	if len(spans) > 0 {
		total += to.Sub(from)
	}
	return total.Seconds()
}
