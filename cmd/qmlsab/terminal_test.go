//go:build linux

package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/ptytest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// A 45-trial run on an 80×24 terminal (standard output and error on
// it), read back through a terminal emulator: the live region leaves no
// frame behind and repeats nothing in the scrollback, and each trial's
// last line carries the figures its row of the table shows.
func TestRunOnATerminalLeavesEachTrialsFinalLineOnce(t *testing.T) {
	p := ptytest.Open(t, 80, 24)
	dir := filepath.Join(t.TempDir(), "run")
	app := newApp()
	app.Writer, app.ErrWriter = p.TTY, p.TTY
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run([]string{"qmlsab", "run", "--arms", "D,E,F", "-n", "15", "--profile", "quick", "--verbose", "--out", dir})
	out := p.Output(t)
	var ec cli.ExitCoder
	if err != nil && !(errors.As(err, &ec) && ec.ExitCode() == 0) {
		t.Fatalf("run: %v\n%s", err, out)
	}
	v := ptytest.NewVT(80, 24)
	v.Write(out)
	if len(v.Unknown) > 0 {
		t.Errorf("output a terminal emulator cannot interpret: %q", v.Unknown)
	}
	lines := v.Lines()
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Errorf("line %q is on the terminal twice", l)
		}
		seen[l] = true
		if isFrameRow(l) {
			t.Errorf("a running trial's row was left behind: %q", l)
		}
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E", "F"} {
		for _, tr := range r.Trials[arm] {
			want := fmt.Sprintf("trial %s#%d: valid, availability %.3f, failovers %.0f", arm, tr.Index,
				tr.Metrics[metric.Availability], tr.Metrics[metric.Failovers])
			if !seen[want] {
				t.Errorf("no line %q (the trial's final figures, as its table row has them)", want)
			}
		}
	}
	if !seen["45 of 45 trials finished: 45 valid"] {
		t.Errorf("the region's last frame does not say how the run ended")
	}
	if t.Failed() {
		t.Logf("the terminal:\n%s", strings.Join(lines, "\n"))
	}
}

// isFrameRow reports whether a terminal line is a running trial's row of
// the live region: D#1, E#2 or F#3 first, then its progress bar ("[").
func isFrameRow(l string) bool {
	f := strings.Fields(l)
	return len(f) >= 2 && len(f[0]) > 2 && strings.ContainsRune("DEF", rune(f[0][0])) && f[0][1] == '#' && isDigits(f[0][2:]) &&
		strings.HasPrefix(l, f[0]) && strings.HasPrefix(f[1], "[")
}
