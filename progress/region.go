package progress

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/store"
)

// defaultWidth and defaultHeight are assumed when a terminal does not
// say its size (some report 0×0).
const (
	defaultWidth  = 80
	defaultHeight = 24
)

// newline ends a row: a carriage return too, so that rows start in the
// first column even on a terminal whose driver does not add one.
const newline = "\r\n"

// redrawEvery is how often a live region redraws the running trials.
const redrawEvery = 250 * time.Millisecond

// region is a live region, the last rows of the terminal redrawn in
// place: one row per running trial and a row of counts. It never takes
// more rows than the terminal has less one (the row the cursor waits on), so
// moving the cursor up to redraw never reaches past the top of the
// screen, which would leave copies of the region in the scrollback; and
// each of its rows is cut to the terminal's width less one, so no row
// wraps (a wrapped row would take two rows the redraw does not know of)
// and none fills the last column (where terminals differ on when they
// wrap). Lines that stay, a finished trial's final figures and the log,
// are printed above the region, in full, and never redrawn.
//
// The terminal's size is read when the region starts and again on each
// SIGWINCH.
type region struct {
	w    io.Writer
	size func() (width, height int, err error)

	mu            sync.Mutex
	width, height int
	planned       int
	order         []string             // running trials, in the order they started
	running       map[string]Update    // by key
	finished      map[store.Status]int // finished trials by status
	above         []string             // lines to print above the region at the next draw
	partial       []byte               // the start of a log line not yet ended
	drawn         int                  // rows the region took at its last draw
	dirty         bool
	closed        bool

	stop, done chan struct{}
	once       sync.Once
	release    func() // stops the resize notifications
}

// newTerminalRegion is a live region on the terminal f, resized on
// SIGWINCH, redrawing the running trials every redrawEvery.
func newTerminalRegion(f *os.File) *region {
	tick := time.NewTicker(redrawEvery)
	r := newTerminalRegionTicking(f, tick.C)
	release := r.release
	r.release = func() { release(); tick.Stop() }
	return r
}

// newTerminalRegionTicking is a live region on the terminal f, resized on
// SIGWINCH, redrawing the running trials on each value from ticks.
func newTerminalRegionTicking(f *os.File, ticks <-chan time.Time) *region {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	r := newRegion(f, func() (int, int, error) { return terminalSize(f) }, winch, ticks)
	r.release = func() { signal.Stop(winch) }
	return r
}

// newRegion draws on w, sized by size, re-reading the size on each value
// from resized (nil: never), redrawing running trials that changed on
// each value from ticks (nil: only when a line that stays is printed, and
// at Close). A value taken from either channel is drawn before the next
// one is taken: once a second send on an unbuffered ticks returns, the
// first one's redraw has been written.
func newRegion(w io.Writer, size func() (int, int, error), resized <-chan os.Signal, ticks <-chan time.Time) *region {
	r := &region{w: w, size: size, running: map[string]Update{}, finished: map[store.Status]int{},
		stop: make(chan struct{}), done: make(chan struct{}), release: func() {}}
	r.readSize()
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				r.mu.Lock()
				r.drawLocked()
				r.finishLocked()
				r.mu.Unlock()
				return
			case <-resized:
				r.mu.Lock()
				r.readSize()
				r.drawLocked()
				r.mu.Unlock()
			case <-ticks:
				r.mu.Lock()
				if r.dirty {
					r.drawLocked()
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// readSize takes the terminal's size (the defaults when it says none).
func (r *region) readSize() {
	w, h, err := r.size()
	if err != nil || w <= 0 || h <= 0 {
		w, h = defaultWidth, defaultHeight
	}
	r.width, r.height = w, h
	r.dirty = true
}

func (r *region) Plan(trials int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.planned = trials
	r.dirty = true
}

func (r *region) Update(u Update) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	k := u.key()
	if u.Status != "" {
		if i := slices.Index(r.order, k); i >= 0 {
			r.order = slices.Delete(r.order, i, i+1)
		}
		delete(r.running, k)
		r.finished[u.Status]++
		r.above = append(r.above, finishedLine(u))
		r.drawLocked() // a line that stays goes out at once, in order with the log
		return
	}
	if _, ok := r.running[k]; !ok {
		r.order = append(r.order, k)
	}
	r.running[k] = u
	r.dirty = true
}

// Write prints log lines above the region: each complete line as it
// comes, in full; a line not yet ended waits for its end (or Close).
func (r *region) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.w.Write(p)
	}
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		r.above = append(r.above, strings.TrimSuffix(string(r.partial[:i]), "\r"))
		r.partial = r.partial[i+1:]
	}
	if len(r.above) > 0 {
		r.drawLocked()
	}
	return len(p), nil
}

// Close draws the final state and leaves it on the screen, above
// whatever is printed next.
func (r *region) Close() {
	r.once.Do(func() {
		r.release()
		close(r.stop)
		<-r.done
	})
}

// finishLocked leaves the last frame as ordinary lines: later output
// goes below it and nothing redraws it.
func (r *region) finishLocked() {
	if len(r.partial) > 0 {
		io.WriteString(r.w, string(r.partial)+newline)
		r.partial = nil
	}
	r.drawn = 0
	r.closed = true
}

// drawLocked moves to the region's first row, erases the region, prints
// the lines that stay, then the region anew, in one write.
func (r *region) drawLocked() {
	var b strings.Builder
	b.WriteString("\r")
	if r.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", r.drawn)
	}
	b.WriteString("\x1b[J") // erase from here to the end of the screen
	for _, l := range r.above {
		b.WriteString(l + newline)
	}
	r.above = r.above[:0]
	rows := r.rowsLocked()
	for _, l := range rows {
		b.WriteString(l + newline)
	}
	r.drawn = len(rows)
	r.dirty = false
	io.WriteString(r.w, b.String())
}

// rowsLocked is the region: a row per running trial, as many as fit,
// then the counts, each row cut to fit.
func (r *region) rowsLocked() []string {
	if r.planned == 0 && len(r.order) == 0 && len(r.finished) == 0 {
		return nil
	}
	maxRows := r.height - 1 // the cursor's row stays below the region
	if maxRows < 1 {
		return nil
	}
	room := r.width - 1
	shown := min(len(r.order), maxRows-1)
	rows := make([]string, 0, shown+1)
	for _, k := range r.order[:shown] {
		u := r.running[k]
		line := describe(u)
		if u.Total > 0 {
			line = bar(u.Elapsed, u.Total) + " " + line
		}
		rows = append(rows, cut(fmt.Sprintf("%-6s %s", k, line), room))
	}
	return append(rows, cut(r.countsLocked(len(r.order)-shown), room))
}

// countsLocked is the region's last row: trials finished, by status, and
// running (hidden of them not shown for want of rows).
func (r *region) countsLocked(hidden int) string {
	done := 0
	var statuses []store.Status
	for s, n := range r.finished {
		done += n
		statuses = append(statuses, s)
	}
	rank := func(s store.Status) int {
		switch s {
		case store.Valid:
			return 0
		case store.Invalid:
			return 1
		}
		return 2
	}
	slices.SortFunc(statuses, func(a, b store.Status) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	var b strings.Builder
	if r.planned > 0 {
		fmt.Fprintf(&b, "%d of %s finished", done, texttable.Count(r.planned, "trial"))
	} else {
		fmt.Fprintf(&b, "%s finished", texttable.Count(done, "trial"))
	}
	for i, s := range statuses {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, r.finished[s], sanitize(string(s)))
	}
	if n := len(r.order); n > 0 {
		fmt.Fprintf(&b, "; %d running", n)
		if hidden > 0 {
			fmt.Fprintf(&b, ", %d not shown", hidden)
		}
	}
	return b.String()
}

// bar is a 20-cell progress bar.
func bar(elapsed, total time.Duration) string {
	n := int(20 * elapsed / total)
	n = min(max(n, 0), 20)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}

// isTerminal reports whether f is a terminal (not a file, a pipe or
// /dev/null, which is a character device too).
func isTerminal(f *os.File) bool {
	ok := false
	withFd(f, func(fd int) { ok = term.IsTerminal(fd) })
	return ok
}

// terminalSize is the terminal f's width and height in cells.
func terminalSize(f *os.File) (width, height int, err error) {
	var sizeErr error
	if err := withFd(f, func(fd int) { width, height, sizeErr = term.GetSize(fd) }); err != nil {
		return 0, 0, err
	}
	return width, height, sizeErr
}

// withFd runs fn on f's descriptor without taking it out of the
// runtime's poller (os.File.Fd would make it blocking).
func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// sameFile reports whether a and b are one file (standard output and
// standard error on one terminal).
func sameFile(a, b *os.File) bool {
	sa, err1 := a.Stat()
	sb, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
