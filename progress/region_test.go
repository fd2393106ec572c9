package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/ptytest"
	"github.com/qmlsab/qmlsab/internal/stormtest"
)

// With more trials running than rows, the region keeps to the screen:
// the rows of running trials that fit and the counts, which say how many
// are not shown; no row of a frame wraps or reaches the last column.
func TestLiveRegionIsCappedAtTheTerminalsHeight(t *testing.T) {
	var out stormtest.SyncBuffer
	r := newRegion(&out, func() (int, int, error) { return 60, 6, nil }, nil, nil)
	r.Plan(12)
	for i := range 12 {
		r.Update(Update{Arm: "E", Index: i + 1, Phase: "storm", Elapsed: 100 * time.Second, Total: 240 * time.Second,
			Virtual: true, Availability: 0.5, HasAvailability: true, Failovers: 3})
	}
	r.Close()
	v := ptytest.NewVT(60, 6)
	v.Write([]byte(out.String()))
	screen := v.Screen()
	if v.Scrolled() > 0 {
		t.Errorf("the region scrolled %d rows off the screen: %q", v.Scrolled(), v.Lines())
	}
	var rows []string
	for _, l := range screen {
		if l != "" {
			rows = append(rows, l)
		}
		if n := len([]rune(l)); n > 59 {
			t.Errorf("a %d-cell row on a 60-column screen: %q", n, l)
		}
	}
	if len(rows) != 5 || !strings.HasPrefix(rows[4], "0 of 12 trials finished; 12 running, 8 not shown") {
		t.Errorf("screen %q: want 4 running trials and the counts saying 8 are not shown", screen)
	}
	for _, l := range rows[:4] {
		if !strings.HasPrefix(l, "E#") || !strings.HasSuffix(l, "…") {
			t.Errorf("row %q: want a running trial's row cut to the width with …", l)
		}
	}
}

// Rows are cut by display width: a wide character takes two cells, a
// combining mark none, and no cut splits a character or leaves an escape
// sequence half-written (control characters never reach the terminal).
func TestCutKeepsToDisplayWidth(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"availability 0.389", 12, "availabilit…"},
		{"fits", 10, "fits"},
		{"臨時の腕 storm", 6, "臨時…"},
		{"cafe\u0301 latte", 5, "cafe\u0301…"},
	} {
		if got := cut(c.in, c.w); got != c.want {
			t.Errorf("cut(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
	}
	if got := sanitize("killed\x1b[2J by \x1b]0;title\a"); strings.ContainsAny(got, "\x1b\a") {
		t.Errorf("sanitize left controls: %q", got)
	}
	u := Update{Arm: "E\x1b[31m", Index: 1, Status: "invalid", Reason: "server said \x1b[2Jboom"}
	if l := finishedLine(u); strings.ContainsRune(l, 0x1b) {
		t.Errorf("a finished line carries an escape: %q", l)
	}
}
