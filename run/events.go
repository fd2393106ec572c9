package run

import (
	"math"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Event is one timestamped thing that happened in a trial (events.jsonl.gz).
type Event struct {
	At time.Time `json:"at"`
	// Kind is phase (a phase began), primary (a new primary was seen),
	// restart (a member came back as a new process), topology (the
	// driver saw a new primary), kill (the killOp actor's kill) or fault
	// (an injected fault began).
	Kind   string           `json:"kind"`
	Phase  string           `json:"phase,omitempty"`
	Member string           `json:"member,omitempty"`
	Kill   *actor.KillEvent `json:"kill,omitempty"`
	// Fault names an injected fault (kind fault); Err says why it could
	// not be applied.
	Fault string `json:"fault,omitempty"`
	Err   string `json:"err,omitempty"`
}

// trialEvents gathers a trial's events in time order.
func trialEvents(phases map[string]time.Time, samples []collect.Sample, kills []actor.KillEvent, extra ...Event) []Event {
	ev := append([]Event(nil), extra...)
	for name, at := range phases {
		if name != "end" {
			ev = append(ev, Event{At: at, Kind: "phase", Phase: name})
		}
	}
	for _, c := range collect.NewPrimaries(samples) {
		ev = append(ev, Event{At: c.At, Kind: "primary", Member: c.Member})
	}
	for _, c := range collect.RestartsSeen(samples) {
		ev = append(ev, Event{At: c.At, Kind: "restart", Member: c.Member})
	}
	for i := range kills {
		ev = append(ev, Event{At: kills[i].At, Kind: "kill", Kill: &kills[i]})
	}
	slices.SortStableFunc(ev, func(a, b Event) int { return a.At.Compare(b.At) })
	return ev
}

// Second is one second of a trial's operations (outcomes.jsonl.gz), by
// scheduled start: counts per outcome and a latency histogram.
type Second struct {
	T      int            `json:"t"` // seconds since the trial's start
	Storm  map[string]int `json:"storm,omitempty"`
	Canary map[string]int `json:"canary,omitempty"` // ok, failed
	// StormLatency and CanaryLatency count ops per latency bucket: bucket
	// i holds latencies in (2^(i-1), 2^i] ms, bucket 0 those ≤ 1 ms.
	StormLatency  []int `json:"stormLatencyLog2Ms,omitempty"`
	CanaryLatency []int `json:"canaryLatencyLog2Ms,omitempty"`
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

// perSecond aggregates a trial's op outcomes by the second of their
// scheduled start.
func perSecond(start time.Time, res workload.Results) []Second {
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
	out := make([]Second, 0, len(byT))
	for _, s := range byT {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Second) int { return a.T - b.T })
	return out
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
func stormVictims(res workload.Results, kills []actor.KillEvent) []victim {
	storm, recovery := res.PhaseStarts["storm"], res.PhaseStarts["recovery"]
	in := func(t time.Time) bool { return !t.Before(storm) && t.Before(recovery) }
	lost := func(o workload.Outcome) bool { return o == workload.Shed || o == workload.Killed }
	sized := slices.ContainsFunc(res.Storm, func(s workload.StormResult) bool { return lost(s.Outcome) && s.TrackedBytes > 0 })
	var out []victim
	for _, s := range res.Storm {
		switch {
		case !in(s.Scheduled):
		case sized && lost(s.Outcome):
			out = append(out, victim{s.TrackedBytes, s.Stage})
		case !sized && s.Outcome == workload.Shed:
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

// victimSummary is trial.json's summary of the storm's victims.
func victimSummary(res workload.Results, kills []actor.KillEvent) *store.Victims {
	v := &store.Victims{}
	for _, x := range stormVictims(res, kills) {
		v.Add(x.bytes, x.stage)
	}
	return v
}
