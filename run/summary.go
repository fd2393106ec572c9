package run

import (
	"math"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/workload"
)

// Summarize computes a trial's metrics (DESIGN.md §Metrics; the names are
// the contract). Storm-window metrics use the samples taken between the
// storm's start and the recovery's; a metric that cannot be computed
// (no samples with that field, no victims) is absent, not zero.
func Summarize(res workload.Results, samples []collect.Sample, kills []actor.KillEvent) map[string]float64 {
	m := map[string]float64{}
	stormStart, stormEnd := res.PhaseStarts["storm"], res.PhaseStarts["recovery"]
	inStorm := func(p collect.Point) bool { return !p.At.Before(stormStart) && p.At.Before(stormEnd) }
	stormSecs := stormEnd.Sub(stormStart).Seconds()

	m["availability"] = res.Availability()
	m["failovers"] = float64(collect.PrimaryChanges(samples))
	m["restarts"] = float64(collect.Restarts(samples))

	adm, kil := collect.Departures(samples)
	if a, ok := mean(adm, inStorm); ok {
		k, _ := mean(kil, inStorm)
		m["admissions_per_s"], m["kills_per_s"], m["departures_per_s"] = a, k, a+k
	}
	actorKills := 0
	for _, k := range kills {
		if !k.At.Before(stormStart) && k.At.Before(stormEnd) && k.Err == "" {
			actorKills++
		}
	}
	serverSheds, _ := mean(collect.PrimaryRates(samples, "queryMemory.operationsShed"), inStorm)
	if stormSecs > 0 {
		m["sheds_per_s"] = serverSheds + float64(actorKills)/stormSecs
	}
	if v := values(collect.PrimaryGauge(samples, "read.totalTickets"), inStorm); len(v) > 0 {
		m["read_tickets_median"], m["read_tickets_min"] = quantile(v, 0.5), slices.Min(v)
	}
	if v := values(collect.PrimaryGauge(samples, "read.low.queueLength"), inStorm); len(v) > 0 {
		m["lowpri_queue_p95"], m["lowpri_queue_max"] = quantile(v, 0.95), slices.Max(v)
	}
	peak := 0.0
	for _, s := range samples {
		if v, ok := s.Values["residentMB"]; s.Up && ok {
			peak = math.Max(peak, v*(1<<20))
		}
	}
	if peak > 0 {
		m["rss_peak_bytes"] = peak
	}
	counts := map[workload.Outcome]float64{}
	for _, s := range res.Storm {
		counts[s.Outcome]++
	}
	m["storm_completed"], m["storm_shed"], m["storm_killed"], m["storm_failed"] =
		counts[workload.Completed], counts[workload.Shed], counts[workload.Killed], counts[workload.Failed]
	var lat []float64
	for _, c := range res.Canaries {
		lat = append(lat, float64(c.Latency)/float64(time.Millisecond))
	}
	if len(lat) > 0 {
		m["canary_p50_ms"], m["canary_p99_ms"] = quantile(lat, 0.5), quantile(lat, 0.99)
	}
	// Victims' tracked memory: from the ops themselves when the model
	// recorded it (virtual clock), else from the killOp actor's kills
	// (over the wire a shed op's tracked bytes are not reported).
	var victims []float64
	for _, s := range res.Storm {
		if (s.Outcome == workload.Shed || s.Outcome == workload.Killed) && s.TrackedBytes > 0 {
			victims = append(victims, float64(s.TrackedBytes))
		}
	}
	if len(victims) == 0 {
		for _, k := range kills {
			if k.Err == "" && k.TrackedBytes > 0 {
				victims = append(victims, float64(k.TrackedBytes))
			}
		}
	}
	if len(victims) > 0 {
		m["victim_tracked_bytes_p50"] = quantile(victims, 0.5)
	}
	return m
}

func values(ps []collect.Point, keep func(collect.Point) bool) []float64 {
	var out []float64
	for _, p := range ps {
		if keep(p) {
			out = append(out, p.Value)
		}
	}
	return out
}

func mean(ps []collect.Point, keep func(collect.Point) bool) (float64, bool) {
	v := values(ps, keep)
	if len(v) == 0 {
		return 0, false
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v)), true
}

// quantile is the linear-interpolation quantile.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
