package metric

import (
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// PerSecond derives the per-second series from samples, seconds counted
// from start: for each second the last value the primary reported in it.
func PerSecond(samples []store.Sample, start time.Time) []store.Second {
	byT := map[int]*store.Second{}
	at := func(t time.Time) *store.Second {
		i := max(int(t.Sub(start)/time.Second), 0)
		s := byT[i]
		if s == nil {
			s = &store.Second{T: i}
			byT[i] = s
		}
		return s
	}
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
	for _, s := range samples {
		if s.Up && s.Primary {
			at(s.At).Primary = s.Member
		}
	}
	out := make([]store.Second, 0, len(byT))
	for _, s := range byT {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b store.Second) int { return a.T - b.T })
	return out
}
