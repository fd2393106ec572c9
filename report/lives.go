package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// causeText is how a primary's life ended, for people.
var causeText = map[string]string{
	store.LifeCrashed:     "crashed (OOM kill or crash)",
	store.LifeSteppedDown: "stepped down",
	store.LifeTrialEnded:  "primary to the trial's end",
}

// queueText names a place of tracked memory (store.Queues) for people.
var queueText = map[string]string{
	store.QueueLowPriority:    "low-priority queue",
	store.QueueNormalPriority: "normal-priority queue",
	store.QueueRunning:        "running ops",
	store.QueueIdleCursors:    "idle cursors",
}

// livesSection is a table per valid trial of its primaries' lives (store.
// Trial.PrimaryLives): when each began and ended, how, its low-priority
// admissions per second, and the place holding the most tracked memory
// at its last sample. Nil when no trial recorded its lives (a run
// written before they were).
func livesSection(a *Analysis) *section {
	var b strings.Builder
	found := false
	for _, arm := range a.In.Arms {
		for _, t := range a.In.Valid(arm) {
			if len(t.PrimaryLives) == 0 {
				continue
			}
			found = true
			fmt.Fprintf(&b, `<h3 id="lives-%s-%d">%s#%d</h3>`, template.HTMLEscapeString(dirName(arm)), t.Index, template.HTMLEscapeString(arm), t.Index)
			b.WriteString(`<table class="data"><tr><th>member</th><th>from (s)</th><th>to (s)</th><th>how it ended</th><th>admissions/s</th><th>most tracked memory at its end</th>`)
			for _, q := range store.Queues {
				fmt.Fprintf(&b, "<th>%s</th>", queueText[q])
			}
			b.WriteString("</tr>")
			for _, l := range t.PrimaryLives {
				member := l.Member
				if l.Shard != "" {
					member = l.Shard + " " + member
				}
				adm := `<span title="sampled primary once: no interval to rate">–</span>`
				if l.AdmissionsPerS != nil {
					adm = metric.Number(*l.AdmissionsPerS)
				}
				heaviest := `<span title="no $currentOp census at its last sample (diagnostic data)">–</span>`
				switch {
				case l.HeaviestQueue != "":
					heaviest = fmt.Sprintf("%s (%s)", queueText[l.HeaviestQueue], units.HumanBytes(float64(l.TrackedAtEnd[l.HeaviestQueue])))
				case l.TrackedAtEnd != nil:
					heaviest = "none held tracked memory"
				}
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%.0f</td><td>%.0f</td><td>%s</td><td>%s</td><td>%s</td>", template.HTMLEscapeString(member),
					l.Start.Sub(t.Started).Seconds(), l.End.Sub(t.Started).Seconds(), template.HTMLEscapeString(causeOf(l.Cause)), adm, template.HTMLEscapeString(heaviest))
				for _, q := range store.Queues {
					if v, ok := l.TrackedAtEnd[q]; ok {
						fmt.Fprintf(&b, "<td>%s</td>", units.HumanBytes(float64(v)))
					} else {
						b.WriteString("<td>–</td>")
					}
				}
				b.WriteString("</tr>")
			}
			b.WriteString("</table>")
		}
	}
	if !found {
		return nil
	}
	return &section{ID: "lives", Title: "Primary lives: one table per trial",
		Note: "Each row is one member process's time as primary, from the first to the last sample that saw it primary (seconds into the trial). " +
			"It ended when the process died (crashed: an OOM kill or a crash; the member went down or came back as a new process), when it stepped down, or with the trial. " +
			"Admissions/s are the low-priority queue's over the life. The last columns are the tracked memory ($currentOp's inUseTrackedMemBytes) " +
			"by where it was at the life's last sample: the queue that held the most is what a shedder had to reach before the end.",
		Table: template.HTML(b.String())}
}

// causeOf is a life's ending for people (the stored word for one this
// report does not know).
func causeOf(c string) string {
	if t, ok := causeText[c]; ok {
		return t
	}
	return c
}

// dirName is an arm's name made safe for an HTML id.
func dirName(arm string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, arm)
}
