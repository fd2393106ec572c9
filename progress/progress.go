// Package progress shows a running experiment: on a terminal, a live
// region at the bottom of the screen that fits the terminal and is
// redrawn in place, with the lines that stay (a trial's final figures,
// log lines) printed above it; on a file or a pipe, plain lines (one per
// trial start, phase change and finish), so logs of a nightly run stay
// readable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Update is a trial's state. A finished trial has a Status; its update
// carries the trial's final figures (those of its metrics), not the
// last ones seen while it ran.
type Update struct {
	Arm   string
	Index int
	// Phase is the trial's phase, or the stage around its phases
	// (provisioning, loading, merge ops, writing).
	Phase          store.Phase
	Elapsed, Total time.Duration // on the trial's clock (model time when Virtual)
	Virtual        bool
	// Availability so far (the final one when Status is set), when any
	// canary has finished.
	Availability    float64
	HasAvailability bool
	Failovers       int
	// HasFigures says a finished trial's update carries its final
	// availability and failovers (a trial that measured nothing has none).
	HasFigures bool
	Status     store.Status
	Reason     string
}

func (u Update) key() string { return fmt.Sprintf("%s#%d", sanitize(u.Arm), u.Index) }

// Sink receives updates from concurrent trials.
type Sink interface {
	// Plan says how many trials the run will run, before the first update.
	Plan(trials int)
	Update(Update)
	// Close draws the final state.
	Close()
}

// For is where a run shows its progress on out, and the writer its log
// (log, standard error) must go through while the run is live: on a
// terminal, a live region, and the region itself as the log's writer
// when log is the same terminal, so log lines print above the region
// instead of between its redraws; elsewhere, plain lines and log as it is.
// Close the sink to release the terminal.
func For(out, log io.Writer) (Sink, io.Writer) {
	f, ok := out.(*os.File)
	if !ok || !isTerminal(f) {
		return Lines(out), log
	}
	r := newTerminalRegion(f)
	if lf, ok := log.(*os.File); ok && sameFile(f, lf) {
		return r, r
	}
	return r, log
}

// Lines writes a line when a trial starts, changes phase, and finishes.
func Lines(w io.Writer) Sink { return &lines{w: w, last: map[string]string{}} }

type lines struct {
	mu   sync.Mutex
	w    io.Writer
	last map[string]string
}

func (l *lines) Plan(int) {}

func (l *lines) Update(u Update) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := u.key()
	prev, seen := l.last[k]
	switch {
	case u.Status != "":
		fmt.Fprintln(l.w, finishedLine(u))
		l.last[k] = "done"
	case !seen:
		fmt.Fprintf(l.w, "trial %s: started (%s)\n", k, sanitize(string(u.Phase)))
		l.last[k] = string(u.Phase)
	case prev != string(u.Phase):
		fmt.Fprintf(l.w, "trial %s: %s\n", k, describe(u))
		l.last[k] = string(u.Phase)
	}
}

func (l *lines) Close() {}

// finishedLine is a finished trial's last line: its status, its final
// figures when it has them, and why it is not valid when it is not.
func finishedLine(u Update) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trial %s: %s", u.key(), sanitize(string(u.Status)))
	if u.HasFigures {
		b.WriteString(figures(u))
	}
	if u.Reason != "" {
		b.WriteString("; " + sanitize(u.Reason))
	}
	return b.String()
}

// figures is ", availability A, failovers F" (availability only when
// some canary finished).
func figures(u Update) string {
	var b strings.Builder
	if u.HasAvailability {
		fmt.Fprintf(&b, ", availability %.3f", u.Availability)
	}
	fmt.Fprintf(&b, ", failovers %d", u.Failovers)
	return b.String()
}

// describe is a running trial's state in words.
func describe(u Update) string {
	var b strings.Builder
	b.WriteString(sanitize(string(u.Phase)))
	if u.Total > 0 {
		unit := "s"
		if u.Virtual {
			unit = " model-s"
		}
		fmt.Fprintf(&b, " %.0f/%.0f%s", u.Elapsed.Seconds(), u.Total.Seconds(), unit)
	}
	b.WriteString(figures(u))
	return b.String()
}
