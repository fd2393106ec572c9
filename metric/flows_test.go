package metric

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// failoverStorm is a 20 s storm (10 s to 30 s) sampled each second on
// members a and b, worked out by hand:
//   - a is primary until its OOM kill after its sample at 14 s; it is
//     down from 15 s to 19 s and comes back at 20 s as a new process,
//     a secondary, its counters from zero;
//   - no primary from 15 s to 19 s (b is a secondary then);
//   - b is primary from 20 s; after its sample at 24 s it restarts in
//     place and is primary again at 25 s as a new process whose counters
//     began from zero (a counter reset on the primary);
//   - on a primary, removedFromQueue grows 5/s on a and 7/s on b (b's
//     reads 3 at its restart's first sample), canceled never; a sheds
//     2/s (1/s of them the sweeper's), b 4/s (none the sweeper's; its
//     first sample after the restart reads 2).
func failoverStorm() store.Records {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
		store.PhaseWarmup: at(0), store.PhaseStorm: at(10), store.PhaseRecovery: at(30), store.PhaseEnd: at(40)}}}
	census := func(low, running float64) map[string]float64 {
		return map[string]float64{store.CensusTrackedField(store.QueueLowPriority): low, store.CensusTrackedField(store.QueueNormalPriority): 0,
			store.CensusTrackedField(store.QueueRunning): running, store.CensusTrackedField(store.QueueIdleCursors): 1}
	}
	for i := range 40 {
		// a
		switch {
		case i <= 14:
			v := census(float64(100*i), 50)
			v[store.FieldReadLowRemovedFromQueue], v[store.FieldReadLowCanceled] = float64(5*i), 0
			v[store.FieldQueryMemoryOperationsShed], v[store.FieldQueryMemoryOperationsShedQueued] = float64(2*i), float64(i)
			r.Samples = append(r.Samples, store.Sample{At: at(i), Member: "a", Up: true, Primary: true, ProcessID: "pa1", Values: v})
		case i < 20:
			r.Samples = append(r.Samples, store.Sample{At: at(i), Member: "a"})
		default:
			v := census(0, 0)
			v[store.FieldReadLowRemovedFromQueue], v[store.FieldReadLowCanceled] = 0, 0
			v[store.FieldQueryMemoryOperationsShed], v[store.FieldQueryMemoryOperationsShedQueued] = 0, 0
			r.Samples = append(r.Samples, store.Sample{At: at(i), Member: "a", Up: true, ProcessID: "pa2", Values: v})
		}
		// b
		v := census(0, 0)
		pid, removed, shed := "pb1", 0.0, 0.0
		switch {
		case i >= 20 && i <= 24:
			removed, shed = float64(7*(i-20)), float64(4*(i-20))
			v = census(10, 900)
		case i >= 25:
			pid, removed, shed = "pb2", float64(3+7*(i-25)), float64(2+4*(i-25))
			v = census(700, 20)
		}
		v[store.FieldReadLowRemovedFromQueue], v[store.FieldReadLowCanceled] = removed, 0
		v[store.FieldQueryMemoryOperationsShed], v[store.FieldQueryMemoryOperationsShedQueued] = shed, 0
		r.Samples = append(r.Samples, store.Sample{At: at(i), Member: "b", Up: true, Primary: i >= 20, ProcessID: pid, Values: v})
	}
	r.KillOpActor = true
	r.Kills = []store.Kill{{At: at(12), Queued: true, Queue: store.QueueLowPriority}, {At: at(22), Queued: true, Queue: store.QueueNormalPriority},
		{At: at(27), Queue: store.QueueRunning}, {At: at(35), Queued: true, Queue: store.QueueLowPriority}}
	r.Canaries = []store.CanaryOp{{Scheduled: at(1), Latency: time.Millisecond, OK: true}}
	return r
}

// Across a failover with a span without a primary and a counter reset on
// the new primary, each rate counts every event once and divides by the
// denominator its definition names.
func TestRatesNameTheirDenominatorAcrossAFailoverAndAGap(t *testing.T) {
	// The storm's intervals close at 10 … 29 s. With a primary: a's
	// (9,10] … (13,14] (5 s, admissions 5 × 5), b's (19,20] … (28,29]
	// (10 s: 0 while a secondary, 4 × 7, 3 at the reset, 4 × 7): 15 s in
	// all, 84 admissions. Sheds: a 5 × 2 (5 × 1 the sweeper's), b 0 +
	// 4 × 4 + 2 + 4 × 4 = 34. Actor kills at 12, 22 and 27 s.
	values, absent := Explain(failoverStorm())
	for m, want := range map[string]float64{
		AdmissionsPerS:             84.0 / 15,
		AdmissionsPerStormS:        84.0 / 20,
		KillsPerS:                  0,
		DeparturesPerS:             84.0 / 15,
		ServerShedsPerS:            44.0 / 15,
		ServerShedsQueuedPerS:      5.0 / 15,
		ServerShedsInlinePerS:      39.0 / 15,
		ServerShedsMinusAdmissions: (44.0 - 84) / 15,
		ActorKillsPerS:             3.0 / 15,
		ActorKillsLowQueuePerS:     1.0 / 15,
		ActorKillsNormalQueuePerS:  1.0 / 15,
		ActorKillsRunningPerS:      1.0 / 15,
		Failovers:                  2, // a → b, and b's process restarted as primary
		Restarts:                   2,
	} {
		if got, ok := values[m]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v, %q), want %v", m, got, ok, absent[m], want)
		}
	}
}

// A storm no primary was sampled in has no rate with a primary: absent,
// with why, never a division by zero.
func TestRatesWithoutAPrimaryInTheStormAreAbsent(t *testing.T) {
	r := failoverStorm()
	for i := range r.Samples {
		r.Samples[i].Primary = false
	}
	values, absent := Explain(r)
	for _, m := range []string{ServerShedsPerS, ActorKillsPerS, AdmissionsPerS, AdmissionsPerStormS} {
		if v, ok := values[m]; ok || absent[m] == "" {
			t.Errorf("%s = %v (present %v, absent %q): want absent, with why", m, v, ok, absent[m])
		}
	}
}

// Each primary life is one member process's run as primary: when it
// began and ended, why it ended, its admissions per second, and which
// queue held the most tracked memory at its last sample.
func TestPrimaryLivesFromSamples(t *testing.T) {
	r := failoverStorm()
	lives := PrimaryLives(r)
	t0 := r.PhaseStarts[store.PhaseWarmup]
	type want struct {
		member, process string
		start, end      int
		cause           string
		admissions      float64
		heaviest        string
	}
	wants := []want{
		{"a", "pa1", 0, 14, store.LifeCrashed, 5, store.QueueLowPriority},     // then down, back as a new process
		{"b", "pb1", 20, 24, store.LifeCrashed, 7, store.QueueRunning},        // restarted in place
		{"b", "pb2", 25, 39, store.LifeTrialEnded, 7, store.QueueLowPriority}, // primary to the end
	}
	if len(lives) != len(wants) {
		t.Fatalf("%d lives, want %d: %+v", len(lives), len(wants), lives)
	}
	for i, w := range wants {
		l := lives[i]
		if l.Member != w.member || l.Process != w.process || l.Start != t0.Add(time.Duration(w.start)*time.Second) ||
			l.End != t0.Add(time.Duration(w.end)*time.Second) || l.Cause != w.cause {
			t.Errorf("life %d: %s %s %v–%v %s; want %s %s %d–%d s %s", i, l.Member, l.Process, l.Start.Sub(t0), l.End.Sub(t0), l.Cause,
				w.member, w.process, w.start, w.end, w.cause)
		}
		if l.AdmissionsPerS == nil || math.Abs(*l.AdmissionsPerS-w.admissions) > 1e-9 {
			t.Errorf("life %d: admissions/s %v, want %v", i, l.AdmissionsPerS, w.admissions)
		}
		if l.HeaviestQueue != w.heaviest || l.TrackedAtEnd[w.heaviest] <= 0 {
			t.Errorf("life %d: heaviest %q (%v), want %s", i, l.HeaviestQueue, l.TrackedAtEnd, w.heaviest)
		}
	}
	// A primary that steps down and lives on; a member the sampler lost
	// for a moment that came back the same process, still primary.
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.Member == "b" {
			s.ProcessID = "pb1"
			sec := int(s.At.Sub(t0) / time.Second)
			s.Primary = sec >= 20 && sec < 32
			s.Up = sec != 27
		}
	}
	lives = PrimaryLives(r)
	if len(lives) != 2 || lives[1].Cause != store.LifeSteppedDown || lives[1].End != t0.Add(31*time.Second) {
		t.Errorf("b primary 20–31 s, unread at 27 s, then a secondary: lives %+v; want one life ending stepped down at 31 s", lives)
	}
}

// A quantile of latencies some of which a timeout cut short is exact only
// when no bound can move it; otherwise it is a lower bound.
func TestCensoredQuantile(t *testing.T) {
	for _, tc := range []struct {
		values  []float64
		atLeast []bool
		q, want float64
		bound   bool
	}{
		{[]float64{1, 2, 3, 5000}, []bool{false, false, false, true}, 0.5, 2.5, false},     // the bound lies above the median
		{[]float64{1, 2, 3, 5000}, []bool{false, false, false, true}, 0.99, 4850.09, true}, // p99 rests on it
		{[]float64{1, 10, 5}, []bool{false, false, true}, 0.5, 5, true},                    // 5 or more: the median is 5 to 10
		{[]float64{7, 7, 7}, []bool{false, false, false}, 0.99, 7, false},                  // nothing censored
		{[]float64{5000, 5000}, []bool{true, true}, 0.5, 5000, true},                       // every canary timed out
		{[]float64{1, 2, 3, 0.5}, []bool{false, false, false, true}, 0.5, 1.5, true},       // a bound below can rise past the median
	} {
		v, bound := CensoredQuantile(tc.values, tc.atLeast, tc.q)
		if math.Abs(v-tc.want) > 1e-9 || bound != tc.bound {
			t.Errorf("q%.2f of %v (bounds %v) = %v (lower bound %v), want %v (%v)", tc.q, tc.values, tc.atLeast, v, bound, tc.want, tc.bound)
		}
	}
}

// Every rate's definition names its denominator.
func TestEveryRateNamesItsDenominator(t *testing.T) {
	for _, m := range Registry {
		if m.Unit != "/s" {
			continue
		}
		if !strings.Contains(m.Definition, perPrimarySecond) && !strings.Contains(m.Definition, perStormSecond) &&
			!strings.Contains(m.Definition, "per second of storm time") {
			t.Errorf("%s: its definition names no denominator: %s", m.Name, m.Definition)
		}
	}
}
