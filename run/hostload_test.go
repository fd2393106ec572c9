package run

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/race"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// wallAttempts bounds the retries of a wall-clock test run.
const wallAttempts = 3

// executeWhileTheHostKeepsUp runs a wall-clock experiment into a fresh
// folder under dir and returns the run, retrying (up to wallAttempts)
// when the machine rather than the server decided the outcome: a trial
// marked "host saturated", or one whose server never came under the
// memory pressure the test is about (pressured reports why not). An
// in-process wire set is the simulated server running on this machine:
// on a busy 2-core machine it can fall behind real time, answer too few
// samples, or admit too few queries for memory to climb. Those trials
// measure the host; a test of the server's mechanisms retries them. When
// every attempt was starved the test is skipped, saying why: its subject,
// the simulated server's mechanisms in real time, was not measured, and
// a failure would report the machine's load, not a defect. (The harness
// itself detects starvation: it marks such trials invalid, naming it.)
func executeWhileTheHostKeepsUp(t *testing.T, cfg trialRun, dir string, pressured func(r *store.Run) string) *store.Run {
	t.Helper()
	var why []string
	for attempt := 1; attempt <= wallAttempts; attempt++ {
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("attempt-%d", attempt))
		out, err := cfg.run(t, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := out.Run
		reason := stormtest.Starved(r.Manifest)
		if reason == "" && pressured != nil {
			reason = pressured(r)
		}
		if reason == "" {
			return r
		}
		why = append(why, reason)
		t.Logf("attempt %d measured the busy host, not the server: %s", attempt, reason)
	}
	t.Skipf("the host starved all %d wall-clock attempts, so the server was not measured:\n  %s", wallAttempts, strings.Join(why, "\n  "))
	return nil
}

// reachedRSS is a pressured check: every listed arm's primary reached
// share of the memory limit (limitMB) during the storm, so its actor or
// shedder had something to act on.
func reachedRSS(limitMB int64, share float64, armNames ...string) func(r *store.Run) string {
	return func(r *store.Run) string {
		for _, name := range armNames {
			for _, tr := range r.Trials[name] {
				peak, ok := tr.Metrics[metric.RSSPeakBytes]
				if want := share * float64(limitMB<<20); !ok || peak < want {
					return fmt.Sprintf("%s#%d: peak resident memory %.1f GiB, under the %.0f %% (%.1f GiB) the test needs",
						name, tr.Index, peak/(1<<30), 100*share, want/(1<<30))
				}
			}
		}
		return ""
	}
}

// onlyUnderRace skips a real-time test of the orchestrator's concurrency
// unless the race detector is on: `make race` runs it there (the Makefile
// names it), and a second run without the detector would repeat the same
// trials for nothing.
func onlyUnderRace(t *testing.T) {
	t.Helper()
	if !race.Enabled {
		t.Skip("runs under the race detector (make race names it): without it the same trials would only be repeated")
	}
}
