package metric

import (
	"math"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Events gathers a trial's events in time order.
func Events(phases map[store.Phase]time.Time, samples []store.Sample, kills []store.Kill, extra ...store.Event) []store.Event {
	ev := append([]store.Event(nil), extra...)
	for name, at := range phases {
		if name != store.PhaseEnd {
			ev = append(ev, store.Event{At: at, Kind: store.EventPhase, Phase: name})
		}
	}
	for _, c := range NewPrimaries(samples) {
		ev = append(ev, store.Event{At: c.At, Kind: store.EventPrimary, Member: c.Member})
	}
	for _, c := range RestartsSeen(samples) {
		ev = append(ev, store.Event{At: c.At, Kind: store.EventRestart, Member: c.Member})
	}
	for i := range kills {
		ev = append(ev, store.Event{At: kills[i].At, Kind: store.EventKill, Kill: &kills[i]})
	}
	slices.SortStableFunc(ev, func(a, b store.Event) int { return a.At.Compare(b.At) })
	return ev
}

// latencyBucket is a latency's log2-of-milliseconds bucket.
func latencyBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	return int(math.Ceil(math.Log2(ms)))
}

func addLatency(h []int, d time.Duration) []int {
	b := latencyBucket(d)
	for len(h) <= b {
		h = append(h, 0)
	}
	h[b]++
	return h
}

// Outcomes aggregates a trial's op outcomes by the second of their
// scheduled start.
func Outcomes(start time.Time, res store.Results) []store.OutcomeSecond {
	b := newBuckets(start, func(i int) *store.OutcomeSecond { return &store.OutcomeSecond{T: i} })
	at := b.at
	for _, r := range res.Storm {
		s := at(r.Scheduled)
		if s.Storm == nil {
			s.Storm = map[string]int{}
		}
		s.Storm[string(r.Outcome)]++
		s.StormLatency = addLatency(s.StormLatency, r.Latency)
	}
	for _, c := range res.Canaries {
		s := at(c.Scheduled)
		if s.Canary == nil {
			s.Canary = map[string]int{}
		}
		if c.OK {
			s.Canary["ok"]++
		} else {
			s.Canary["failed"]++
		}
		s.CanaryLatency = addLatency(s.CanaryLatency, c.Latency)
	}
	return b.sorted()
}

// victim is a shed or killed storm op: its tracked bytes (0: unknown)
// and its stage.
type victim struct {
	bytes int64
	stage string
}

// stormVictims are the storm phase's shed and killed ops. The model
// records each victim's tracked bytes; over the wire a shed op's error
// carries no size, so there the killOp actor's kills (which read it from
// $currentOp) are the sized victims and sheds count by stage only.
func stormVictims(res store.Results, kills []store.Kill) []victim {
	storm, recovery := res.PhaseStarts[store.PhaseStorm], res.PhaseStarts[store.PhaseRecovery]
	in := func(t time.Time) bool { return !t.Before(storm) && t.Before(recovery) }
	lost := func(o store.Outcome) bool { return o == store.Shed || o == store.Killed }
	sized := slices.ContainsFunc(res.Storm, func(s store.StormOp) bool { return lost(s.Outcome) && s.TrackedBytes > 0 })
	var out []victim
	for _, s := range res.Storm {
		switch {
		case !in(s.Scheduled):
		case sized && lost(s.Outcome):
			out = append(out, victim{s.TrackedBytes, s.Stage})
		case !sized && s.Outcome == store.Shed:
			out = append(out, victim{0, s.Stage})
		}
	}
	if !sized {
		for _, k := range kills {
			if k.Err == "" && in(k.At) {
				out = append(out, victim{k.TrackedBytes, k.Stage})
			}
		}
	}
	return out
}

// VictimSummary is trial.json's summary of the storm's victims.
func VictimSummary(res store.Results, kills []store.Kill) *store.Victims {
	v := &store.Victims{}
	for _, x := range stormVictims(res, kills) {
		v.Add(x.bytes, x.stage)
	}
	return v
}
