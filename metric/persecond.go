package metric

import (
	"maps"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// PerSecond derives the per-second series from samples, seconds counted
// from start: for each second the last value the primary reported in it.
// A second whose primary samples all came from diagnostic data
// (Sample.FromFTDC) is marked FTDC.
func PerSecond(samples []store.Sample, start time.Time) []store.Second {
	b := newBuckets(start, func(i int) *store.Second { return &store.Second{T: i} })
	at := b.at
	set := func(ps []Point, field func(*store.Second) **float64) {
		for _, p := range ps {
			v := p.Value
			*field(at(p.At)) = &v
		}
	}
	set(PrimaryGauge(samples, "read.totalTickets"), func(s *store.Second) **float64 { return &s.ReadTix })
	set(PrimaryGauge(samples, "read.low.queueLength"), func(s *store.Second) **float64 { return &s.LowQueue })
	set(PrimaryGauge(samples, "residentMB"), func(s *store.Second) **float64 { return &s.ResidentMB })
	set(PrimaryRates(samples, "queryMemory.operationsShed"), func(s *store.Second) **float64 { return &s.Sheds })
	set(PrimaryGauge(samples, "queryMemory.lowMarkBytes"), func(s *store.Second) **float64 { return &s.LowMark })
	set(PrimaryGauge(samples, "queryMemory.highMarkBytes"), func(s *store.Second) **float64 { return &s.HighMark })
	set(PrimaryGauge(samples, "queryMemory.memLimitBytes"), func(s *store.Second) **float64 { return &s.MemLimit })
	adm, kil := Departures(samples)
	set(adm, func(s *store.Second) **float64 { return &s.Admissions })
	set(kil, func(s *store.Second) **float64 { return &s.Kills })
	wire := map[*store.Second]bool{} // seconds with a primary sample from the sampler
	for _, s := range samples {
		if s.Up && s.Primary {
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
