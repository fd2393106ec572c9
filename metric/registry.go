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
	// Share marks a share in [0, 1] (an availability): a chart's value
	// axis ends at 1, however flat the values.
	Share bool
	// compute returns the metric of a trial, or why the records cannot
	// give it (absent, not zero): a non-empty reason means absent.
	compute func(t *trial) (float64, string)
	// bound, set instead of compute for a metric a client timeout can
	// censor (a latency quantile), also says whether the value is only a
	// lower bound (Evaluation.AtLeast).
	bound func(t *trial) (v float64, atLeast bool, why string)
	// Needs are the kinds of record beyond the samples the metric rests
	// on (store.StormRecords, CanaryRecords, KillRecords): it is absent
	// from a trial that lacks one (store.Records.Missing), such as a
	// trial imported from diagnostic data without client-side outcomes.
	Needs []string
}

// Names of the metrics other packages refer to by name. A name keeps one
// meaning: a metric whose definition changes gets a new name, and the old
// one is Retired, so a figure stored under a name (an older run's
// trial.json, a history's nights) is never read as another quantity.
const (
	Availability         = "availability"
	AvailabilityWarmup   = "availability_warmup"
	AvailabilityStorm    = "availability_storm"
	AvailabilityRecovery = "availability_recovery"
	Failovers            = "failovers"
	Restarts             = "restarts"
	// ServerShedsPerS and its parts are the server's own sheds
	// (queryMemory.loadShedding), split by who decided: the inline
	// checkpoint of a ticket holder, and the queued-op sweeper.
	ServerShedsPerS       = "server_sheds_per_s"
	ServerShedsInlinePerS = "server_sheds_inline_per_s"
	ServerShedsQueuedPerS = "server_sheds_queued_per_s"
	// ActorKillsPerS and its parts are the killOp actor's kills, split by
	// where the op was (store.Kill.Queue). No metric adds them to the
	// server's sheds: one is the server's decision, the other a client's.
	ActorKillsPerS            = "actor_kills_per_s"
	ActorKillsLowQueuePerS    = "actor_kills_lowpri_queue_per_s"
	ActorKillsNormalQueuePerS = "actor_kills_normal_queue_per_s"
	ActorKillsRunningPerS     = "actor_kills_running_per_s"
	AdmissionsPerS            = "admissions_per_s"
	AdmissionsPerStormS       = "admissions_per_storm_s"
	KillsPerS                 = "kills_per_s"
	DeparturesPerS            = "departures_per_s"
	ReadTicketsMed            = "read_tickets_median"
	ReadTicketsMin            = "read_tickets_min"
	LowQueueP95               = "lowpri_queue_p95"
	LowQueueMax               = "lowpri_queue_max"
	LowQueueSlope             = "lowpri_queue_trend_per_s"
	LowQueueGrowth            = "lowpri_queue_sustained_growth"
	RSSPeakBytes              = "rss_peak_bytes"
	StormCompleted            = "storm_completed"
	StormShed                 = "storm_shed"
	StormKilled               = "storm_killed"
	StormFailed               = "storm_failed"
	StormUnsupported          = "storm_unsupported"
	StormUnfinished           = "storm_unfinished"
	CanaryP50Ms               = "canary_p50_ms"
	CanaryP99Ms               = "canary_p99_ms"
	VictimTrackedP50          = "victim_tracked_bytes_p50"
	UnsafeSheds               = "unsafe_sheds"
	// ServerShedsMinusAdmissions is server sheds/s − low-priority
	// admissions/s (above zero: queued operations are being shed, the
	// sweeper's signature); the server's sheds only, never an actor's
	// kills.
	ServerShedsMinusAdmissions = "server_sheds_minus_admissions_per_s"
	// UnsafeShedsPrimary and UnsafeShedsSecondary are the unsafe sheds
	// by the read preference their $merge ran with (UnsafeShedsOn).
	UnsafeShedsPrimary   = "unsafe_sheds_primary"
	UnsafeShedsSecondary = "unsafe_sheds_secondary"
	MergeOps             = "merge_ops"
	MergeCompleted       = "merge_completed"
	MergeShed            = "merge_shed"
	MergeKilled          = "merge_killed"
	MergeFailed          = "merge_failed"
	// OutTempLeftovers counts $out ops that left documents in $out's
	// temporary collections, apart from unsafe sheds (writes into a
	// target).
	OutTempLeftovers = "out_temp_leftovers"
)

// Retired are metric names qmlsab no longer computes, each with what it
// meant and what replaced it (Lookup finds them, so a report of an older
// run, or a history's older nights, still says what a stored figure
// was). Retiring a name instead of redefining it keeps two quantities
// from ever sharing one: a stored figure is never compared with a new
// one across the change.
var Retired = []Metric{
	{Name: "sheds_per_s", Title: "sheds/s (retired)",
		Definition: "retired: server sheds (Δ operationsShed) plus killOp actor kills, per sampled storm second — two deciders added into one figure; replaced by server_sheds_per_s (and its inline and sweeper parts) and actor_kills_per_s (by queue), never added"},
	{Name: "sheds_minus_admissions_per_s", Title: "sheds/s − admissions/s (retired)",
		Definition: "retired: sheds_per_s (server sheds plus actor kills) minus low-priority admissions/s, so an arm without a sweeper could show the sweeper's signature through its actor's kills; replaced by server_sheds_minus_admissions_per_s (server sheds only)"},
	{Name: "lowpri_queue_slope_per_s", Title: "low-pri queue slope (retired)",
		Definition: "retired: least-squares growth of the low-priority queue length over all the primary's samples in the storm, the queue's initial fill included, ops per second of storm time; replaced by lowpri_queue_trend_per_s (the trend after the fill)"},
	{Name: "lowpri_queue_growth", Title: "sustained queue growth (retired)",
		Definition: "retired: 1 when lowpri_queue_slope_per_s was above zero at one-sided p < 0.01 by ordinary least squares' t test (independent errors, which a queue sampled every second does not have, so flat queues were flagged) and added at least 10 ops over the storm; replaced by lowpri_queue_sustained_growth (the trend after the fill, autocorrelation-robust errors)"},
}

// Denominators of the rates, as their definitions name them. Both take the
// storm's sampling intervals to be those whose closing sample falls in
// the storm (a sample's counters describe the interval before it).
const (
	// perPrimarySecond: over the storm's seconds with a primary, the
	// sampling intervals that closed on a sample of the primary; seconds
	// without one are left out of the denominator (their flow is unknown,
	// not zero).
	perPrimarySecond = "per second with a primary (the storm's sampling intervals that closed on a sample of the primary; seconds without a primary are left out)"
	// perStormSecond: over the storm's whole length; seconds without a
	// primary sample count, with zero flow.
	perStormSecond = "per second of storm (its whole length: seconds without a primary count, with no flow)"
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
	{Name: Availability, Title: "availability", Better: +1, Key: true, Share: true,
		Definition: "canary ops that succeeded within the SLO ÷ canary ops scheduled, over all three phases; a canary that found no primary counts as failed (one the server does not implement, or one still running at the trial's end, counts in neither)",
		compute:    storm(func(t *trial) (float64, string) { return availability(t.Canaries, time.Time{}, time.Time{}, "") }),
		Needs:      []string{store.CanaryRecords}},
	{Name: AvailabilityWarmup, Title: "availability (warmup)", Better: +1, Key: true, Share: true,
		Definition: "availability of the canaries scheduled in the warmup (before the storm), counted as availability counts them",
		compute:    phaseAvailability(store.PhaseWarmup), Needs: []string{store.CanaryRecords}},
	{Name: AvailabilityStorm, Title: "availability (storm)", Better: +1, Key: true, Share: true,
		Definition: "availability of the canaries scheduled in the storm",
		compute:    phaseAvailability(store.PhaseStorm), Needs: []string{store.CanaryRecords}},
	{Name: AvailabilityRecovery, Title: "availability (recovery)", Better: +1, Key: true, Share: true,
		Definition: "availability of the canaries scheduled in the recovery (after the storm, to the trial's end)",
		compute:    phaseAvailability(store.PhaseRecovery), Needs: []string{store.CanaryRecords}},
	{Name: Failovers, Title: "failovers", Better: -1, Count: true, Key: true,
		Definition: "primary changes observed (a new member, or a restarted process, as primary): the most of three witnesses' counts — the primaries' reports of themselves and one member's view of whom it named its primary, in the samples, and the workload driver's topology monitoring (wall-clock storm trials), which sees a flip between two samples",
		compute: func(t *trial) (float64, string) {
			return float64(max(PrimaryChanges(t.Samples), len(t.DriverPrimaries))), ""
		}},
	{Name: Restarts, Title: "restarts", Better: -1, Count: true, Key: true,
		Definition: "member process restarts (crash or OOM kill), from processId changes or uptime going backwards",
		compute:    func(t *trial) (float64, string) { return float64(RestartCount(t.Samples)), "" }},
	{Name: ServerShedsPerS, Title: "server sheds/s", Unit: "/s", Key: true,
		Definition: "the server's own sheds (Δ queryMemory.loadShedding.operationsShed on the primary, inline and sweeper alike; never a killOp actor's kills) " + perPrimarySecond + " — only a primary sheds, and the sweeper's signature compares them with admissions/s on the same denominator. 0 when the primary answered in the storm without a loadShedding section: mongod leaves it out when its shedder is off, and a server without one sheds nothing",
		compute:    storm(func(t *trial) (float64, string) { return t.serverSheds(serverShedsAll) })},
	{Name: ServerShedsInlinePerS, Title: "inline sheds/s", Unit: "/s",
		Definition: "the sheds the inline checkpoint decided, of ops holding a ticket (Δ operationsShed − Δ operationsShedQueued) " + perPrimarySecond + "; 0 without a loadShedding section, absent when the server reports operationsShed without operationsShedQueued (its sheds cannot be split)",
		compute:    storm(func(t *trial) (float64, string) { return t.serverSheds(serverShedsInline) })},
	{Name: ServerShedsQueuedPerS, Title: "sweeper sheds/s", Unit: "/s",
		Definition: "the sheds the queued-op sweeper decided, of ops waiting for a ticket (Δ queryMemory.loadShedding.operationsShedQueued) " + perPrimarySecond + "; 0 without a loadShedding section, absent when the server reports operationsShed without operationsShedQueued",
		compute:    storm(func(t *trial) (float64, string) { return t.serverSheds(serverShedsQueued) })},
	{Name: ActorKillsPerS, Title: "actor kills/s", Unit: "/s", Key: true,
		Definition: "the killOp actor's kills in the storm (those the server accepted) " + perPrimarySecond + ", the denominator of the server's flows, since the actor acts on the primary; 0 for an arm without the actor; never added to the server's sheds",
		compute:    storm(func(t *trial) (float64, string) { return t.actorKills("") }),
		Needs:      []string{store.KillRecords}},
	{Name: ActorKillsLowQueuePerS, Title: "actor kills/s (low-pri queue)", Unit: "/s",
		Definition: "the killOp actor's kills of ops waiting in the low-priority read queue " + perPrimarySecond + "; absent when a kill did not record its queue (recorded before kills did)",
		compute:    storm(func(t *trial) (float64, string) { return t.actorKills(store.QueueLowPriority) }),
		Needs:      []string{store.KillRecords}},
	{Name: ActorKillsNormalQueuePerS, Title: "actor kills/s (normal queue)", Unit: "/s",
		Definition: "the killOp actor's kills of ops waiting in a normal-priority queue " + perPrimarySecond + "; absent when a kill did not record its queue",
		compute:    storm(func(t *trial) (float64, string) { return t.actorKills(store.QueueNormalPriority) }),
		Needs:      []string{store.KillRecords}},
	{Name: ActorKillsRunningPerS, Title: "actor kills/s (running)", Unit: "/s",
		Definition: "the killOp actor's kills of running ops (holding a ticket; only a policy that considers running ops makes them) " + perPrimarySecond,
		compute:    storm(func(t *trial) (float64, string) { return t.actorKills(store.QueueRunning) }),
		Needs:      []string{store.KillRecords}},
	{Name: AdmissionsPerS, Title: "admissions/s (with a primary)", Unit: "/s", Key: true,
		Definition: "low-priority read queue departures that got a ticket (Δ removedFromQueue − Δ canceled) " + perPrimarySecond + ": the primary's admission rate while there is one",
		compute:    storm(func(t *trial) (float64, string) { return t.perPrimarySecond(t.admissions, fieldLowRemoved) })},
	{Name: AdmissionsPerStormS, Title: "admissions/s (of storm)", Unit: "/s", Key: true,
		Definition: "the same admissions " + perStormSecond + ": what the storm got through; below admissions/s (with a primary) by the share of the storm without one",
		compute:    storm(func(t *trial) (float64, string) { return t.perStormSecond(t.admissions, fieldLowRemoved) })},
	{Name: KillsPerS, Title: "queue kills/s", Unit: "/s", Key: true,
		Definition: "low-priority read queue departures without a ticket (Δ canceled: a killOp kill or a sweeper shed of a queued op, as the server counts them) " + perPrimarySecond + " (a flow of the primary's queue, as admissions/s)",
		compute:    storm(func(t *trial) (float64, string) { return t.queueKillsPerS() })},
	{Name: DeparturesPerS, Title: "departures/s", Unit: "/s",
		Definition: "Δ removedFromQueue of the low-priority read queue " + perPrimarySecond + " (admissions/s + queue kills/s)",
		compute: storm(func(t *trial) (float64, string) {
			a, why := t.perPrimarySecond(t.admissions, fieldLowRemoved)
			k, _ := t.queueKillsPerS()
			return a + k, why
		})},
	{Name: ServerShedsMinusAdmissions, Title: "server sheds/s − admissions/s", Unit: "/s",
		Definition: "server sheds/s minus low-priority admissions/s, both " + perPrimarySecond + ": above zero, the server sheds faster than its low-priority queue admits, which needs queued ops to be shed (the sweeper's signature); an actor's kills never count",
		compute: storm(func(t *trial) (float64, string) {
			sheds, why := t.serverSheds(serverShedsAll)
			if why != "" {
				return 0, why
			}
			admissions, why := t.perPrimarySecond(t.admissions, fieldLowRemoved)
			return sheds - admissions, why
		})},
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
	{Name: LowQueueSlope, Title: "low-pri queue trend", Unit: "/s", Better: -1,
		Definition: "least-squares slope of the low-priority queue length over the primary's samples in the storm after the queue's fill (" + fillRule + "), ops per second of storm time",
		compute: storm(func(t *trial) (float64, string) {
			g, why := t.queueGrowth()
			return g.Slope, why
		})},
	{Name: LowQueueGrowth, Title: "sustained queue growth", Better: -1, Count: true,
		Definition: fmt.Sprintf("1 when the queue's trend after its fill (%s; %s) is above zero at one-sided p < %g "+
			"with autocorrelation-robust (Newey–West) standard errors — Bartlett's kernel on AR(1)-prewhitened scores, "+
			"Andrews' plug-in bandwidth — and adds at least %d ops over the samples it is fitted on, else 0",
			LowQueueSlope, fillRule, GrowthLevel, GrowthMinOps),
		compute: storm(func(t *trial) (float64, string) {
			g, why := t.queueGrowth()
			if why != "" {
				return 0, why
			}
			if g.Growing {
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
		Definition: "canary latency from its scheduled start, median (canaries the server answered or failed). A canary the client stopped waiting for (its timeout) has only a lower bound: when it can move the median, the value is \"≥ …\" (at_least), never a measurement",
		bound:      stormBound(func(t *trial) (float64, bool, string) { return t.canaryLatency(0.5) }),
		Needs:      []string{store.CanaryRecords}},
	{Name: CanaryP99Ms, Title: "canary p99", Unit: "ms", Better: -1, Key: true,
		Definition: "canary latency from its scheduled start, 99th percentile (canaries the server answered or failed); with canaries cut short by the client's timeout, \"≥ …\" whenever they can move it",
		bound:      stormBound(func(t *trial) (float64, bool, string) { return t.canaryLatency(0.99) }),
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
		Definition: "merge workload: ops that failed shed or killed after their $merge/$out wrote documents into its target (a partial write); the shed failpoint forces the shed after the first write batches, so this tests the write-started latch, not the odds of a shed",
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
	{Name: OutTempLeftovers, Title: "$out temp leftovers", Count: true,
		Definition: "merge workload: $out ops that left documents in $out's temporary collections (tmp.agg_out.*) when they failed; $out writes there and replaces its target only when it finishes, so these are never partial writes of the target (not unsafe sheds), and mongod drops them best-effort",
		compute:    mergeOps(func(o store.MergeOp) bool { return o.OutTempDocs > 0 })},
}

// Lookup finds a metric by name; unknown names (metrics of a newer tool,
// say) get a plain entry that computes nothing.
func Lookup(name string) Metric {
	if i := slices.IndexFunc(Registry, func(m Metric) bool { return m.Name == name }); i >= 0 {
		return Registry[i]
	}
	if i := slices.IndexFunc(Retired, func(m Metric) bool { return m.Name == name }); i >= 0 {
		return Retired[i]
	}
	return Metric{Name: name, Title: name}
}

// IsRetired reports whether name is a Retired metric's.
func IsRetired(name string) bool {
	return slices.ContainsFunc(Retired, func(m Metric) bool { return m.Name == name })
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
// for a storm trial, and the other way round) are in neither map, and a
// metric that is only a lower bound is in neither either (Evaluate has
// it).
func Explain(r store.Records) (values map[string]float64, absent map[string]string) {
	e := Evaluate(r)
	return e.Values, e.Absent
}

// Evaluation is every metric a trial's records give: the measured values,
// the reasons of those absent, and those that are only lower bounds.
type Evaluation struct {
	Values map[string]float64
	Absent map[string]string
	// AtLeast are the metrics a client timeout censored (trial.json's
	// at_least): the true value is at least this one, so it is never a
	// measurement to average or compare.
	AtLeast map[string]float64
}

// Evaluate computes every metric of a trial's records (Explain, plus the
// lower bounds).
func Evaluate(r store.Records) Evaluation {
	t := newTrial(r)
	e := Evaluation{Values: map[string]float64{}, Absent: map[string]string{}, AtLeast: map[string]float64{}}
	for _, m := range Registry {
		if i := slices.IndexFunc(m.Needs, func(k string) bool { return slices.Contains(r.Missing, k) }); i >= 0 {
			if !m.appliesTo(t) {
				continue
			}
			e.Absent[m.Name] = "the trial has no " + m.Needs[i] + " records (imported without client-side outcomes)"
			continue
		}
		switch v, atLeast, why := m.eval(t); {
		case why == notApplicable:
		case why != "":
			e.Absent[m.Name] = why
		case atLeast:
			e.AtLeast[m.Name] = v
		default:
			e.Values[m.Name] = v
		}
	}
	return e
}

// Fill sets what trial.json says of a trial's records: its metrics, why
// any is absent, those that are only lower bounds, and (for a storm) its
// primaries' lives.
func Fill(t *store.Trial, r store.Records) {
	e := Evaluate(r)
	t.Metrics, t.Absent, t.AtLeast = e.Values, e.Absent, nil
	if len(e.AtLeast) > 0 {
		t.AtLeast = e.AtLeast
	}
	t.PrimaryLives = nil
	if r.Merge == nil {
		t.PrimaryLives = PrimaryLives(r)
	}
}

// eval is the metric of a trial: its value, whether that is only a lower
// bound, or why it is absent.
func (m Metric) eval(t *trial) (v float64, atLeast bool, why string) {
	if m.bound != nil {
		return m.bound(t)
	}
	v, why = m.compute(t)
	return v, false, why
}

// notApplicable is compute's reason for a metric of another workload: it
// is left out of the trial rather than shown absent.
const notApplicable = "not applicable to this workload"

func (m Metric) appliesTo(t *trial) bool {
	_, _, why := m.eval(t)
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
	// primarySecs is how much of the storm had a primary: the length of
	// the storm's sampling intervals that closed on a primary sample
	// (perPrimarySecond's denominator).
	primarySecs       float64
	admissions, kills []Point
}

func newTrial(r store.Records) *trial {
	t := &trial{Records: r, stormStart: r.PhaseStarts[store.PhaseStorm], stormEnd: r.PhaseStarts[store.PhaseRecovery]}
	t.stormSecs = t.stormEnd.Sub(t.stormStart).Seconds()
	if r.Merge == nil {
		t.admissions, t.kills = Departures(r.Samples)
		t.primarySecs = covered(t.stormIntervals(PrimaryIntervals(r.Samples)))
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
	fieldShedQueued = serverField{store.FieldQueryMemoryOperationsShedQueued, "queryMemory.loadShedding.operationsShedQueued"}
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

// stormBound is storm for a metric that may be only a lower bound.
func stormBound(f func(t *trial) (float64, bool, string)) func(t *trial) (float64, bool, string) {
	return func(t *trial) (float64, bool, string) {
		if t.Merge != nil {
			return 0, false, notApplicable
		}
		return f(t)
	}
}

func mergeOutcome(o store.Outcome) func(t *trial) (float64, string) {
	return mergeOps(func(m store.MergeOp) bool { return m.Outcome == o })
}

// inStorm reports whether a point belongs to the storm: a gauge sampled
// in it, or a rate whose interval closed in it.
func (t *trial) inStorm(p Point) bool { return !p.At.Before(t.stormStart) && p.At.Before(t.stormEnd) }

// stormIntervals are the points of ps that belong to the storm.
func (t *trial) stormIntervals(ps []Point) []Point {
	var out []Point
	for _, p := range ps {
		if t.inStorm(p) {
			out = append(out, p)
		}
	}
	return out
}

// noStorm is the reason of a storm metric in a trial without a storm.
const noStorm = "the trial has no storm phase"

// stormEvents is how many events a primary's counter rate (ps, from
// PrimaryRates) counted over the storm: each storm interval's rate times
// its length. ok is false when no interval of the storm had the counter,
// and why then says whether the server never reported it (f).
func (t *trial) stormEvents(ps []Point, f serverField) (events float64, why string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	in := t.stormIntervals(ps)
	if len(in) == 0 {
		return 0, t.unreported(f)
	}
	for _, p := range in {
		events += p.Value * p.At.Sub(p.From).Seconds()
	}
	return events, ""
}

// perPrimarySecond is a primary counter's events over the storm ÷ the
// storm's seconds with a primary (perPrimarySecond's definition).
func (t *trial) perPrimarySecond(ps []Point, f serverField) (float64, string) {
	events, why := t.stormEvents(ps, f)
	if why != "" {
		return 0, why
	}
	return events / t.primarySecs, ""
}

// perStormSecond is the same events ÷ the storm's whole length.
func (t *trial) perStormSecond(ps []Point, f serverField) (float64, string) {
	events, why := t.stormEvents(ps, f)
	if why != "" {
		return 0, why
	}
	return events / t.stormSecs, ""
}

func (t *trial) stormGauge(f serverField, agg func([]float64) float64) (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	var v []float64
	for _, p := range t.stormIntervals(PrimaryGauge(t.Samples, f.name)) {
		v = append(v, p.Value)
	}
	if len(v) == 0 {
		return 0, t.unreported(f)
	}
	return agg(v), ""
}

// queueKillsPerS is present whenever admissions are (a server without
// queue kills has zero of them).
func (t *trial) queueKillsPerS() (float64, string) {
	if _, why := t.perPrimarySecond(t.admissions, fieldLowRemoved); why != "" {
		return 0, why
	}
	k, _ := t.perPrimarySecond(t.kills, fieldLowRemoved)
	return k, ""
}

// Which of the server's sheds a metric counts.
type shedPart int

const (
	serverShedsAll shedPart = iota
	serverShedsInline
	serverShedsQueued
)

// noPrimaryInStorm is why a flow of the primary is absent from a storm no
// primary was sampled in.
const noPrimaryInStorm = "no sample of the primary during the storm"

// serverSheds is the server's sheds (part of them) per second with a
// primary. A primary that answered in the storm without a
// queryMemory.loadShedding section shed nothing: mongod reports the
// section whenever its shedder is on, so its absence is a zero, not a
// gap. A server that reports operationsShed but not operationsShedQueued
// cannot say which of its sheds the sweeper decided: the parts are absent.
func (t *trial) serverSheds(part shedPart) (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	if t.primarySecs <= 0 {
		return 0, noPrimaryInStorm
	}
	reported := func(field string) bool {
		for _, s := range t.Samples {
			if _, ok := s.Values[field]; ok && s.Up && s.Primary && !s.At.Before(t.stormStart) && s.At.Before(t.stormEnd) {
				return true
			}
		}
		return false
	}
	if !reported(fieldShed.name) {
		return 0, "" // no shedder: no sheds, inline or queued
	}
	all, why := t.stormEvents(PrimaryRates(t.Samples, fieldShed.name), fieldShed)
	if why != "" || part == serverShedsAll {
		return all / t.primarySecs, why
	}
	if !reported(fieldShedQueued.name) {
		return 0, "the server reports operationsShed but no " + fieldShedQueued.path + ": it does not say which of its sheds the sweeper decided"
	}
	queued, why := t.stormEvents(PrimaryRates(t.Samples, fieldShedQueued.name), fieldShedQueued)
	if why != "" {
		return 0, why
	}
	if part == serverShedsQueued {
		return queued / t.primarySecs, ""
	}
	return (all - queued) / t.primarySecs, ""
}

// actorKills is the killOp actor's kills in the storm per second with a
// primary: all of them (queue ""), or those of ops in one place
// (store.Kill.Queue). An arm without the actor killed nothing.
func (t *trial) actorKills(queue string) (float64, string) {
	if t.stormSecs <= 0 {
		return 0, noStorm
	}
	if t.primarySecs <= 0 {
		return 0, noPrimaryInStorm
	}
	n, unknown := 0, 0
	for _, k := range t.Kills {
		if k.At.Before(t.stormStart) || !k.At.Before(t.stormEnd) || k.Err != "" {
			continue
		}
		q := k.Queue
		if q == "" && !k.Queued {
			q = store.QueueRunning // a kill recorded before queues were: not waiting, so running
		}
		switch {
		case queue == "" || q == queue:
			n++
		case q == "":
			unknown++
		}
	}
	if unknown > 0 && queue != store.QueueRunning {
		return 0, fmt.Sprintf("%d of the actor's kills of queued ops did not record which queue (recorded before kills named it)", unknown)
	}
	return float64(n) / t.primarySecs, ""
}

// fillRule is the queue-growth test's burn-in as the definitions state
// it (FillEnd).
const fillRule = "the fill: the storm's first samples until the queue first reaches its median length over the storm, at most half of them"

// StormQueueGrowth is the sustained-growth test of a trial's low-priority
// queue, as lowpri_queue_trend_per_s and lowpri_queue_sustained_growth
// see it: over the primary's samples in the storm, after the fill. why
// says why the records give none (no storm, no such samples, too few).
func StormQueueGrowth(r store.Records) (g Growth, why string) {
	if r.Merge != nil {
		return Growth{}, notApplicable
	}
	return newTrial(r).queueGrowth()
}

// queueGrowth is the sustained-growth test of the primary's low-priority
// queue in the storm (QueueGrowth).
func (t *trial) queueGrowth() (Growth, string) {
	if t.stormSecs <= 0 {
		return Growth{}, noStorm
	}
	var pts [][2]float64
	for _, q := range PrimaryGauge(t.Samples, fieldLowQueue.name) {
		if t.inStorm(q) {
			pts = append(pts, [2]float64{q.At.Sub(t.stormStart).Seconds(), q.Value})
		}
	}
	if len(pts) == 0 {
		return Growth{}, t.unreported(fieldLowQueue)
	}
	g, ok := QueueGrowth(pts)
	if !ok {
		return Growth{}, fmt.Sprintf("%d samples of %s in the storm, %d after the queue's fill: too few (or all at one time) for a trend",
			len(pts), fieldLowQueue.path, len(g.Window))
	}
	return g, ""
}

// answered reports whether a canary counts: the server answered or failed
// it (not one it does not implement, nor one the trial's end cut off).
func answered(c store.CanaryOp) bool {
	o := store.ClassifyCode(c.Code)
	return o != store.Unsupported && o != store.Unfinished
}

// canaryLatency is the q quantile of the answered canaries' latencies; a
// canary the client's timeout cut short has only a lower bound, so the
// quantile is one too when such a canary can move it.
func (t *trial) canaryLatency(q float64) (float64, bool, string) {
	var lat []float64
	var atLeast []bool
	censored := false
	for _, c := range t.Canaries {
		if answered(c) {
			lat = append(lat, float64(c.Latency)/float64(time.Millisecond))
			atLeast = append(atLeast, c.LowerBound())
			censored = censored || c.LowerBound()
		}
	}
	if len(lat) == 0 {
		return 0, false, noCanaries(t.Canaries)
	}
	if !censored {
		return Quantile(lat, q), false, ""
	}
	v, bound := CensoredQuantile(lat, atLeast, q)
	return v, bound, ""
}

// noCanaries is why a canary metric is absent.
func noCanaries(cs []store.CanaryOp) string {
	if len(cs) == 0 {
		return "no canary ran"
	}
	return fmt.Sprintf("none of the %d canaries was answered (unsupported, or still running at the trial's end)", len(cs))
}

// availability is canaries that succeeded within the SLO over canaries
// scheduled (those the server answered or failed), of those scheduled in
// [from, to) when from is set (to zero: no end), in the named phase.
func availability(cs []store.CanaryOp, from, to time.Time, phase store.Phase) (float64, string) {
	ok, n, in := 0, 0, 0
	for _, c := range cs {
		if !from.IsZero() && (c.Scheduled.Before(from) || !to.IsZero() && !c.Scheduled.Before(to)) {
			continue
		}
		in++
		if !answered(c) {
			continue
		}
		n++
		if c.OK {
			ok++
		}
	}
	switch {
	case n > 0:
		return float64(ok) / float64(n), ""
	case phase != "" && in == 0:
		return 0, "no canary was scheduled in the " + string(phase)
	}
	return 0, noCanaries(cs)
}

// phaseAvailability is the availability of the canaries scheduled in one
// phase: from its start to the next phase's (the trial's end after the
// recovery).
func phaseAvailability(phase store.Phase) func(t *trial) (float64, string) {
	return storm(func(t *trial) (float64, string) {
		from, ok := t.PhaseStarts[phase]
		if !ok {
			return 0, "the trial has no " + string(phase) + " phase"
		}
		var to time.Time
		if i := slices.Index(store.Phases, phase); i+1 < len(store.Phases) {
			to = t.PhaseStarts[store.Phases[i+1]]
		} else {
			to = t.PhaseStarts[store.PhaseEnd]
		}
		if len(t.Canaries) == 0 {
			return 0, noCanaries(t.Canaries)
		}
		return availability(t.Canaries, from, to, phase)
	})
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
