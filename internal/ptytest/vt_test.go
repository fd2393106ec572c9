package ptytest

import (
	"strings"
	"testing"
)

// The emulator itself: deferred wrap, a joined logical line, cursor-up
// clamped at the top, erase below, scrolling into the scrollback.
func TestVTInterpretsTheRegionsControls(t *testing.T) {
	v := NewVT(10, 3)
	v.Write([]byte("0123456789\r\nabc\n\rshort\r\n"))
	// "0123456789" fills the row exactly: the CR LF after it is no wrap.
	if got := strings.Join(v.Lines(), "|"); got != "0123456789|abc|short" {
		t.Errorf("lines %q", got)
	}
	v.Write([]byte("\x1b[9A\rX\x1b[J"))
	if got := strings.Join(v.Screen(), "|"); got != "X||" {
		t.Errorf("after cursor-up past the top and erase below: screen %q", got)
	}
	if got := strings.Join(v.Lines(), "|"); got != "0123456789|X" {
		t.Errorf("lines %q: the scrolled row is kept, the rest erased", got)
	}
	v = NewVT(4, 2)
	v.Write([]byte("abcdefghij"))
	if got := strings.Join(v.Lines(), "|"); got != "abcdefghij" || v.Scrolled() != 1 {
		t.Errorf("a wrapped line reads %q (%d scrolled rows), want it whole", got, v.Scrolled())
	}
	v.Write([]byte("\x1b[5m\a"))
	if len(v.Unknown) != 2 {
		t.Errorf("unknown controls %q: want both reported", v.Unknown)
	}
	v = NewVT(4, 2)
	v.Write([]byte("ab世界"))
	if got := strings.Join(v.Lines(), "|"); got != "ab世界" || v.Scrolled() != 0 || strings.Join(v.Screen(), "|") != "ab世|界" {
		t.Errorf("wide characters: lines %q, screen %q", got, v.Screen())
	}
}
