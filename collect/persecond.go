package collect

import (
	"slices"
	"time"
)

// Second is the derived per-second series of a trial at one second: the
// primary's gauges and rates, each absent when no sample gave it.
type Second struct {
	T          int      `json:"t"` // seconds since the trial's start
	Primary    string   `json:"primary,omitempty"`
	ReadTix    *float64 `json:"readTickets,omitempty"`
	LowQueue   *float64 `json:"lowPriorityQueue,omitempty"`
	Admissions *float64 `json:"admissionsPerS,omitempty"`
	Kills      *float64 `json:"queueKillsPerS,omitempty"`
	Sheds      *float64 `json:"serverShedsPerS,omitempty"`
	ResidentMB *float64 `json:"residentMB,omitempty"`
	// The shedder's marks and memory limit, when the server reports them.
	LowMark  *float64 `json:"lowMarkBytes,omitempty"`
	HighMark *float64 `json:"highMarkBytes,omitempty"`
	MemLimit *float64 `json:"memLimitBytes,omitempty"`
}

// PerSecond derives the per-second series from samples, seconds counted
// from start: for each second the last value the primary reported in it.
func PerSecond(samples []Sample, start time.Time) []Second {
	byT := map[int]*Second{}
	at := func(t time.Time) *Second {
		i := max(int(t.Sub(start)/time.Second), 0)
		s := byT[i]
		if s == nil {
			s = &Second{T: i}
			byT[i] = s
		}
		return s
	}
	set := func(ps []Point, field func(*Second) **float64) {
		for _, p := range ps {
			v := p.Value
			*field(at(p.At)) = &v
		}
	}
	set(PrimaryGauge(samples, "read.totalTickets"), func(s *Second) **float64 { return &s.ReadTix })
	set(PrimaryGauge(samples, "read.low.queueLength"), func(s *Second) **float64 { return &s.LowQueue })
	set(PrimaryGauge(samples, "residentMB"), func(s *Second) **float64 { return &s.ResidentMB })
	set(PrimaryRates(samples, "queryMemory.operationsShed"), func(s *Second) **float64 { return &s.Sheds })
	set(PrimaryGauge(samples, "queryMemory.lowMarkBytes"), func(s *Second) **float64 { return &s.LowMark })
	set(PrimaryGauge(samples, "queryMemory.highMarkBytes"), func(s *Second) **float64 { return &s.HighMark })
	set(PrimaryGauge(samples, "queryMemory.memLimitBytes"), func(s *Second) **float64 { return &s.MemLimit })
	adm, kil := Departures(samples)
	set(adm, func(s *Second) **float64 { return &s.Admissions })
	set(kil, func(s *Second) **float64 { return &s.Kills })
	for _, s := range samples {
		if s.Up && s.Primary {
			at(s.At).Primary = s.Member
		}
	}
	out := make([]Second, 0, len(byT))
	for _, s := range byT {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Second) int { return a.T - b.T })
	return out
}
