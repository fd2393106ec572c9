package nightly

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/store"
)

// Nights groups run folders into nights, in the order they are given: the
// shard folders of one plan are one night (at the place of the first of
// them), every other folder its own. Folders that cannot be read are left
// alone here, each its own night (FromRuns names the problem).
func Nights(dirs []string) [][]string {
	var out [][]string
	plan := map[string]int{} // plan digest of a shard group → its place in out
	for _, d := range dirs {
		r, err := store.Open(d)
		if err == nil && r.Manifest.Shard != nil && r.Manifest.Plan != nil {
			if i, ok := plan[r.Manifest.Plan.Digest]; ok {
				out[i] = append(out[i], d)
				continue
			}
			plan[r.Manifest.Plan.Digest] = len(out)
		}
		out = append(out, []string{d})
	}
	return out
}

// UnfinishedError is a night with fewer finished trials than its plan
// has, refused because a partial night was not allowed.
type UnfinishedError struct {
	Dirs              []string
	Finished, Planned int
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("%s: %d of %d planned trials finished", strings.Join(e.Dirs, " "), e.Finished, e.Planned)
}

// Ready says whether a night's folders may go into the history: it
// refuses a night still being written (a live run.lock in any of its
// folders) and, unless allowPartial, one with fewer finished trials than
// planned (an *UnfinishedError); partial says the night is unfinished and
// was allowed.
func Ready(dirs []string, allowPartial bool) (partial bool, err error) {
	if w := store.Writers(dirs); len(w) > 0 {
		return false, fmt.Errorf("%s: still being written; add it when the run has finished", strings.Join(w, ", "))
	}
	var runs []*store.Run
	for _, d := range dirs {
		r, err := store.Open(d)
		if err != nil {
			return false, err
		}
		runs = append(runs, r)
	}
	finished, planned := store.Completion(runs)
	if finished >= planned {
		return false, nil
	}
	if !allowPartial {
		return false, &UnfinishedError{Dirs: dirs, Finished: finished, Planned: planned}
	}
	return true, nil
}

// ListTable is history list's table: one row a night, numbered from the
// oldest. A run id is never folded (it is what other commands take); the
// workload and the labels are for --wide, which leaves the others room.
func ListTable(runs []history.RunSummary) *texttable.Table {
	t := &texttable.Table{Columns: []texttable.Column{{Title: "NIGHT", Key: "night"}, {Title: "STARTED", Key: "started"},
		{Title: "RUN", Key: "run"}, {Title: "WORKLOAD", Key: "workload", Wrap: true, Wide: true}, {Title: "ARMS", Key: "arms", Wrap: true},
		{Title: "TRIALS", Key: "trials"}, {Title: "HOST", Key: "host", Wrap: true}, {Title: "LABELS", Key: "labels", Wide: true}}}
	started := startedLayout(runs)
	for i, r := range runs {
		host := r.Host.Name
		if r.Simulated {
			host += " (SIMULATED)"
		}
		if r.Partial {
			host += " (PARTIAL)"
		}
		var ls []string
		for k, v := range r.Labels {
			ls = append(ls, k+"="+v)
		}
		arms, labels := r.Arms, r.Labels // machines get [] and {}, never null
		if arms == nil {
			arms = []string{}
		}
		if labels == nil {
			labels = map[string]string{}
		}
		t.Add(texttable.Int(i+1), texttable.Cell{Text: r.Started.UTC().Format(started), Value: r.Started.UTC().Format(time.RFC3339)},
			texttable.Text(r.ID), texttable.Text(r.Workload), texttable.Cell{Text: strings.Join(r.Arms, ","), Value: arms}, texttable.Int(r.Trials),
			texttable.Text(host), texttable.Cell{Text: strings.Join(slices.Sorted(slices.Values(ls)), " "), Value: labels})
	}
	return t
}

// startedLayout is how ListTable shows the nights' starts: their dates
// when no two nights share one, else dates and times (UTC).
func startedLayout(runs []history.RunSummary) string {
	seen := map[string]bool{}
	for _, r := range runs {
		d := r.Started.UTC().Format(time.DateOnly)
		if seen[d] {
			return "2006-01-02 15:04"
		}
		seen[d] = true
	}
	return time.DateOnly
}
