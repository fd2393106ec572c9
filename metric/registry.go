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
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
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
	// compute returns the metric of a trial, or why the records cannot
	// give it (absent, not zero): a non-empty reason means absent.
	compute func(t *trial) (float64, string)
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
	StormUnsupported = "storm_unsupported"
	StormUnfinished  = "storm_unfinished"
	CanaryP50Ms      = "canary_p50_ms"
	CanaryP99Ms      = "canary_p99_ms"
	VictimTrackedP50 = "victim_tracked_bytes_p50"
	UnsafeSheds      = "unsafe_sheds"
	// SheddingGap is sheds/s − low-priority admissions/s (above zero:
	// queued operations are being shed, the sweeper's signature).
	SheddingGap = "sheds_minus_admissions_per_s"
	// UnsafeShedsPrimary and UnsafeShedsSecondary are the unsafe sheds
	// by the read preference their $merge ran with (UnsafeShedsOn).
	UnsafeShedsPrimary   = "unsafe_sheds_primary"
	UnsafeShedsSecondary = "unsafe_sheds_secondary"
	MergeOps             = "merge_ops"
	MergeCompleted       = "merge_completed"
	MergeShed            = "merge_shed"
	MergeKilled          = "merge_killed"
	MergeFailed          = "merge_failed"
)

// The read preferences the merge workload runs its $merge ops with
// (store.MergeOp.ReadPreference).
const (
	ReadPrefPrimary   = "primary"
	ReadPrefSecondary = "secondary"
)

// UnsafeShedsOn is the registry's metric of the unsafe sheds of $merge
// ops run with read preference rp; ok is false for a read preference the
// registry has no metric for.
func UnsafeShedsOn(rp string) (name string, ok bool) {
	switch rp {
	case ReadPrefPrimary:
		return UnsafeShedsPrimary, true
	case ReadPrefSecondary:
		return UnsafeShedsSecondary, true
	}
	return "", false
}

// Registry is every known metric, in report order; derived metrics (one
// computed from others, such as SheddingGap) are entries like any other.
// An entry names its fields: Better and Unit are zero for a diagnostic
// without a unit, Count and Key false unless set.
var Registry = []Metric{
	{Name: Availability, Title: "availability", Better: +1, Key: true,
		Definition: "canary ops that succeeded within the SLO ÷ canary ops scheduled, over all three phases; a canary that found no primary counts as failed (one the server does not implement, or one still running at the trial's end, counts in neither)",
		compute:    storm(func(t *trial) (float64, string) { return availability(t.Results) }),
		Needs:      []string{store.CanaryRecords}},
	{Name: Failovers, Title: "failovers", Better: -1, Count: true, Key: true,
		Definition: "primary changes observed in the samples (a new member, or a restarted process, as primary): the more of those the primaries reported of themselves and those one member saw in whom it named its primary",
		compute:    func(t *trial) (float64, string) { return float64(PrimaryChanges(t.Samples)), "" }},
	{Name: Restarts, Title: "restarts", Better: -1, Count: true, Key: true,
		Definition: "member process restarts (crash or OOM kill), from processId changes or uptime going backwards",
		compute:    func(t *trial) (float64, string) { return float64(RestartCount(t.Samples)), "" }},
	{Name: ShedsPerS, Title: "sheds/s", Unit: "/s", Key: true,
		Definition: "server sheds (Δ queryMemory.loadShedding.operationsShed on the primary) plus killOp actor kills, per second of storm; absent when the server reports no queryMemory.loadShedding and no killOp actor ran",
		compute:    storm(func(t *trial) (float64, string) { return t.shedsPerS() }),
		Needs:      []string{store.KillRecords}},
	{Name: AdmissionsPerS, Title: "admissions/s", Unit: "/s", Key: true,
		Definition: "low-priority read queue departures that got a ticket (Δ removedFromQueue − Δ canceled) per second of storm",
		compute:    storm(func(t *trial) (float64, string) { return t.stormMean(t.admissions, fieldLowRemoved) })},
	{Name: KillsPerS, Title: "queue kills/s", Unit: "/s", Key: true,
		Definition: "low-priority read queue departures without a ticket (Δ canceled) per second of storm",
		compute:    storm(func(t *trial) (float64, string) { return t.queueKillsPerS() })},
	{Name: DeparturesPerS, Title: "departures/s", Unit: "/s",
		Definition: "Δ removedFromQueue of the low-priority read queue per second of storm (admissions + kills)",
		compute: storm(func(t *trial) (float64, string) {
			a, why := t.stormMean(t.admissions, fieldLowRemoved)
			k, _ := t.queueKillsPerS()
			return a + k, why
		})},
	{Name: SheddingGap, Title: "sheds/s − admissions/s", Unit: "/s",
		Definition: "sheds/s minus low-priority admissions/s in the storm; above zero, operations leave the low-priority queue shed faster than they are admitted (the sweeper's signature)",
		compute: storm(func(t *trial) (float64, string) {
			sheds, why := t.shedsPerS()
			if why != "" {
				return 0, why
			}
			admissions, why := t.stormMean(t.admissions, fieldLowRemoved)
			return sheds - admissions, why
		}),
		Needs: []string{store.KillRecords}},
	{Name: ReadTicketsMed, Title: "read tickets (median)", Key: true,
		Definition: "queues.execution.read.totalTickets on the primary during the storm, median",
		compute:    storm(func(t *trial) (float64, string) { return t.stormGauge(fieldTickets, median) })},
	{Name: ReadTicketsMin, Title: "read tickets (min)",
		Definition: "queues.execution.read.totalTickets on the primary during the storm, minimum",
		compute:    storm(func(t *trial) (float64, string) { return t.stormGauge(fieldTickets, slices.Min) })},
	{Name: LowQueueP95, Title: "low-pri queue p95", Better: -1, Key: true,
		Definition: "queues.execution.read.lowPriority.queueLength on the primary during the storm, 95th percentile",
		compute: storm(func(t *trial) (float64, string) {
			return t.stormGauge(fieldLowQueue, func(v []float64) float64 { return Quantile(v, 0.95) })
		})},
	{Name: LowQueueMax, Title: "low-pri queue max", Better: -1,
		Definition: "the same queue's maximum during the storm",
		compute:    storm(func(t *trial) (float64, string) { return t.stormGauge(fieldLowQueue, slices.Max) })},
	{Name: LowQueueSlope, Title: "low-pri queue slope", Unit: "/s", Better: -1,
		Definition: "least-squares growth of the low-priority queue over the storm, ops per second",
		compute: storm(func(t *trial) (float64, string) {
			slope, _, why := t.queueSlope()
			return slope, why
		})},
	{Name: LowQueueGrowth, Title: "sustained queue growth", Better: -1, Count: true,
		Definition: "1 when the storm's queue slope is above zero at one-sided p < 0.01 and added at least 10 ops, else 0",
		compute: storm(func(t *trial) (float64, string) {
			slope, p, why := t.queueSlope()
			if why != "" {
				return 0, why
			}
			if p < 0.01 && slope*t.stormSecs >= 10 {
				return 1, ""
			}
			return 0, ""
		})},
	{Name: RSSPeakBytes, Title: "peak RSS", Unit: "B", Better: -1, Key: true,
		Definition: "peak mem.resident over all members",
		compute: storm(func(t *trial) (float64, string) {
			peak, seen := 0.0, false
			for _, s := range t.Samples {
				if v, ok := s.Values[fieldResident.name]; s.Up && ok {
					peak, seen = math.Max(peak, v*(1<<20)), true
				}
			}
			if !seen {
				return 0, t.unreported(fieldResident)
			}
			return peak, ""
		})},
	{Name: StormCompleted, Title: "storm completed", Count: true,
		Definition: "storm ops that completed",
		compute:    stormCount(store.Completed), Needs: []string{store.StormRecords}},
	{Name: StormShed, Title: "storm shed", Count: true,
		Definition: "storm ops that failed QueryMemoryLimitExceeded",
		compute:    stormCount(store.Shed), Needs: []string{store.StormRecords}},
	{Name: StormKilled, Title: "storm killed", Count: true,
		Definition: "storm ops that failed Interrupted (killOp)",
		compute:    stormCount(store.Killed), Needs: []string{store.StormRecords}},
	{Name: StormFailed, Title: "storm failed", Better: -1, Count: true,
		Definition: "storm ops that failed otherwise (timeouts, network errors, no primary); not those the server does not implement, nor those still running at the trial's end",
		compute:    stormCount(store.Failed), Needs: []string{store.StormRecords}},
	{Name: StormUnsupported, Title: "storm unsupported", Count: true,
		Definition: "storm ops the server does not implement (NotImplemented, CommandNotFound, InvalidPipelineOperator, an unrecognized stage): neither completed nor failed; more than 10 % of the storm makes the trial invalid",
		compute:    stormCount(store.Unsupported), Needs: []string{store.StormRecords}},
	{Name: StormUnfinished, Title: "storm unfinished", Count: true,
		Definition: "storm ops still running when the trial ended (TrialEnded): neither completed nor failed",
		compute:    stormCount(store.Unfinished), Needs: []string{store.StormRecords}},
	{Name: CanaryP50Ms, Title: "canary p50", Unit: "ms", Better: -1,
		Definition: "canary latency from its scheduled start, median (canaries the server answered or failed)",
		compute:    storm(func(t *trial) (float64, string) { return t.canaryLatency(0.5) }),
		Needs:      []string{store.CanaryRecords}},
	{Name: CanaryP99Ms, Title: "canary p99", Unit: "ms", Better: -1, Key: true,
		Definition: "canary latency from its scheduled start, 99th percentile (canaries the server answered or failed)",
		compute:    storm(func(t *trial) (float64, string) { return t.canaryLatency(0.99) }),
		Needs:      []string{store.CanaryRecords}},
	{Name: VictimTrackedP50, Title: "victim tracked bytes p50", Unit: "B",
		Definition: "median inUseTrackedMemBytes of the storm's shed or killed ops, during the storm",
		compute: storm(func(t *trial) (float64, string) {
			var v []float64
			for _, x := range stormVictims(t.Results, t.Kills) {
				if x.bytes > 0 {
					v = append(v, float64(x.bytes))
				}
			}
			if len(v) == 0 {
				return 0, "no shed or killed storm op had a known tracked size"
			}
			return median(v), ""
		}),
		Needs: []string{store.StormRecords, store.KillRecords}},
	{Name: UnsafeSheds, Title: "unsafe sheds", Better: -1, Count: true, Key: true,
		Definition: "merge workload: ops that failed shed or killed after their $merge wrote documents",
		compute:    unsafeSheds(func(o store.MergeOp) bool { return o.Unsafe })},
	{Name: UnsafeShedsPrimary, Title: "unsafe sheds on primary", Better: -1, Count: true,
		Definition: "unsafe sheds of $merge ops run on the primary",
		compute:    unsafeSheds(func(o store.MergeOp) bool { return o.Unsafe && o.ReadPreference == ReadPrefPrimary })},
	{Name: UnsafeShedsSecondary, Title: "unsafe sheds on secondary", Better: -1, Count: true,
		Definition: "unsafe sheds of $merge ops run with read preference secondary",
		compute:    unsafeSheds(func(o store.MergeOp) bool { return o.Unsafe && o.ReadPreference == ReadPrefSecondary })},
	{Name: MergeOps, Title: "merge ops", Count: true,
		Definition: "merge workload: $merge ops run",
		compute:    mergeOps(func(store.MergeOp) bool { return true })},
	{Name: MergeCompleted, Title: "merge completed", Count: true, Key: true,
		Definition: "merge ops that completed",
		compute:    mergeOutcome(store.Completed)},
	{Name: MergeShed, Title: "merge shed", Count: true, Key: true,
		Definition: "merge ops that failed QueryMemoryLimitExceeded",
		compute:    mergeOutcome(store.Shed)},
	{Name: MergeKilled, Title: "merge killed", Count: true,
		Definition: "merge ops that failed Interrupted",
		compute:    mergeOutcome(store.Killed)},
	{Name: MergeFailed, Title: "merge failed", Better: -1, Count: true,
		Definition: "merge ops that failed otherwise",
		compute:    mergeOutcome(store.Failed)},
}

// Lookup finds a metric by name; unknown names (metrics of a newer tool,
// say) get a plain entry that computes nothing.
func Lookup(name string) Metric {
	if i := slices.IndexFunc(Registry, func(m Metric) bool { return m.Name == name }); i >= 0 {
		return Registry[i]
	}
	return Metric{Name: name, Title: name}
}

// Known reports whether name is a metric of the registry (Lookup answers
// for any name; a gate or filter that names a metric checks it here).
func Known(name string) bool {
	return slices.ContainsFunc(Registry, func(m Metric) bool { return m.Name == name })
}

// Names are the registry's metric names, in report order.
func Names() []string {
	out := make([]string, len(Registry))
	for i, m := range Registry {
		out[i] = m.Name
	}
	return out
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
// a metric the records cannot give is absent, not zero (Explain says why).
func Summarize(r store.Records) map[string]float64 {
	values, _ := Explain(r)
	return values
}

// Explain is Summarize with the reason for each metric the trial should
// have but cannot ("the server reported no queryMemory.loadShedding"):
// what trial.json's absent map holds and the report shows beside "–".
// Metrics that do not apply to the trial's workload (the merge workload's
// for a storm trial, and the other way round) are in neither map.
func Explain(r store.Records) (values map[string]float64, absent map[string]string) {
	t := newTrial(r)
	values, absent = map[string]float64{}, map[string]string{}
	for _, m := range Registry {
		if i := slices.IndexFunc(m.Needs, func(k string) bool { return slices.Contains(r.Missing, k) }); i >= 0 {
			if !m.appliesTo(t) {
				continue
			}
			absent[m.Name] = "the trial has no " + m.Needs[i] + " records (imported without client-side outcomes)"
			continue
		}
		switch v, why := m.compute(t); why {
		case "":
			values[m.Name] = v
		case notApplicable:
		default:
			absent[m.Name] = why
		}
	}
	return values, absent
}

// notApplicable is compute's reason for a metric of another workload: it
// is left out of the trial rather than shown absent.
const notApplicable = "not applicable to this workload"

func (m Metric) appliesTo(t *trial) bool {
	_, why := m.compute(t)
	return why != notApplicable
}

// MaxUnsupportedShare is the share of a trial's storm the server may fail
// as not implemented (store.Unsupported) before the trial is invalid: past
// it, the trial measured a server that cannot run the workload.
const MaxUnsupportedShare = 0.10

// Validity is why a trial's records make it invalid, or "": more than
// MaxUnsupportedShare of its storm queries failed as not implemented. The
// reason names the stage and the error, as in "the server does not
// implement $setWindowFields: 1566 of 2237 storm queries failed
// NotImplemented".
func Validity(r store.Records) string {
	type key struct{ stage, code string }
	counts := map[key]int{}
	unsupported := 0
	for _, s := range r.Storm {
		if s.Outcome == store.Unsupported {
			counts[key{s.Stage, s.Code}]++
			unsupported++
		}
	}
	total := len(r.Storm)
	if r.Merge != nil { // merge_partial_write: its $merge ops are its storm
		for _, m := range r.Merge.Ops {
			if m.Outcome == store.Unsupported {
				counts[key{"$merge", m.Code}]++
				unsupported++
			}
		}
		total += len(r.Merge.Ops)
	}
	if total == 0 || float64(unsupported) <= MaxUnsupportedShare*float64(total) {
		return ""
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b key) int {
		if c := counts[b] - counts[a]; c != 0 {
			return c
		}
		return strings.Compare(a.stage+a.code, b.stage+b.code)
	})
	// What the storm was made of: a merge_partial_write trial's is its
	// $merge ops.
	ops := "storm queries"
	switch {
	case r.Merge != nil && len(r.Storm) == 0:
		ops = "merge ops"
	case r.Merge != nil:
		ops = "storm queries and merge ops"
	}
	var parts []string
	for _, k := range keys {
		stage := k.stage
		if stage == "" {
			stage = "the storm's query"
		}
		parts = append(parts, fmt.Sprintf("%s: %d of %d %s failed %s", stage, counts[k], total, ops, k.code))
	}
	return fmt.Sprintf("the server does not implement %s (more than %.0f %% of the storm is unsupported)",
		strings.Join(parts, "; "), 100*MaxUnsupportedShare)
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
	t := &trial{Records: r, stormStart: r.PhaseStarts[store.PhaseStorm], stormEnd: r.PhaseStarts[store.PhaseRecovery]}
	t.stormSecs = t.stormEnd.Sub(t.stormStart).Seconds()
	if r.Merge == nil {
		t.admissions, t.kills = Departures(r.Samples)
	}
	return t
}

// serverField is a sample field (collect's name) and where the server
// reports it, for the reason a metric resting on it is absent.
type serverField struct {
	name store.SampleField
	path string
}

var (
	fieldLowRemoved = serverField{store.FieldReadLowRemovedFromQueue, "queues.execution.read.lowPriority"}
	fieldLowQueue   = serverField{store.FieldReadLowQueueLength, "queues.execution.read.lowPriority.queueLength"}
	fieldTickets    = serverField{store.FieldReadTotalTickets, "queues.execution.read.totalTickets"}
	fieldShed       = serverField{store.FieldQueryMemoryOperationsShed, "queryMemory.loadShedding"}
	fieldResident   = serverField{store.FieldResidentMB, "mem.resident"}
)

// unreported is why a metric resting on f has no value: the server never
// reported f, or reported it only outside the storm or off the primary.
func (t *trial) unreported(f serverField) string {
	for _, s := range t.Samples {
		if _, ok := s.Values[f.name]; s.Up && ok {
			return "no sample of the primary during the storm had " + f.path
		}
	}
	return "the server reported no " + f.path
}

// storm marks a metric of the spill_to_disk storm (not applicable to the
// merge workload).
func storm(f func(t *trial) (float64, string)) func(t *trial) (float64, string) {
	return func(t *trial) (float64, string) {
		if t.Merge != nil {
			return 0, notApplicable
		}
		return f(t)
	}
}

func stormCount(o store.Outcome) func(t *trial) (float64, string) {
	return storm(func(t *trial) (float64, string) {
		n := 0
		for _, s := range t.Storm {
			if s.Outcome == o {
				n++
			}
		}
		return float64(n), ""
	})
}

// mergeOps counts the merge workload's ops that match (present as zero:
// counts, not missing measurements).
func mergeOps(match func(store.MergeOp) bool) func(t *trial) (float64, string) {
	return func(t *trial) (float64, string) {
		if t.Merge == nil {
			return 0, notApplicable
		}
		n := 0
		for _, o := range t.Merge.Ops {
			if match(o) {
				n++
			}
		}
		return float64(n), ""
	}
}

// unsafeSheds counts the merge ops match picks, unless the server could
// not run the $merge ops (more than MaxUnsupportedShare of them failed as
// unsupported): an op that never ran cannot be shed, safely or not, so
// the count is absent with why rather than a measured 0.
func unsafeSheds(match func(store.MergeOp) bool) func(t *trial) (float64, string) {
	count := mergeOps(match)
	return func(t *trial) (float64, string) {
		if t.Merge == nil {
			return 0, notApplicable
		}
		codes := map[string]int{}
		unsupported := 0
		for _, o := range t.Merge.Ops {
			if o.Outcome == store.Unsupported {
				codes[o.Code]++
				unsupported++
			}
		}
		if unsupported > 0 && float64(unsupported) > MaxUnsupportedShare*float64(len(t.Merge.Ops)) {
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(codes)) {
				parts = append(parts, fmt.Sprintf("%d %s", codes[c], c))
			}
			return 0, fmt.Sprintf("not measured: the server could not run the $merge ops (%d of %d failed: %s)",
				unsupported, len(t.Merge.Ops), strings.Join(parts, ", "))
		}
		return count(t)
	}
}

func mergeOutcome(o store.Outcome) func(t *trial) (float64, string) {
	return mergeOps(func(m store.MergeOp) bool { return m.Outcome == o })
}

func (t *trial) inStorm(p Point) bool { return !p.At.Before(t.stormStart) && p.At.Before(t.stormEnd) }

// stormMean is the mean of a series over the storm, or why there is none
// (f is the server field the series comes from).
func (t *trial) stormMean(ps []Point, f serverField) (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	v := t.stormValues(ps)
	if len(v) == 0 {
		return 0, t.unreported(f)
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v)), ""
}

// noStorm is the reason of a storm metric in a trial without a storm.
const noStorm = "the trial has no storm phase"

func (t *trial) stormValues(ps []Point) []float64 {
	var out []float64
	for _, p := range ps {
		if t.inStorm(p) {
			out = append(out, p.Value)
		}
	}
	return out
}

func (t *trial) stormGauge(f serverField, agg func([]float64) float64) (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	v := t.stormValues(PrimaryGauge(t.Samples, f.name))
	if len(v) == 0 {
		return 0, t.unreported(f)
	}
	return agg(v), ""
}

// queueKillsPerS is present whenever admissions are (a server without
// queue kills has zero of them).
func (t *trial) queueKillsPerS() (float64, string) {
	if _, why := t.stormMean(t.admissions, fieldLowRemoved); why != "" {
		return 0, why
	}
	k, _ := t.stormMean(t.kills, fieldLowRemoved)
	return k, ""
}

// shedsPerS is absent when the server reports no shedding counter and no
// killOp actor ran: a zero would read as a server that never sheds. With
// the actor and no counter (a build without the in-server shedder), the
// actor's kills are the trial's sheds.
func (t *trial) shedsPerS() (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	actorKills := 0
	for _, k := range t.Kills {
		if !k.At.Before(t.stormStart) && k.At.Before(t.stormEnd) && k.Err == "" {
			actorKills++
		}
	}
	serverSheds, why := t.stormMean(PrimaryRates(t.Samples, fieldShed.name), fieldShed)
	if why != "" && !t.KillOpActor {
		return 0, why
	}
	return serverSheds + float64(actorKills)/t.stormSecs, ""
}

func (t *trial) queueSlope() (slope, p float64, why string) {
	if t.stormSecs <= 0 {
		return 0, 1, noStorm
	}
	var pts [][2]float64
	for _, q := range PrimaryGauge(t.Samples, fieldLowQueue.name) {
		if t.inStorm(q) {
			pts = append(pts, [2]float64{q.At.Sub(t.stormStart).Seconds(), q.Value})
		}
	}
	if len(pts) == 0 {
		return 0, 1, t.unreported(fieldLowQueue)
	}
	slope, p, ok := SlopeTest(pts)
	if !ok {
		return 0, 1, fmt.Sprintf("%d samples of %s in the storm, too few (or all at one time) for a slope", len(pts), fieldLowQueue.path)
	}
	return slope, p, ""
}

// answered reports whether a canary counts: the server answered or failed
// it (not one it does not implement, nor one the trial's end cut off).
func answered(c store.CanaryOp) bool {
	o := store.ClassifyCode(c.Code)
	return o != store.Unsupported && o != store.Unfinished
}

func (t *trial) canaryLatency(q float64) (float64, string) {
	var lat []float64
	for _, c := range t.Canaries {
		if answered(c) {
			lat = append(lat, float64(c.Latency)/float64(time.Millisecond))
		}
	}
	if len(lat) == 0 {
		return 0, noCanaries(t.Canaries)
	}
	return Quantile(lat, q), ""
}

// noCanaries is why a canary metric is absent.
func noCanaries(cs []store.CanaryOp) string {
	if len(cs) == 0 {
		return "no canary ran"
	}
	return fmt.Sprintf("none of the %d canaries was answered (unsupported, or still running at the trial's end)", len(cs))
}

// availability is canaries that succeeded within the SLO over canaries
// scheduled (those the server answered or failed).
func availability(r store.Results) (float64, string) {
	ok, n := 0, 0
	for _, c := range r.Canaries {
		if !answered(c) {
			continue
		}
		n++
		if c.OK {
			ok++
		}
	}
	if n == 0 {
		return 0, noCanaries(r.Canaries)
	}
	return float64(ok) / float64(n), ""
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
