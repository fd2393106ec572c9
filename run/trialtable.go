package run

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// column is a metric shown in the trial table: its title, the metric,
// how its value is written (after dividing by unit), and whether only
// --wide shows it.
type column struct {
	title, metric, format string
	unit                  float64
	wide                  bool
}

// trialColumns are a storm run's: the essential ones fit 80 columns.
// Every outcome of the storm's queries is among them, failed included: a
// crash loop's headline is its failed queries (tens of thousands against
// hundreds completed), which a table without them hides.
var trialColumns = []column{
	{title: "avail", metric: metric.Availability, format: "%.3f", unit: 1},
	{title: "avail storm", metric: metric.AvailabilityStorm, format: "%.3f", unit: 1, wide: true},
	{title: "failovers", metric: metric.Failovers, format: "%.0f", unit: 1},
	{title: "restarts", metric: metric.Restarts, format: "%.0f", unit: 1, wide: true},
	{title: "ok", metric: metric.StormCompleted, format: "%.0f", unit: 1}, {title: "shed", metric: metric.StormShed, format: "%.0f", unit: 1},
	{title: "killed", metric: metric.StormKilled, format: "%.0f", unit: 1},
	{title: "failed", metric: metric.StormFailed, format: "%.0f", unit: 1},
	{title: "srv sheds/s", metric: metric.ServerShedsPerS, format: "%.1f", unit: 1, wide: true},
	{title: "actor kills/s", metric: metric.ActorKillsPerS, format: "%.1f", unit: 1, wide: true},
	{title: "unsupported", metric: metric.StormUnsupported, format: "%.0f", unit: 1, wide: true},
	{title: "unfinished", metric: metric.StormUnfinished, format: "%.0f", unit: 1, wide: true},
	{title: "p99 ms", metric: metric.CanaryP99Ms, format: "%.0f", unit: 1}, {title: "rss GiB", metric: metric.RSSPeakBytes, format: "%.2f", unit: 1 << 30},
}

// trialLegend names what the storm table's terse titles stand for.
const trialLegend = "avail: canary availability; ok, shed, killed, failed: storm queries that completed, failed QueryMemoryLimitExceeded, " +
	"were Interrupted, or failed otherwise (timeouts, network errors, no primary), as the client saw them; " +
	"p99 ms: canary latency p99, ≥ when a canary the client's timeout cut short can move it; rss GiB: peak RSS, 2^30 B. " +
	"--wide adds avail storm (the storm's canaries), srv sheds/s (the server's own sheds) and actor kills/s (the killOp actor's), " +
	"per second with a primary, never added"

// mergeColumns are a merge_partial_write run's.
var mergeColumns = []column{
	{title: "ops", metric: "merge_ops", format: "%.0f", unit: 1, wide: true},
	{title: "completed", metric: "merge_completed", format: "%.0f", unit: 1, wide: true},
	{title: "shed", metric: "merge_shed", format: "%.0f", unit: 1}, {title: "killed", metric: "merge_killed", format: "%.0f", unit: 1},
	{title: "failed", metric: "merge_failed", format: "%.0f", unit: 1, wide: true},
	{title: "unsafe sheds", metric: "unsafe_sheds", format: "%.0f", unit: 1},
	{title: "on primary", metric: "unsafe_sheds_primary", format: "%.0f", unit: 1},
	{title: "on secondary", metric: "unsafe_sheds_secondary", format: "%.0f", unit: 1},
}

// WriteTrialTable writes the table qmlsab run ends with: each finished
// trial's headline metrics, arm by arm, the essential ones within 80
// columns and every one when wide; a value a trial lacks is "–" with a
// numbered note saying why, and a lower bound is "≥".
func WriteTrialTable(w io.Writer, r *store.Run, wide bool) error {
	if r.Manifest.Simulated {
		texttable.FoldParagraph(w, "SIMULATED: the trials ran on mongosim, a model of mongod, not a real server.", "", "")
		if r.Manifest.Clock == store.ClockVirtual {
			texttable.FoldParagraph(w, "The model ran in virtual time (no wire protocol); durations are model seconds.", "", "")
		}
	}
	status := map[string]store.Status{}
	for _, ts := range r.Manifest.Trials {
		status[plan.Key(ts.Arm, ts.Index)] = ts.Status
	}
	var spec workload.Spec
	_ = json.Unmarshal(r.Manifest.Workload, &spec) // a workload that does not read: the storm's columns
	cols, legend := trialLayout(spec.Kind)
	// A trial is named as the progress lines name it (E#3): one column
	// for the arm and the index leaves room for every outcome.
	t := &texttable.Table{Columns: append([]texttable.Column{{Title: "trial", Key: "trial"}, {Title: "status", Key: "status"}},
		TrialTableColumns(spec.Kind)...)}
	// An absent value is "–" with a numbered note saying why, never 0.
	var notes []string
	note := func(why string) int {
		if i := slices.Index(notes, why); i >= 0 {
			return i + 1
		}
		notes = append(notes, why)
		return len(notes)
	}
	for _, name := range r.Manifest.ArmNames() {
		for _, tr := range r.Trials[name] {
			key := plan.Key(name, tr.Index)
			row := []texttable.Cell{texttable.Text(key), texttable.Text(string(status[key]))}
			for _, col := range cols {
				v, ok := tr.Metrics[col.metric]
				bound, censored := tr.AtLeast[col.metric]
				switch why := tr.Absent[col.metric]; {
				case censored:
					row = append(row, texttable.Text("≥"+fmt.Sprintf(col.format, bound/col.unit)))
				case ok:
					row = append(row, texttable.Number(fmt.Sprintf(col.format, v/col.unit), v))
				case why != "" && (wide || !col.wide):
					row = append(row, texttable.Absent(fmt.Sprintf("–[%d]", note(why))))
				default:
					row = append(row, texttable.Absent("–"))
				}
			}
			t.Add(row...)
		}
	}
	if err := t.Write(w, texttable.Format{Wide: wide}); err != nil {
		return err
	}
	if legend != "" {
		texttable.FoldParagraph(w, legend, "", "  ")
	}
	for i, why := range notes {
		texttable.FoldParagraph(w, fmt.Sprintf("[%d] absent: %s", i+1, why), "", "    ")
	}
	return nil
}

// trialLayout is the trial table's columns and legend for a run of the
// workload kind: the merge workload's, or the storm's (any other).
func trialLayout(kind string) ([]column, string) {
	if kind == workload.KindMergePartialWrite {
		return mergeColumns, ""
	}
	return trialColumns, trialLegend
}

// TrialTableColumns are the columns WriteTrialTable shows for a run of
// the workload kind (its title, the metric's name as its key, and whether
// only the wide table has it), after the trial and its status.
func TrialTableColumns(kind string) []texttable.Column {
	cols, _ := trialLayout(kind)
	out := make([]texttable.Column, len(cols))
	for i, c := range cols {
		out[i] = texttable.Column{Title: c.title, Key: c.metric, Wide: c.wide}
	}
	return out
}
