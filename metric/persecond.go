package metric

import (
	"maps"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// PerSecond derives the per-second series of a trial that ran from start
// until end: for each second the last value the primary reported in it.
// Seconds count from start; a sample before start or at or after end is
// outside the trial (the sampler runs a little before and after it) and
// in no second, so the series has at most one point per second of the
// trial and none beyond it. A rate is credited to the second that holds
// the middle of its interval (Point.Mid): with samples each second at
// 0, 1, …, end, the rate over (k, k+1] is second k's. A second
// whose primary samples all came from diagnostic data (Sample.FromFTDC)
// is marked FTDC.
func PerSecond(samples []store.Sample, start, end time.Time) []store.Second {
	b := newBuckets(start, func(i int) *store.Second { return &store.Second{T: i} })
	at := b.at
	inTrial := func(t time.Time) bool { return !t.Before(start) && t.Before(end) }
	set := func(ps []Point, field func(*store.Second) **float64) {
		for _, p := range ps {
			if !inTrial(p.Mid()) {
				continue
			}
			v := p.Value
			*field(at(p.Mid())) = &v
		}
	}
	set(PrimaryGauge(samples, store.FieldReadTotalTickets), func(s *store.Second) **float64 { return &s.ReadTix })
	set(PrimaryGauge(samples, store.FieldReadLowQueueLength), func(s *store.Second) **float64 { return &s.LowQueue })
	set(PrimaryGauge(samples, store.FieldResidentMB), func(s *store.Second) **float64 { return &s.ResidentMB })
	set(PrimaryRates(samples, store.FieldQueryMemoryOperationsShed), func(s *store.Second) **float64 { return &s.Sheds })
	set(PrimaryGauge(samples, store.FieldQueryMemoryLowMarkBytes), func(s *store.Second) **float64 { return &s.LowMark })
	set(PrimaryGauge(samples, store.FieldQueryMemoryHighMarkBytes), func(s *store.Second) **float64 { return &s.HighMark })
	set(PrimaryGauge(samples, store.FieldQueryMemoryMemLimitBytes), func(s *store.Second) **float64 { return &s.MemLimit })
	adm, kil := Departures(samples)
	set(adm, func(s *store.Second) **float64 { return &s.Admissions })
	set(kil, func(s *store.Second) **float64 { return &s.Kills })
	wire := map[*store.Second]bool{} // seconds with a primary sample from the sampler
	for _, s := range samples {
		if s.Up && s.Primary && inTrial(s.At) {
			sec := at(s.At)
			sec.Primary = s.Member
			wire[sec] = wire[sec] || !s.FromFTDC
			sec.FTDC = !wire[sec]
		}
	}
	return b.sorted()
}

// buckets groups per-second records by the second (since start) an
// instant falls in; instants before start fall in second 0.
type buckets[T any] struct {
	start time.Time
	byT   map[int]*T
	make  func(i int) *T
}

func newBuckets[T any](start time.Time, make func(i int) *T) *buckets[T] {
	return &buckets[T]{start: start, byT: map[int]*T{}, make: make}
}

func (b *buckets[T]) at(t time.Time) *T {
	i := max(int(t.Sub(b.start)/time.Second), 0)
	r := b.byT[i]
	if r == nil {
		r = b.make(i)
		b.byT[i] = r
	}
	return r
}

// sorted are the records in time order.
func (b *buckets[T]) sorted() []T {
	keys := slices.Sorted(maps.Keys(b.byT))
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = *b.byT[k]
	}
	return out
}
