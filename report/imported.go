package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// recordNames say what each kind of record is, for a reader.
var recordNames = map[string]string{
	store.StormRecords:  "storm op outcomes",
	store.CanaryRecords: "canaries",
	store.KillRecords:   "killOp actor kills (only the client sees them)",
}

// importWarnings say which runs were imported from diagnostic data and,
// arm by arm, which metrics are absent for want of which records.
func importWarnings(in *Input) []Warning {
	var out []Warning
	byArm := map[string][]string{}
	for i, m := range in.Manifests {
		if m.Imported == nil {
			continue
		}
		out = append(out, Warning{Text: fmt.Sprintf("IMPORTED: %s holds trials built from members' own diagnostic data (%s), not run by qmlsab; samples are what each member recorded about itself",
			in.Dirs[i], m.Imported.From)})
		for arm, kinds := range m.Imported.Missing {
			for _, k := range kinds {
				if !slices.Contains(byArm[arm], k) {
					byArm[arm] = append(byArm[arm], k)
				}
			}
		}
	}
	for _, arm := range in.Arms {
		kinds := byArm[arm]
		if len(kinds) == 0 {
			continue
		}
		var what, absent []string
		for _, k := range kinds {
			what = append(what, recordNames[k])
		}
		for _, m := range metric.AbsentWithout(kinds) {
			absent = append(absent, m.Title)
		}
		out = append(out, Warning{Arm: arm, Text: fmt.Sprintf("no client-side outcomes (%s) in the imported data: %s absent",
			strings.Join(what, ", "), strings.Join(absent, ", "))})
	}
	return out
}
