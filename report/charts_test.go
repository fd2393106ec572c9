package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/chartcheck"
	"github.com/qmlsab/qmlsab/internal/race"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// unitRanges are the values each unit a report chart's value axis names
// may plausibly hold on the model's M50 (32 GiB): resident memory in MiB
// or bytes under "GiB", or a percentage under the availability share, falls
// outside them.
var unitRanges = map[string]chartcheck.Range{
	unitOpsPerS:     {Min: 0, Max: 1e5},
	unitOpsPerTrial: {Min: 0, Max: 1e6, Whole: true},
	unitTickets:     {Min: 0, Max: 1e4, Whole: true},
	unitQueuedOps:   {Min: 0, Max: 1e6, Whole: true},
	unitGiB:         {Min: 0.01, Max: 1024},
	unitShare:       {Min: 0, Max: 1},
	unitPercent:     {Min: 0, Max: 100},
}

// checkReportCharts checks every chart of a report page: each series has
// data; on a value x axis every x (and every phase band and mark) lies in
// [0, length] seconds; on a category axis every point names a category;
// and every value fits the unit its axis names. It returns the charts.
func checkReportCharts(t *testing.T, page []byte, length float64) map[string]chartcheck.Chart {
	t.Helper()
	charts, err := chartcheck.Options(page, "var options = ")
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) == 0 {
		t.Fatal("the page embeds no chart")
	}
	for id, c := range charts {
		r, ok := unitRanges[c.YName]
		if !ok {
			t.Errorf("%s: value axis %q is not a known unit", id, c.YName)
			continue
		}
		if len(c.Series) == 0 {
			t.Errorf("%s: no series", id)
		}
		place := func(p chartcheck.Point) string {
			switch x := p.X.(type) {
			case float64:
				if c.XType != "value" || x < 0 || x > length {
					return fmt.Sprintf("x = %g outside the trial [0, %g] s", x, length)
				}
			case string:
				if !slices.Contains(c.XCategories, x) {
					return fmt.Sprintf("a point at %q, not one of the categories %v", x, c.XCategories)
				}
			case nil:
				if c.XType != "category" {
					return fmt.Sprintf("a bare value on a %q axis", c.XType)
				}
			}
			return ""
		}
		for _, s := range c.Series {
			for _, problem := range s.Problems(r, place) {
				t.Errorf("%s (an axis in %s): %s", id, c.YName, problem)
			}
			if s.Type == "bar" && len(s.Points) != len(c.XCategories) {
				t.Errorf("%s: bar series %q has %d bars for %d categories", id, s.Name, len(s.Points), len(c.XCategories))
			}
			for _, x := range s.MarkXs {
				if x < 0 || x > length {
					t.Errorf("%s: series %q marks x = %g outside the trial [0, %g] s", id, s.Name, x, length)
				}
			}
		}
	}
	return charts
}

// The report of a virtual run with `make run`'s workload (240 s trials):
// every chart holds data in the trial and in its unit, and each of the
// five time series has a point for every second of every trial. The arms
// are D and M (E's marks on master's formula), which keep a primary all
// along: E crash-loops, and a second without a primary has no primary
// figures to draw.
func TestReportChartsHoldEveryTrialSecond(t *testing.T) {
	if race.Enabled {
		t.Skip("under the race detector: a run of its own; the fixture's tests load series concurrently under the detector")
	}
	dir := filepath.Join(t.TempDir(), "run")
	sel, err := arms.Select([]string{"D", "M"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	length := spec.SpillToDisk.Phases.Total().Seconds()
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: 2, Workload: spec, Seed: 3, Clock: store.ClockVirtual,
		Sim: mongosim.SimOptions{CPUs: 8}, SimMemLimitMB: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, dir, run.Exec{ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	a := analyze(t, dir)
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644)
	charts := checkReportCharts(t, page, length)

	var trials []string
	for _, arm := range a.In.Arms {
		for _, tr := range a.In.Valid(arm) {
			trials = append(trials, fmt.Sprintf("%s#%d", arm, tr.Index))
		}
	}
	if len(trials) != 4 {
		t.Fatalf("valid trials %v, want D and M twice each", trials)
	}
	seconds := int(length)
	for _, id := range []string{"ts-tickets", "ts-queue", "ts-rss", "ts-availability", "ts-sheds", "ts-actor-kills"} {
		c, ok := charts[id]
		if !ok {
			t.Errorf("no chart %s", id)
			continue
		}
		// The server's sheds are M's (D's base build has no shedder), the
		// actor's kills D's: each chart has a line per trial of its arm.
		want := trials
		switch id {
		case "ts-sheds":
			want = slices.DeleteFunc(slices.Clone(trials), func(s string) bool { return strings.HasPrefix(s, "D#") })
		case "ts-actor-kills":
			want = slices.DeleteFunc(slices.Clone(trials), func(s string) bool { return !strings.HasPrefix(s, "D#") })
		}
		var names []string
		for _, s := range c.Series {
			names = append(names, s.Name)
			got := map[int]bool{}
			for _, p := range s.Present() {
				x, _ := p.X.(float64)
				if x != float64(int(x)) || got[int(x)] {
					t.Errorf("%s %s: x = %g is not a new whole second", id, s.Name, x)
				}
				got[int(x)] = true
			}
			// Rates too: the rate over (k, k+1] is second k's, and the
			// last sample is at the trial's end.
			if len(got) != seconds {
				t.Errorf("%s %s: %d points, want one per second of the %d s trial", id, s.Name, len(got), seconds)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: lines %v, want one per valid trial %v", id, names, want)
		}
		// The x axis is the trial, no more (ECharts' own nice bounds made
		// it 250 s for a 240 s trial).
		if c.XMin == nil || *c.XMin != 0 || c.XMax == nil || *c.XMax != length {
			t.Errorf("%s: x axis %v to %v, want 0 to the trial's %g s", id, c.XMin, c.XMax, length)
		}
		if len(c.Series) > 0 && len(c.Series[0].MarkXs) != 6 {
			t.Errorf("%s: phase bands %v, want warmup, storm and recovery", id, c.Series[0].MarkXs)
		} else if len(c.Series) > 0 && c.Series[0].MarkXs[5] != length {
			t.Errorf("%s: the recovery band ends at %g s, want the trial's end %g s", id, c.Series[0].MarkXs[5], length)
		}
	}
	sva := charts["sheds-vs-admissions"]
	var points int
	for _, s := range sva.Series {
		if s.Type == "scatter" {
			points += len(s.Present())
		}
	}
	if points != 3*len(trials) {
		t.Errorf("sheds-vs-admissions: %d trial points, want %d (server sheds, actor kills and admissions of each valid trial)", points, 3*len(trials))
	}
}

// The report of a wall-clock run: every chart holds data within the
// trial and in its unit, and no time series runs past the trial's end
// (the sampler runs a little before and after each trial).
func TestReportChartsOfAWallClockRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	dir := filepath.Join(t.TempDir(), "run")
	sel, err := arms.Select([]string{"D", "E"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 4 * time.Second, Recovery: 2 * time.Second}
	w.StormRate, w.CanaryRate = 15, 10
	w.ServerSelectionTimeout = 10 * time.Second
	spec.SpillToDisk = &w
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: 1, Workload: spec, Seed: 3, Clock: store.ClockWall,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 100}, SimMemLimitMB: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, dir, run.Exec{SampleInterval: 250 * time.Millisecond, ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	a := analyze(t, dir)
	page, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	length := w.Phases.Total().Seconds()
	charts := checkReportCharts(t, page, length)
	// A trial the busy host left without answers is invalid and not drawn.
	var valid []string
	for _, arm := range a.In.Arms {
		for _, tr := range a.In.Valid(arm) {
			valid = append(valid, fmt.Sprintf("%s#%d", arm, tr.Index))
		}
	}
	for _, id := range []string{"ts-tickets", "ts-queue", "ts-rss", "ts-availability", "ts-sheds", "ts-actor-kills"} {
		c := charts[id] // a chart no trial has data for is left out, with a note
		// One line per valid trial with data; a trial without says so in a
		// note (D's server reports no sheds, and in a short trial its actor
		// may kill nothing).
		for _, trial := range valid {
			// The note lists every trial without data: "no data for D#1, E#1 (…)".
			noted := regexp.MustCompile(`no data for [^(]*\b` + regexp.QuoteMeta(trial) + `\b`)
			if !slices.ContainsFunc(c.Series, func(s chartcheck.Series) bool { return s.Name == trial }) && !noted.MatchString(string(page)) {
				t.Errorf("%s: no line for %s and no note saying why", id, trial)
			}
		}
		for _, s := range c.Series {
			if n := len(s.Present()); n > int(length) {
				t.Errorf("%s %s: %d points in a %g s trial: at most one per second", id, s.Name, n, length)
			}
		}
	}
}
