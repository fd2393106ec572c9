//go:build linux

package progress

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/ptytest"
	"github.com/qmlsab/qmlsab/store"
)

// trialFigures are trial i's final figures in the fake run.
func trialFigures(i int) Update {
	u := Update{Availability: 0.3 + float64(i)/100, HasAvailability: true, Failovers: 10 + i%7, HasFigures: true, Status: "valid"}
	if i%9 == 4 {
		u.Status, u.Reason = "invalid", fmt.Sprintf("harness: the trial's window is unknown (trial %d)", i)
	}
	return u
}

// fakeRun drives a sink as a run of trials arms × n, parallel at a time,
// does: each trial provisions, goes through its phases with mid-trial
// figures, and finishes with its final ones; every fifth trial logs an
// ERROR longer than a terminal row through the log writer. redraw is
// called after each phase change and mid-storm, and returns once the
// region has redrawn what it was told.
func fakeRun(sink Sink, logw io.Writer, armNames []string, n, parallel int, redraw func()) (logged []string) {
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // a fixed line the test can look for
		}
		return a
	}}))
	type trial struct {
		arm   string
		index int
		i     int
	}
	var trials []trial
	for k := range n {
		for _, a := range armNames {
			trials = append(trials, trial{a, k + 1, len(trials)})
		}
	}
	sink.Plan(len(trials))
	var mu sync.Mutex
	queue := make(chan trial)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for tr := range queue {
				total := 240 * time.Second
				sink.Update(Update{Arm: tr.arm, Index: tr.index, Phase: "provisioning"})
				for s := 0; s <= 240; s += 10 {
					phase := store.PhaseWarmup
					if s >= 30 {
						phase = store.PhaseStorm
					}
					if s >= 180 {
						phase = store.PhaseRecovery
					}
					sink.Update(Update{Arm: tr.arm, Index: tr.index, Phase: phase, Elapsed: time.Duration(s) * time.Second, Total: total,
						Virtual: true, Availability: 0.255, HasAvailability: s > 30, Failovers: s / 30})
					if s%60 == 0 || s == 30 || s == 180 {
						redraw()
					}
				}
				if tr.i%5 == 0 {
					msg := fmt.Sprintf("trial %s#%d: the storm's client lost its connection to the primary while the member restarted after an OOM kill", tr.arm, tr.index)
					log.Error(msg, "trial", tr.i)
					mu.Lock()
					logged = append(logged, fmt.Sprintf("level=ERROR msg=%q trial=%d", msg, tr.i))
					mu.Unlock()
				}
				final := trialFigures(tr.i)
				final.Arm, final.Index = tr.arm, tr.index
				sink.Update(final)
			}
		})
	}
	for _, tr := range trials {
		queue <- tr
	}
	close(queue)
	wg.Wait()
	sink.Close()
	return logged
}

// The acceptance test of the live region: a 45-trial run, four trials at
// a time, with ERROR lines logged to the same terminal, drawn on an
// 80×24 pseudo-terminal and read back through a terminal emulator. The
// scrollback and screen hold each finished trial's final line once, each
// log line once and whole, above the region; no row of any frame is
// left behind, repeated, or cut other than by the region's own "…"; the
// last frame says how the run ended.
func TestLiveRegionFitsAnEightyByTwentyFourTerminal(t *testing.T) {
	p := ptytest.Open(t, 80, 24)
	sink, logw := For(p.TTY, p.TTY)
	if _, ok := sink.(*region); !ok {
		t.Fatalf("For a terminal gave %T, want the live region", sink)
	}
	if logw != io.Writer(sink.(*region)) {
		t.Fatalf("the log on the same terminal does not go through the region")
	}
	sink.Close() // nothing planned: it draws nothing
	// The same region, its redraws told when to happen rather than timed,
	// so that the frames drawn mid-trial are there however busy the host.
	ticks := make(chan time.Time)
	r := newTerminalRegionTicking(p.TTY, ticks)
	var redraws atomic.Int64
	redraw := func() {
		ticks <- time.Time{}
		ticks <- time.Time{} // taken once the first tick's frame is drawn
		redraws.Add(1)
	}
	armNames := []string{"D", "E", "F"}
	logged := fakeRun(r, r, armNames, 15, 4, redraw)
	out := p.Output(t)
	// Frames were drawn mid-trial: a running trial's row, with its bar,
	// for every trial (the region rows of each are redrawn in its storm).
	for i := range 45 {
		row := fmt.Sprintf("%-6s [", fmt.Sprintf("%s#%d", armNames[i%3], i/3+1))
		if !bytes.Contains(out, []byte(row)) {
			t.Errorf("no frame drawn while trial %s ran (%d redraws asked for)", row[:6], redraws.Load())
		}
	}

	v := ptytest.NewVT(80, 24)
	v.Write(out)
	if len(v.Unknown) > 0 {
		t.Errorf("output the emulator cannot interpret: %q", v.Unknown)
	}
	lines := v.Lines()
	want := map[string]int{} // each line that stays, and where it is
	for i := range 45 {
		u := trialFigures(i)
		u.Arm, u.Index = armNames[i%3], i/3+1
		want[finishedLine(u)] = -1
	}
	for _, l := range logged {
		want[l] = -1
	}
	counts := "45 of 45 trials finished: 40 valid, 5 invalid"
	seen := map[string]int{}
	for i, l := range lines {
		seen[l]++
		if seen[l] == 2 {
			t.Errorf("line %q is on the terminal twice", l)
		}
		if _, ok := want[l]; ok {
			want[l] = i
			continue
		}
		if l != counts {
			t.Errorf("line %q: neither a finished trial, nor a log line, nor the last frame (a frame's row left behind, or cut)", l)
		}
	}
	for l, at := range want {
		if at < 0 {
			t.Errorf("line missing (or overwritten): %q", l)
		}
	}
	if last := lines[len(lines)-1]; last != counts {
		t.Errorf("the last line is %q, want the final counts %q", last, counts)
	}
	for _, l := range v.Screen() {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("a %d-cell row on an 80-column screen: %q", n, l)
		}
	}
	if t.Failed() || os.Getenv("SHOW") != "" {
		t.Logf("terminal lines:\n%s", strings.Join(lines, "\n"))
	}
}

// On SIGWINCH the region reads the terminal's new size and draws to it.
func TestLiveRegionFollowsTheTerminalsSize(t *testing.T) {
	p := ptytest.Open(t, 100, 30)
	sink, _ := For(p.TTY, p.TTY)
	r := sink.(*region)
	r.Plan(1)
	r.Update(Update{Arm: "D", Index: 1, Phase: "storm", Elapsed: 100 * time.Second, Total: 240 * time.Second, Virtual: true,
		Availability: 0.5, HasAvailability: true, Failovers: 3})
	p.Resize(t, 30, 10)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		w, h := r.width, r.height
		r.mu.Unlock()
		if w == 30 && h == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGWINCH the region is %d×%d, want 30×10", w, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Close()
	out := p.Output(t)
	// The last frame, drawn after the resize, fits 30 columns.
	last := out[bytes.LastIndex(out, []byte("\x1b[J"))+3:]
	for _, l := range strings.Split(strings.TrimRight(string(last), "\r\n"), "\n") {
		if n := len([]rune(strings.TrimRight(l, "\r"))); n > 29 {
			t.Errorf("a %d-cell row after the terminal became 30 columns wide: %q", n, l)
		}
	}
}
