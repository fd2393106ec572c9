package report

import "slices"

// Metric describes a trial metric for people: its title, unit, which
// direction is better, and its definition (DESIGN.md §Metrics, whose
// names are the contract).
type Metric struct {
	Name, Title, Unit string
	// Better is +1 when higher is better, -1 when lower is, 0 when
	// neither (a diagnostic).
	Better int
	// Count marks counts of events (compared as counts: any is notable).
	Count      bool
	Definition string
	// Key metrics head the verdict table.
	Key bool
}

// Metrics is the table of known metrics, in report order.
var Metrics = []Metric{
	{"availability", "availability", "", +1, false, "canary ops that succeeded within the SLO ÷ canary ops scheduled, over all three phases; a canary that found no primary counts as failed", true},
	{"failovers", "failovers", "", -1, true, "primary changes observed in the samples (a new member, or a restarted process, as primary)", true},
	{"restarts", "restarts", "", -1, true, "member process restarts (crash or OOM kill), from processId changes or uptime going backwards", true},
	{"sheds_per_s", "sheds/s", "/s", 0, false, "server sheds (Δ queryMemory.loadShedding.operationsShed on the primary) plus killOp actor kills, per second of storm", true},
	{"admissions_per_s", "admissions/s", "/s", 0, false, "low-priority read queue departures that got a ticket (Δ removedFromQueue − Δ canceled) per second of storm", true},
	{"kills_per_s", "queue kills/s", "/s", 0, false, "low-priority read queue departures without a ticket (Δ canceled) per second of storm", true},
	{"departures_per_s", "departures/s", "/s", 0, false, "Δ removedFromQueue of the low-priority read queue per second of storm (admissions + kills)", false},
	{"read_tickets_median", "read tickets (median)", "", 0, false, "queues.execution.read.totalTickets on the primary during the storm, median", true},
	{"read_tickets_min", "read tickets (min)", "", 0, false, "queues.execution.read.totalTickets on the primary during the storm, minimum", false},
	{"lowpri_queue_p95", "low-pri queue p95", "", -1, false, "queues.execution.read.lowPriority.queueLength on the primary during the storm, 95th percentile", true},
	{"lowpri_queue_max", "low-pri queue max", "", -1, false, "the same queue's maximum during the storm", false},
	{"lowpri_queue_slope_per_s", "low-pri queue slope", "/s", -1, false, "least-squares growth of the low-priority queue over the storm, ops per second", false},
	{"lowpri_queue_growth", "sustained queue growth", "", -1, true, "1 when the storm's queue slope is above zero at one-sided p < 0.01 and added at least 10 ops, else 0", false},
	{"rss_peak_bytes", "peak RSS", "B", -1, false, "peak mem.resident over all members", true},
	{"storm_completed", "storm completed", "", 0, true, "storm ops that completed", false},
	{"storm_shed", "storm shed", "", 0, true, "storm ops that failed QueryMemoryLimitExceeded", false},
	{"storm_killed", "storm killed", "", 0, true, "storm ops that failed Interrupted (killOp)", false},
	{"storm_failed", "storm failed", "", -1, true, "storm ops that failed otherwise (timeouts, network errors, no primary)", false},
	{"canary_p50_ms", "canary p50", "ms", -1, false, "canary latency from its scheduled start, median", false},
	{"canary_p99_ms", "canary p99", "ms", -1, false, "canary latency from its scheduled start, 99th percentile", true},
	{"victim_tracked_bytes_p50", "victim tracked bytes p50", "B", 0, false, "median inUseTrackedMemBytes of shed or killed ops", false},
	{"unsafe_sheds", "unsafe sheds", "", -1, true, "merge workload: ops that failed shed or killed after their $merge wrote documents", true},
	{"unsafe_sheds_primary", "unsafe sheds on primary", "", -1, true, "unsafe sheds of $merge ops run on the primary", false},
	{"unsafe_sheds_secondary", "unsafe sheds on secondary", "", -1, true, "unsafe sheds of $merge ops run with read preference secondary", false},
	{"merge_ops", "merge ops", "", 0, true, "merge workload: $merge ops run", false},
	{"merge_completed", "merge completed", "", 0, true, "merge ops that completed", true},
	{"merge_shed", "merge shed", "", 0, true, "merge ops that failed QueryMemoryLimitExceeded", true},
	{"merge_killed", "merge killed", "", 0, true, "merge ops that failed Interrupted", false},
	{"merge_failed", "merge failed", "", -1, true, "merge ops that failed otherwise", false},
}

// LookupMetric finds a metric by name; unknown names get a plain entry.
func LookupMetric(name string) Metric {
	if i := slices.IndexFunc(Metrics, func(m Metric) bool { return m.Name == name }); i >= 0 {
		return Metrics[i]
	}
	return Metric{Name: name, Title: name}
}

// metricNames are the metrics present in any trial, in table order, then
// unknown ones sorted.
func metricNames(in *Input) []string {
	present := map[string]bool{}
	for _, ts := range in.Trials {
		for _, t := range ts {
			for k := range t.Metrics {
				present[k] = true
			}
		}
	}
	var out []string
	for _, m := range Metrics {
		if present[m.Name] {
			out = append(out, m.Name)
			delete(present, m.Name)
		}
	}
	var rest []string
	for k := range present {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	return append(out, rest...)
}
