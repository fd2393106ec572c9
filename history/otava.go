package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/metric"
)

// OtavaOptions narrow an Otava export.
type OtavaOptions struct {
	// Arms, when set, exports only these arms. Otava analyses all entries
	// of a file as one series, so for change-point detection export one
	// arm per file.
	Arms []string
	// Metrics, when set, exports only these metrics.
	Metrics []string
}

// OtavaEntry is one element of Apache Otava's JSON import format (its
// JsonImporter): a point in time with metrics and string attributes.
type OtavaEntry struct {
	// Timestamp is Unix epoch seconds.
	Timestamp  int64             `json:"timestamp"`
	Metrics    []OtavaMetric     `json:"metrics"`
	Attributes map[string]string `json:"attributes"`
}

// OtavaMetric is one named value of an OtavaEntry.
type OtavaMetric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// OtavaEntries makes the Otava entries of runs: one per run and arm that
// has trials, with the median over the arm's trials of each metric (sorted
// by name), ordered by start time, run id and the run's arm order. The
// attributes are the run's labels plus run, workload, workload_digest, arm
// and build (which win over labels of those names); "branch" is always
// present (empty when the run has no branch label) because Otava's branch
// filter fails on an entry without it.
func OtavaEntries(runs []Run, opt OtavaOptions) []OtavaEntry {
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b Run) int {
		return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.ID, b.ID))
	})
	var out []OtavaEntry
	for _, r := range sorted {
		arms := r.Arms
		if len(arms) == 0 { // arms not listed: take them from the trials
			for _, t := range r.Trials {
				if !slices.ContainsFunc(arms, func(a Arm) bool { return a.Name == t.Arm }) {
					arms = append(arms, Arm{Name: t.Arm})
				}
			}
		}
		for _, a := range arms {
			if len(opt.Arms) > 0 && !slices.Contains(opt.Arms, a.Name) {
				continue
			}
			values := map[string][]float64{}
			for _, t := range r.Trials {
				if t.Arm != a.Name {
					continue
				}
				for m, v := range t.Metrics {
					if len(opt.Metrics) == 0 || slices.Contains(opt.Metrics, m) {
						values[m] = append(values[m], v)
					}
				}
			}
			if len(values) == 0 {
				continue
			}
			e := OtavaEntry{Timestamp: r.Started.Unix(), Attributes: map[string]string{"branch": ""}}
			for _, m := range sortedKeys(values) {
				e.Metrics = append(e.Metrics, OtavaMetric{Name: m, Value: metric.Median(values[m])})
			}
			for k, v := range r.Labels {
				e.Attributes[k] = v
			}
			e.Attributes["run"] = r.ID
			e.Attributes["workload"] = r.Workload
			e.Attributes["workload_digest"] = r.WorkloadDigest
			e.Attributes["arm"] = a.Name
			e.Attributes["build"] = a.Build
			out = append(out, e)
		}
	}
	return out
}

// ExportOtava writes runs in Apache Otava's JSON import format (see
// OtavaEntries for what is written).
func ExportOtava(w io.Writer, runs []Run, opt OtavaOptions) error {
	entries := OtavaEntries(runs, opt)
	if entries == nil {
		entries = []OtavaEntry{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(entries); err != nil {
		return fmt.Errorf("history: writing the Otava export: %w", err)
	}
	return nil
}
