// Package metric is qmlsab's metric registry: every metric a trial can
// have — its name (a JSON key, report row and perf.send name, so part of
// the results contract), unit, definition, which direction is better, how
// trials aggregate — and the one pure function that computes it from a
// trial's records. Summaries in run folders, the CLI's trial table, the
// calibration table, the report and the gates all read metrics from here.
//
// The package also derives what the metrics rest on: per-member rates
// that survive counter resets, the primary's gauges, topology changes,
// per-second series and victim summaries.
package metric

import (
	"math"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Metric describes one trial metric and computes it.
type Metric struct {
	Name, Title, Unit string
	// Better is +1 when higher is better, -1 when lower is, 0 when
	// neither (a diagnostic).
	Better int
	// Count marks counts of events: arms are compared as counts (any is
	// notable) and the report also shows their total over the trials.
	// Other metrics aggregate over trials by median and range.
	Count      bool
	Definition string
	// Key metrics head the verdict table.
	Key bool
	// compute returns the metric of a trial, false when the records
	// cannot give it (absent, not zero).
	compute func(t *trial) (float64, bool)
	// Needs are the kinds of record beyond the samples the metric rests
	// on (store.StormRecords, CanaryRecords, KillRecords): it is absent
	// from a trial that lacks one (store.Records.Missing), such as a
	// trial imported from diagnostic data without client-side outcomes.
	Needs []string
}

// Names of the metrics other packages refer to by name.
const (
	Availability     = "availability"
	Failovers        = "failovers"
	Restarts         = "restarts"
	ShedsPerS        = "sheds_per_s"
	AdmissionsPerS   = "admissions_per_s"
	KillsPerS        = "kills_per_s"
	DeparturesPerS   = "departures_per_s"
	ReadTicketsMed   = "read_tickets_median"
	ReadTicketsMin   = "read_tickets_min"
	LowQueueP95      = "lowpri_queue_p95"
	LowQueueMax      = "lowpri_queue_max"
	LowQueueSlope    = "lowpri_queue_slope_per_s"
	LowQueueGrowth   = "lowpri_queue_growth"
	RSSPeakBytes     = "rss_peak_bytes"
	StormCompleted   = "storm_completed"
	StormShed        = "storm_shed"
	StormKilled      = "storm_killed"
	StormFailed      = "storm_failed"
	CanaryP50Ms      = "canary_p50_ms"
	CanaryP99Ms      = "canary_p99_ms"
	VictimTrackedP50 = "victim_tracked_bytes_p50"
	UnsafeSheds      = "unsafe_sheds"
)

// Registry is every known metric, in report order.
var Registry = []Metric{
	{Availability, "availability", "", +1, false, "canary ops that succeeded within the SLO ÷ canary ops scheduled, over all three phases; a canary that found no primary counts as failed", true,
		storm(func(t *trial) (float64, bool) { return availability(t.Results), true }), []string{store.CanaryRecords}},
	{Failovers, "failovers", "", -1, true, "primary changes observed in the samples (a new member, or a restarted process, as primary)", true,
		func(t *trial) (float64, bool) { return float64(PrimaryChanges(t.Samples)), true }, nil},
	{Restarts, "restarts", "", -1, true, "member process restarts (crash or OOM kill), from processId changes or uptime going backwards", true,
		func(t *trial) (float64, bool) { return float64(RestartCount(t.Samples)), true }, nil},
	{ShedsPerS, "sheds/s", "/s", 0, false, "server sheds (Δ queryMemory.loadShedding.operationsShed on the primary) plus killOp actor kills, per second of storm", true,
		storm(func(t *trial) (float64, bool) { return t.shedsPerS() }), []string{store.KillRecords}},
	{AdmissionsPerS, "admissions/s", "/s", 0, false, "low-priority read queue departures that got a ticket (Δ removedFromQueue − Δ canceled) per second of storm", true,
		storm(func(t *trial) (float64, bool) { return t.stormMean(t.admissions) }), nil},
	{KillsPerS, "queue kills/s", "/s", 0, false, "low-priority read queue departures without a ticket (Δ canceled) per second of storm", true,
		storm(func(t *trial) (float64, bool) { return t.queueKillsPerS() }), nil},
	{DeparturesPerS, "departures/s", "/s", 0, false, "Δ removedFromQueue of the low-priority read queue per second of storm (admissions + kills)", false,
		storm(func(t *trial) (float64, bool) {
			a, ok := t.stormMean(t.admissions)
			k, _ := t.queueKillsPerS()
			return a + k, ok
		}), nil},
	{ReadTicketsMed, "read tickets (median)", "", 0, false, "queues.execution.read.totalTickets on the primary during the storm, median", true,
		storm(func(t *trial) (float64, bool) { return t.stormGauge("read.totalTickets", median) }), nil},
	{ReadTicketsMin, "read tickets (min)", "", 0, false, "queues.execution.read.totalTickets on the primary during the storm, minimum", false,
		storm(func(t *trial) (float64, bool) { return t.stormGauge("read.totalTickets", slices.Min) }), nil},
	{LowQueueP95, "low-pri queue p95", "", -1, false, "queues.execution.read.lowPriority.queueLength on the primary during the storm, 95th percentile", true,
		storm(func(t *trial) (float64, bool) {
			return t.stormGauge("read.low.queueLength", func(v []float64) float64 { return Quantile(v, 0.95) })
		}), nil},
	{LowQueueMax, "low-pri queue max", "", -1, false, "the same queue's maximum during the storm", false,
		storm(func(t *trial) (float64, bool) { return t.stormGauge("read.low.queueLength", slices.Max) }), nil},
	{LowQueueSlope, "low-pri queue slope", "/s", -1, false, "least-squares growth of the low-priority queue over the storm, ops per second", false,
		storm(func(t *trial) (float64, bool) {
			slope, _, ok := t.queueSlope()
			return slope, ok
		}), nil},
	{LowQueueGrowth, "sustained queue growth", "", -1, true, "1 when the storm's queue slope is above zero at one-sided p < 0.01 and added at least 10 ops, else 0", false,
		storm(func(t *trial) (float64, bool) {
			slope, p, ok := t.queueSlope()
			if !ok {
				return 0, false
			}
			if p < 0.01 && slope*t.stormSecs >= 10 {
				return 1, true
			}
			return 0, true
		}), nil},
	{RSSPeakBytes, "peak RSS", "B", -1, false, "peak mem.resident over all members", true,
		storm(func(t *trial) (float64, bool) {
			peak := 0.0
			for _, s := range t.Samples {
				if v, ok := s.Values["residentMB"]; s.Up && ok {
					peak = math.Max(peak, v*(1<<20))
				}
			}
			return peak, peak > 0
		}), nil},
	{StormCompleted, "storm completed", "", 0, true, "storm ops that completed", false, stormCount(store.Completed), []string{store.StormRecords}},
	{StormShed, "storm shed", "", 0, true, "storm ops that failed QueryMemoryLimitExceeded", false, stormCount(store.Shed), []string{store.StormRecords}},
	{StormKilled, "storm killed", "", 0, true, "storm ops that failed Interrupted (killOp)", false, stormCount(store.Killed), []string{store.StormRecords}},
	{StormFailed, "storm failed", "", -1, true, "storm ops that failed otherwise (timeouts, network errors, no primary)", false, stormCount(store.Failed), []string{store.StormRecords}},
	{CanaryP50Ms, "canary p50", "ms", -1, false, "canary latency from its scheduled start, median", false,
		storm(func(t *trial) (float64, bool) { return t.canaryLatency(0.5) }), []string{store.CanaryRecords}},
	{CanaryP99Ms, "canary p99", "ms", -1, false, "canary latency from its scheduled start, 99th percentile", true,
		storm(func(t *trial) (float64, bool) { return t.canaryLatency(0.99) }), []string{store.CanaryRecords}},
	{VictimTrackedP50, "victim tracked bytes p50", "B", 0, false, "median inUseTrackedMemBytes of the storm's shed or killed ops, during the storm", false,
		storm(func(t *trial) (float64, bool) {
			var v []float64
			for _, x := range stormVictims(t.Results, t.Kills) {
				if x.bytes > 0 {
					v = append(v, float64(x.bytes))
				}
			}
			if len(v) == 0 {
				return 0, false
			}
			return median(v), true
		}), []string{store.StormRecords, store.KillRecords}},
	{UnsafeSheds, "unsafe sheds", "", -1, true, "merge workload: ops that failed shed or killed after their $merge wrote documents", true,
		mergeOps(func(o store.MergeOp) bool { return o.Unsafe }), nil},
	{"unsafe_sheds_primary", "unsafe sheds on primary", "", -1, true, "unsafe sheds of $merge ops run on the primary", false,
		mergeOps(func(o store.MergeOp) bool { return o.Unsafe && o.ReadPreference == "primary" }), nil},
	{"unsafe_sheds_secondary", "unsafe sheds on secondary", "", -1, true, "unsafe sheds of $merge ops run with read preference secondary", false,
		mergeOps(func(o store.MergeOp) bool { return o.Unsafe && o.ReadPreference == "secondary" }), nil},
	{"merge_ops", "merge ops", "", 0, true, "merge workload: $merge ops run", false, mergeOps(func(store.MergeOp) bool { return true }), nil},
	{"merge_completed", "merge completed", "", 0, true, "merge ops that completed", true, mergeOutcome(store.Completed), nil},
	{"merge_shed", "merge shed", "", 0, true, "merge ops that failed QueryMemoryLimitExceeded", true, mergeOutcome(store.Shed), nil},
	{"merge_killed", "merge killed", "", 0, true, "merge ops that failed Interrupted", false, mergeOutcome(store.Killed), nil},
	{"merge_failed", "merge failed", "", -1, true, "merge ops that failed otherwise", false, mergeOutcome(store.Failed), nil},
}

// Lookup finds a metric by name; unknown names (metrics of a newer tool,
// say) get a plain entry that computes nothing.
func Lookup(name string) Metric {
	if i := slices.IndexFunc(Registry, func(m Metric) bool { return m.Name == name }); i >= 0 {
		return Registry[i]
	}
	return Metric{Name: name, Title: name}
}

// AbsentWithout are the metrics a trial lacking the missing kinds of
// record cannot have (their Needs), in registry order.
func AbsentWithout(missing []string) []Metric {
	var out []Metric
	for _, m := range Registry {
		if slices.ContainsFunc(m.Needs, func(k string) bool { return slices.Contains(missing, k) }) {
			out = append(out, m)
		}
	}
	return out
}

// Summarize computes every metric a trial's records can give. Storm-window
// metrics use what happened between the storm's start and the recovery's;
// a metric the records cannot give is absent, not zero.
func Summarize(r store.Records) map[string]float64 {
	t := newTrial(r)
	out := map[string]float64{}
	for _, m := range Registry {
		if slices.ContainsFunc(m.Needs, func(k string) bool { return slices.Contains(r.Missing, k) }) {
			continue
		}
		if v, ok := m.compute(t); ok {
			out[m.Name] = v
		}
	}
	return out
}

// trial is one trial's records with what several metrics share, derived
// once.
type trial struct {
	store.Records
	stormStart, stormEnd time.Time
	stormSecs            float64
	admissions, kills    []Point
}

func newTrial(r store.Records) *trial {
	t := &trial{Records: r, stormStart: r.PhaseStarts["storm"], stormEnd: r.PhaseStarts["recovery"]}
	t.stormSecs = t.stormEnd.Sub(t.stormStart).Seconds()
	if r.Merge == nil {
		t.admissions, t.kills = Departures(r.Samples)
	}
	return t
}

// storm marks a metric of the spill_to_disk storm (absent for the merge
// workload).
func storm(f func(t *trial) (float64, bool)) func(t *trial) (float64, bool) {
	return func(t *trial) (float64, bool) {
		if t.Merge != nil {
			return 0, false
		}
		return f(t)
	}
}

func stormCount(o store.Outcome) func(t *trial) (float64, bool) {
	return storm(func(t *trial) (float64, bool) {
		n := 0
		for _, s := range t.Storm {
			if s.Outcome == o {
				n++
			}
		}
		return float64(n), true
	})
}

// mergeOps counts the merge workload's ops that match (present as zero:
// counts, not missing measurements).
func mergeOps(match func(store.MergeOp) bool) func(t *trial) (float64, bool) {
	return func(t *trial) (float64, bool) {
		if t.Merge == nil {
			return 0, false
		}
		n := 0
		for _, o := range t.Merge.Ops {
			if match(o) {
				n++
			}
		}
		return float64(n), true
	}
}

func mergeOutcome(o store.Outcome) func(t *trial) (float64, bool) {
	return mergeOps(func(m store.MergeOp) bool { return m.Outcome == o })
}

func (t *trial) inStorm(p Point) bool { return !p.At.Before(t.stormStart) && p.At.Before(t.stormEnd) }

func (t *trial) stormMean(ps []Point) (float64, bool) {
	v := t.stormValues(ps)
	if len(v) == 0 {
		return 0, false
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v)), true
}

func (t *trial) stormValues(ps []Point) []float64 {
	var out []float64
	for _, p := range ps {
		if t.inStorm(p) {
			out = append(out, p.Value)
		}
	}
	return out
}

func (t *trial) stormGauge(field string, f func([]float64) float64) (float64, bool) {
	v := t.stormValues(PrimaryGauge(t.Samples, field))
	if len(v) == 0 {
		return 0, false
	}
	return f(v), true
}

// queueKillsPerS is present whenever admissions are (a server without
// queue kills has zero of them).
func (t *trial) queueKillsPerS() (float64, bool) {
	if _, ok := t.stormMean(t.admissions); !ok {
		return 0, false
	}
	k, _ := t.stormMean(t.kills)
	return k, true
}

func (t *trial) shedsPerS() (float64, bool) {
	if t.stormSecs <= 0 {
		return 0, false
	}
	actorKills := 0
	for _, k := range t.Kills {
		if !k.At.Before(t.stormStart) && k.At.Before(t.stormEnd) && k.Err == "" {
			actorKills++
		}
	}
	serverSheds, _ := t.stormMean(PrimaryRates(t.Samples, "queryMemory.operationsShed"))
	return serverSheds + float64(actorKills)/t.stormSecs, true
}

func (t *trial) queueSlope() (slope, p float64, ok bool) {
	var pts [][2]float64
	for _, q := range PrimaryGauge(t.Samples, "read.low.queueLength") {
		if t.inStorm(q) {
			pts = append(pts, [2]float64{q.At.Sub(t.stormStart).Seconds(), q.Value})
		}
	}
	return SlopeTest(pts)
}

func (t *trial) canaryLatency(q float64) (float64, bool) {
	var lat []float64
	for _, c := range t.Canaries {
		lat = append(lat, float64(c.Latency)/float64(time.Millisecond))
	}
	if len(lat) == 0 {
		return 0, false
	}
	return Quantile(lat, q), true
}

// availability is canaries that succeeded within the SLO over canaries
// scheduled.
func availability(r store.Results) float64 {
	if len(r.Canaries) == 0 {
		return 0
	}
	ok := 0
	for _, c := range r.Canaries {
		if c.OK {
			ok++
		}
	}
	return float64(ok) / float64(len(r.Canaries))
}

// Ordered returns the names in registry order, then unknown names sorted.
func Ordered(names map[string]bool) []string {
	var out, rest []string
	for _, m := range Registry {
		if names[m.Name] {
			out = append(out, m.Name)
		}
	}
	for k := range names {
		if !slices.ContainsFunc(Registry, func(m Metric) bool { return m.Name == k }) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}
