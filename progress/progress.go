// Package progress shows a running experiment: a live table redrawn in
// place when the output is a terminal, and plain lines (one per trial
// start, phase change and finish) when it is a file or a pipe, so logs of
// a nightly run stay readable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Update is a trial's state. A finished trial has a Status.
type Update struct {
	Arm   string
	Index int
	// Phase is provisioning, loading, warmup, storm, recovery or writing.
	Phase          string
	Elapsed, Total time.Duration // on the trial's clock (model time when Virtual)
	Virtual        bool
	// Availability so far, when any canary has finished.
	Availability    float64
	HasAvailability bool
	Failovers       int
	Status, Reason  string
}

func (u Update) key() string { return fmt.Sprintf("%s#%d", u.Arm, u.Index) }

// Sink receives updates from concurrent trials.
type Sink interface {
	Update(Update)
	// Close draws the final state.
	Close()
}

// For is Terminal when w is a terminal, Lines otherwise.
func For(w io.Writer) Sink {
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return Terminal(w, 250*time.Millisecond)
		}
	}
	return Lines(w)
}

// Lines writes a line when a trial starts, changes phase, and finishes.
func Lines(w io.Writer) Sink { return &lines{w: w, last: map[string]string{}} }

type lines struct {
	mu   sync.Mutex
	w    io.Writer
	last map[string]string
}

func (l *lines) Update(u Update) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := u.key()
	prev, seen := l.last[k]
	switch {
	case u.Status != "":
		fmt.Fprintf(l.w, "trial %s: %s %s\n", k, u.Status, u.Reason)
		l.last[k] = "done"
	case !seen:
		fmt.Fprintf(l.w, "trial %s: started (%s)\n", k, u.Phase)
		l.last[k] = u.Phase
	case prev != u.Phase:
		fmt.Fprintf(l.w, "trial %s: %s\n", k, describe(u))
		l.last[k] = u.Phase
	}
}

func (l *lines) Close() {}

// describe is a trial's state in words.
func describe(u Update) string {
	var b strings.Builder
	b.WriteString(u.Phase)
	if u.Total > 0 {
		unit := "s"
		if u.Virtual {
			unit = " model-s"
		}
		fmt.Fprintf(&b, " %.0f/%.0f%s", u.Elapsed.Seconds(), u.Total.Seconds(), unit)
	}
	if u.HasAvailability {
		fmt.Fprintf(&b, ", availability %.3f", u.Availability)
	}
	fmt.Fprintf(&b, ", failovers %d", u.Failovers)
	return b.String()
}

// Terminal redraws one line per trial in place every interval.
func Terminal(w io.Writer, every time.Duration) Sink {
	t := &terminal{w: w, state: map[string]Update{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				t.draw()
				return
			case <-tick.C:
				t.draw()
			}
		}
	}()
	return t
}

type terminal struct {
	mu    sync.Mutex
	w     io.Writer
	order []string
	state map[string]Update
	drawn int // lines drawn last time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (t *terminal) Update(u Update) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := u.key()
	if _, ok := t.state[k]; !ok {
		t.order = append(t.order, k)
	}
	t.state[k] = u
}

func (t *terminal) Close() {
	t.once.Do(func() { close(t.stop); <-t.done })
}

func (t *terminal) draw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	if t.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", t.drawn) // back to the table's first line
	}
	for _, k := range t.order {
		u := t.state[k]
		line := describe(u)
		if u.Status != "" {
			line = strings.TrimSpace(u.Status + " " + u.Reason)
		} else if u.Total > 0 {
			line = bar(u.Elapsed, u.Total) + " " + line
		}
		fmt.Fprintf(&b, "\x1b[2K%-6s %s\n", k, line)
	}
	t.drawn = len(t.order)
	io.WriteString(t.w, b.String())
}

// bar is a 20-cell progress bar.
func bar(elapsed, total time.Duration) string {
	n := int(20 * elapsed / total)
	n = min(max(n, 0), 20)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}
