// Package ptytest lets a test show a program a terminal and read what
// the terminal would show: a pseudo-terminal of a chosen size (PTY) and a
// small emulator (VT) that interprets the program's output into a screen
// and a scrollback.
package ptytest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// VT is a small terminal emulator for tests: it interprets what a
// program wrote to a terminal as an xterm-like terminal of a fixed size
// would, keeping the rows that scroll off the top as scrollback. It knows
// the controls the live region uses (carriage return, line feed, cursor
// movement, erasing) and autowrap with xterm's deferred wrap (a
// character written in the last column leaves the cursor there; the
// next printable character wraps). Anything else is recorded in Unknown,
// so that a test sees output it cannot judge instead of passing over it.
// (The emulators in Go's module ecosystem are full TUI toolkits with a
// dozen modules of dependencies; this is the part the tests need.)
type VT struct {
	width, height int
	rows          []vtRow // the screen
	scrollback    []vtRow
	x, y          int
	pendingWrap   bool
	Unknown       []string
}

// vtRow is one row of cells; wrapped says it continues the row above
// (an autowrap, not a line feed).
type vtRow struct {
	cells   []rune // width cells; 0 is the right half of a wide character
	wrapped bool
}

// NewVT is an emulator of a width×height terminal, its screen blank.
func NewVT(width, height int) *VT {
	t := &VT{width: width, height: height}
	for range height {
		t.rows = append(t.rows, t.blankRow())
	}
	return t
}

func (t *VT) blankRow() vtRow {
	cells := make([]rune, t.width)
	for i := range cells {
		cells[i] = ' '
	}
	return vtRow{cells: cells}
}

// Write interprets b.
func (t *VT) Write(b []byte) {
	for len(b) > 0 {
		switch c := b[0]; {
		case c == 0x1b:
			n := t.escape(b)
			b = b[n:]
		case c == '\r':
			t.x, t.pendingWrap = 0, false
			b = b[1:]
		case c == '\n':
			t.lineFeed()
			b = b[1:]
		case c == '\b':
			t.x, t.pendingWrap = max(t.x-1, 0), false
			b = b[1:]
		case c < 0x20 || c == 0x7f:
			t.Unknown = append(t.Unknown, fmt.Sprintf("control %#x", c))
			b = b[1:]
		default:
			r, n := utf8.DecodeRune(b)
			t.print(r)
			b = b[n:]
		}
	}
}

// escape interprets the escape sequence at the start of b and returns
// its length.
func (t *VT) escape(b []byte) int {
	if len(b) < 2 || b[1] != '[' {
		t.Unknown = append(t.Unknown, fmt.Sprintf("escape %q", b[:min(len(b), 2)]))
		return min(len(b), 2)
	}
	end := 2
	for end < len(b) && (b[end] < 0x40 || b[end] > 0x7e) {
		end++
	}
	if end == len(b) {
		t.Unknown = append(t.Unknown, fmt.Sprintf("unterminated CSI %q", b))
		return len(b)
	}
	params, final := string(b[2:end]), b[end]
	n := 1
	if params != "" {
		v, err := strconv.Atoi(params)
		if err != nil {
			t.Unknown = append(t.Unknown, fmt.Sprintf("CSI %q", b[:end+1]))
			return end + 1
		}
		n = v
	}
	switch final {
	case 'A':
		t.y = max(t.y-max(n, 1), 0)
	case 'B':
		t.y = min(t.y+max(n, 1), t.height-1)
	case 'C':
		t.x = min(t.x+max(n, 1), t.width-1)
	case 'D':
		t.x = max(t.x-max(n, 1), 0)
	case 'K': // erase in line
		if params == "" {
			n = 0
		}
		from, to := t.x, t.width
		switch n {
		case 1:
			from, to = 0, t.x+1
		case 2:
			from = 0
		}
		for i := from; i < to; i++ {
			t.rows[t.y].cells[i] = ' '
		}
	case 'J': // erase in display
		if params == "" {
			n = 0
		}
		switch n {
		case 0:
			for i := t.x; i < t.width; i++ {
				t.rows[t.y].cells[i] = ' '
			}
			for y := t.y + 1; y < t.height; y++ {
				t.rows[y] = t.blankRow()
			}
		case 2:
			for y := range t.rows {
				t.rows[y] = t.blankRow()
			}
		default:
			t.Unknown = append(t.Unknown, fmt.Sprintf("CSI %q", b[:end+1]))
		}
	default:
		t.Unknown = append(t.Unknown, fmt.Sprintf("CSI %q", b[:end+1]))
	}
	t.pendingWrap = false
	return end + 1
}

// lineFeed moves down a row, scrolling the top row into the scrollback
// at the bottom of the screen.
func (t *VT) lineFeed() {
	t.pendingWrap = false
	if t.y < t.height-1 {
		t.y++
		return
	}
	t.scrollback = append(t.scrollback, t.rows[0])
	t.rows = append(t.rows[1:], t.blankRow())
}

func (t *VT) print(r rune) {
	w := runewidth.RuneWidth(r)
	if w == 0 {
		return // a combining mark joins the cell before it
	}
	if t.pendingWrap || t.x+w > t.width {
		t.x = 0
		t.lineFeed()
		t.rows[t.y].wrapped = true
	}
	t.rows[t.y].cells[t.x] = r
	if w == 2 {
		t.rows[t.y].cells[t.x+1] = 0
	}
	t.x += w
	if t.x >= t.width {
		t.x, t.pendingWrap = t.width-1, true
	}
}

func (row vtRow) text() string {
	var b strings.Builder
	for _, c := range row.cells {
		if c != 0 {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Lines are the logical lines of the scrollback and the screen, oldest
// first: rows an autowrap continued joined into one, trailing blanks
// trimmed, blank lines left out.
func (t *VT) Lines() []string {
	var out []string
	cur, open := "", false
	flush := func() {
		if s := strings.TrimRight(cur, " "); open && s != "" {
			out = append(out, s)
		}
		cur, open = "", false
	}
	for _, row := range append(append([]vtRow{}, t.scrollback...), t.rows...) {
		if !row.wrapped {
			flush()
		}
		cur += row.text()
		open = true
	}
	flush()
	return out
}

// Screen is the visible rows, trailing blanks trimmed.
func (t *VT) Screen() []string {
	var out []string
	for _, row := range t.rows {
		out = append(out, strings.TrimRight(row.text(), " "))
	}
	return out
}

// Scrolled is how many rows have scrolled off the top of the screen.
func (t *VT) Scrolled() int { return len(t.scrollback) }
