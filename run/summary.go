package run

import (
	"math"
	"slices"
	"time"

	ms "github.com/aclements/go-moremath/stats"

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
	if q := collect.PrimaryGauge(samples, "read.low.queueLength"); len(values(q, inStorm)) > 0 {
		v := values(q, inStorm)
		m["lowpri_queue_p95"], m["lowpri_queue_max"] = quantile(v, 0.95), slices.Max(v)
		var pts [][2]float64
		for _, p := range q {
			if inStorm(p) {
				pts = append(pts, [2]float64{p.At.Sub(stormStart).Seconds(), p.Value})
			}
		}
		if slope, p, ok := slopeTest(pts); ok {
			m["lowpri_queue_slope_per_s"] = slope
			// Sustained growth: a slope significantly above zero (one-sided
			// p < 0.01) that added at least 10 queued ops over the storm.
			m["lowpri_queue_growth"] = 0
			if p < 0.01 && slope*stormSecs >= 10 {
				m["lowpri_queue_growth"] = 1
			}
		}
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
	var victims []float64
	for _, v := range stormVictims(res, kills) {
		if v.bytes > 0 {
			victims = append(victims, float64(v.bytes))
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

// slopeTest fits y = a + b·x by least squares and returns b with the
// one-sided p-value of b > 0 (t test on the slope, n − 2 degrees of
// freedom). Written here because neither statistics library has a
// regression slope test.
func slopeTest(pts [][2]float64) (slope, p float64, ok bool) {
	n := float64(len(pts))
	if len(pts) < 3 {
		return 0, 1, false
	}
	var sx, sy float64
	for _, q := range pts {
		sx += q[0]
		sy += q[1]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, q := range pts {
		sxx += (q[0] - mx) * (q[0] - mx)
		sxy += (q[0] - mx) * (q[1] - my)
	}
	if sxx == 0 {
		return 0, 1, false
	}
	slope = sxy / sxx
	var sse float64
	for _, q := range pts {
		r := q[1] - (my + slope*(q[0]-mx))
		sse += r * r
	}
	se := math.Sqrt(sse / (n - 2) / sxx)
	switch {
	case se == 0 && slope > 0:
		return slope, 0, true
	case se == 0:
		return slope, 1, true
	}
	t := slope / se
	return slope, 1 - ms.TDist{V: n - 2}.CDF(t), true
}
