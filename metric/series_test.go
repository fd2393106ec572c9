package metric

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRatesUseRealTimestampsAndSurviveRestarts(t *testing.T) {
	s := []store.Sample{
		{At: at(0), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 100, "uptimeMillis": 1000}},
		{At: at(1), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 110, "uptimeMillis": 2000}},
		{At: at(3), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 150, "uptimeMillis": 4000}}, // a late sample: 2 s
		{At: at(4), Member: "a", Up: false}, // down: a gap
		{At: at(6), Member: "a", Up: true, ProcessID: "p2", Values: map[string]float64{"read.low.canceled": 9, "uptimeMillis": 500}}, // restarted
		{At: at(7), Member: "a", Up: true, ProcessID: "p2", Values: map[string]float64{"read.low.canceled": 19, "uptimeMillis": 1500}},
	}
	got := Rates(s, "read.low.canceled")
	want := []Point{{at(1), 10, at(0)}, {at(3), 20, at(1)}, {at(6), 3, at(3)}, {at(7), 10, at(6)}}
	if len(got) != len(want) {
		t.Fatalf("rates %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || !got[i].From.Equal(want[i].From) || !near(got[i].Value, want[i].Value) {
			t.Errorf("rate %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestPrimaryRatesAcrossAChangeOfPrimary(t *testing.T) {
	// a is primary until it dies after t=2; b, whose own counter is far
	// larger, is primary from t=3. The series must never take b's total
	// minus a's as a rate.
	var s []store.Sample
	for i, v := range []float64{0, 50, 100} {
		s = append(s, store.Sample{At: at(float64(i)), Member: "a", Up: true, Primary: true, ProcessID: "pa", Values: map[string]float64{"read.low.removedFromQueue": v, "read.low.canceled": v / 2}})
	}
	for i, v := range []float64{10000, 10000, 10000, 10060, 10120} {
		s = append(s, store.Sample{At: at(float64(i)), Member: "b", Up: true, Primary: i >= 3, ProcessID: "pb", Values: map[string]float64{"read.low.removedFromQueue": v, "read.low.canceled": v - 10000}})
	}
	s = append(s, store.Sample{At: at(3), Member: "a", Up: false}, store.Sample{At: at(4), Member: "a", Up: false})
	removed := PrimaryRates(s, "read.low.removedFromQueue")
	want := []float64{50, 50, 60, 60}
	if len(removed) != len(want) {
		t.Fatalf("primary rates %v", removed)
	}
	for i, w := range want {
		if !near(removed[i].Value, w) {
			t.Errorf("primary rate %d = %v, want %v", i, removed[i].Value, w)
		}
	}
	adm, kills := Departures(s)
	// a: 50 departures/s, 25 of them kills; b: 60/s, all kills.
	if !near(adm[0].Value, 25) || !near(kills[0].Value, 25) || !near(adm[2].Value, 0) || !near(kills[2].Value, 60) {
		t.Errorf("departures split: admissions %v kills %v", adm, kills)
	}
	if g := PrimaryGauge(s, "read.low.canceled"); len(g) != 5 {
		t.Errorf("primary gauge has %d points, want one per second with a primary", len(g))
	}
}

func TestUnreachableCountsOnlyTimeWithEveryMemberDown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []store.Sample{
		{At: at(0), Member: "a", Up: true}, {At: at(0.1), Member: "b", Up: true},
		{At: at(1), Member: "a", Up: false}, {At: at(1.1), Member: "b", Up: true}, // one down: not unreachable
		{At: at(2), Member: "b", Up: false}, // from here both down
		{At: at(3), Member: "a", Up: false}, {At: at(3.1), Member: "b", Up: false},
		{At: at(4.5), Member: "a", Up: true}, {At: at(5), Member: "b", Up: true}, // 2.5 s
		{At: at(6), Member: "a", Up: false}, {At: at(6.1), Member: "b", Up: false}, // down to the end
		{At: at(7.1), Member: "a", Up: false}, // 1 s
	}
	// Out of order on purpose: samples of concurrent members arrive unordered.
	slices.Reverse(samples)
	if got, want := Unreachable(samples), 3500*time.Millisecond; got != want {
		t.Fatalf("Unreachable = %v, want %v", got, want)
	}
	if got := Unreachable(samples[:0]); got != 0 {
		t.Fatalf("no samples: %v", got)
	}
}

// A wall trial's sampler runs a little before the trial starts and on
// while its last ops drain: the per-second series hold the trial's
// seconds and nothing outside them, and a rate whose interval began
// before the start still counts in the second it ends in.
func TestPerSecondHoldsOnlyTheTrialsSeconds(t *testing.T) {
	start, end := at(10), at(20)
	var s []store.Sample
	for i := range 14 { // samples from 7.5 s to 20.5 s
		sec := 7.5 + float64(i)
		s = append(s, store.Sample{At: at(sec), Member: "a", Up: true, Primary: true, ProcessID: "p",
			Values: map[string]float64{"read.totalTickets": 100 + sec, "queryMemory.operationsShed": 5 * sec}})
	}
	got := PerSecond(s, start, end)
	if len(got) != 10 {
		t.Fatalf("%d seconds, want the trial's 10: %+v", len(got), got)
	}
	for i, sec := range got {
		if sec.T != i {
			t.Errorf("second %d has t = %d", i, sec.T)
		}
		if sec.ReadTix == nil || !near(*sec.ReadTix, 100+10.5+float64(i)) {
			t.Errorf("second %d: tickets %v, want the sample at %.1f s", i, sec.ReadTix, 10.5+float64(i))
		}
		if sec.Sheds == nil || !near(*sec.Sheds, 5) {
			t.Errorf("second %d: sheds/s %v, want 5", i, sec.Sheds)
		}
	}
}

// TestPrimaryChangesPerShard: on a sharded cluster every shard's primary is
// sampled in turn; only a change within one shard is a change of primary.
func TestPrimaryChangesPerShard(t *testing.T) {
	var s []store.Sample
	for i := range 6 {
		s = append(s,
			store.Sample{At: at(float64(i)), Member: "h0:1", Shard: "sh0", Up: true, Primary: true, ProcessID: "a"},
			store.Sample{At: at(float64(i) + 0.5), Member: "h1:1", Shard: "sh1", Up: true, Primary: true, ProcessID: "b"},
			store.Sample{At: at(float64(i) + 0.7), Member: "r:1", Shard: "mongos", Up: true})
	}
	if n := PrimaryChanges(s); n != 0 {
		t.Fatalf("two shards' steady primaries gave %d changes, want 0", n)
	}
	// sh1's primary moves to another member at 7 s.
	s = append(s, store.Sample{At: at(7), Member: "h1:2", Shard: "sh1", Up: true, Primary: true, ProcessID: "c"},
		store.Sample{At: at(7.2), Member: "h0:1", Shard: "sh0", Up: true, Primary: true, ProcessID: "a"})
	ch := NewPrimaries(s)
	if len(ch) != 1 || ch[0].Member != "h1:2" || !ch[0].At.Equal(at(7)) {
		t.Fatalf("changes %+v, want one: h1:2 at 7 s", ch)
	}
}

// TestAPrimaryKilledBeforeItReportedItselfIsAFailover: a member elected and
// killed between two of its own samples never reports itself as primary;
// the other members' views of the set still saw it, and a view a heartbeat
// behind another's counts the change once, not back and forth.
func TestAPrimaryKilledBeforeItReportedItselfIsAFailover(t *testing.T) {
	var s []store.Sample
	view := func(member string, sec float64, primary string) {
		s = append(s, store.Sample{At: at(sec), Member: member, Up: true, ProcessID: "p" + member, Primary: primary == member, SeenPrimary: primary})
	}
	for i := range 10 {
		sec := float64(i)
		// a is primary until it crashes at 3.5 s; b is elected at 6.5 s
		// and killed at 6.9 s, before its own sample at 7 s.
		if i < 4 {
			view("a", sec, "a")
		}
		if i < 7 {
			view("b", sec+0.1, map[bool]string{true: "a", false: ""}[i < 4])
		}
		// c hears of b's election at once; d a heartbeat later, so at
		// 7.3 s d still names a, which c no longer does.
		switch {
		case i < 4:
			view("c", sec+0.2, "a")
			view("d", sec+0.3, "a")
		case i < 7:
			view("c", sec+0.2, "")
			view("d", sec+0.3, "")
		case i == 7:
			view("c", sec+0.2, "b")
			view("d", sec+0.3, "a")
		default:
			view("c", sec+0.2, "b")
			view("d", sec+0.3, "b")
		}
	}
	if n := len(NewPrimaries(s)); n != 0 {
		t.Fatalf("%d new primaries in the primaries' own reports, want 0 (b never reported itself)", n)
	}
	if n := ViewedPrimaryChanges(s); n != 1 {
		t.Fatalf("%d changes in the members' views, want 1 (a → b; c and d each saw it once)", n)
	}
	if n := PrimaryChanges(s); n != 1 {
		t.Fatalf("%d failovers, want 1", n)
	}
}
