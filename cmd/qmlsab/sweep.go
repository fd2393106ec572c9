package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/outputfile"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/sweep"
	"github.com/qmlsab/qmlsab/workload"
)

// sweepCommand runs the virtual-time model over a grid of one or two
// settings of the sweep namespace and writes sweep.json and sweep.html.
func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:  "sweep",
		Usage: "run the model in virtual time over a grid of one or two settings (host.*, hw.*, workload.*, param.*, killop.*) and draw each arm's outcome (a simulation)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arms", Value: "D,E,F", Usage: "comma-separated arm names"},
			armsFileFlag,
			&cli.GenericFlag{Name: "vary", Value: &repeated{}, Usage: "a setting and its grid, `NAME=FROM:TO:STEP` or NAME=V1,V2,... (once for a line, twice for a heatmap; --list shows the names)"},
			&cli.GenericFlag{Name: "set", Value: &repeated{}, Usage: "hold a setting at one value in every cell, `NAME=VALUE` (repeatable; the marked defaults include it)"},
			&cli.IntFlag{Name: "n", Value: 3, Usage: "trials (seeds) per cell and arm"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "first seed; cells run seeds --seed … --seed+n−1"},
			&cli.StringFlag{Name: "profile", Value: "default", Usage: "phase lengths: quick, default or long"},
			&cli.StringFlag{Name: "workload", Value: workload.KindSpillToDisk, Usage: "a spill_to_disk workload: the built-in or a workload YAML `FILE`"},
			&cli.StringFlag{Name: "out", Usage: "folder for sweep.json and sweep.html (default: results/sweep-<timestamp>-<id>); files there are written over only if an earlier sweep wrote them"},
			&cli.IntFlag{Name: "parallel", Usage: "trials at once (default: every CPU)"},
			&cli.BoolFlag{Name: "list", Usage: "list the names --vary takes, with their defaults, and exit"},
			wideFlag(),
			&cli.StringFlag{Name: "format", Value: formatText, Usage: "--list as text (for a terminal), json or csv (every column, for machines)"},
		},
		Action: sweepAction,
	}
}

func sweepAction(c *cli.Context) error {
	fail := refusal("qmlsab sweep")
	if err := flagsOnly(c, fail); err != nil {
		return err
	}
	scale, err := run.ProfileScale(c.String("profile"))
	if err != nil {
		return fail("%v", err)
	}
	spec, err := resolveWorkload(c.String("workload"))
	if err != nil {
		return fail("--workload: %v", err)
	}
	if spec.SpillToDisk == nil {
		return fail("--workload %s: a sweep runs the spill_to_disk storm on the model; %s crosses the wire", spec.Name, spec.Kind)
	}
	base := virtual.DefaultConfig(c.Uint64("seed"))
	base.Workload = *spec.Scaled(scale).SpillToDisk
	if c.Bool("list") {
		var list []arms.Arm
		for _, n := range []string{"D", "E", "F"} {
			a, _ := arms.Lookup(n)
			list = append(list, a)
		}
		format, err := tableFormatOf(c)
		if err != nil {
			return fail("%v", err)
		}
		return sweep.WriteKnobs(c.App.Writer, base, list, format)
	}
	fromFile, err := loadArms(c)
	if err != nil {
		return err
	}
	names := commaList(c, "arms")
	selected, err := arms.Select(names, fromFile)
	if err != nil {
		return fail("--arms: %v", err)
	}
	axes, err := parseEach(c, "vary", sweep.ParseVary)
	if err != nil {
		return fail("%v", err)
	}
	fixed, err := parseEach(c, "set", sweep.ParseSet)
	if err != nil {
		return fail("%v", err)
	}
	cfg := sweep.Config{Arms: selected, Base: base, Axes: axes, Fixed: fixed, Seed: c.Uint64("seed"), Seeds: c.Int("n"), Parallel: c.Int("parallel")}
	if err := cfg.Validate(); err != nil {
		return fail("%v", err)
	}
	dir := outFolder(c, store.SweepFolder, 0, 0)
	// The sweep writes only over an earlier sweep's files.
	for _, o := range []struct {
		name string
		kind outputfile.Kind
	}{{"sweep.json", outputfile.SweepJSON}, {"sweep.html", outputfile.HTML}} {
		if err := outputfile.Check(filepath.Join(dir, o.name), o.kind); err != nil {
			return fail("--out %v", err)
		}
	}
	// From here a signal is the sweep's to handle: the folder it makes
	// goes with it.
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("--out: %v", err)
	}
	made := statErr != nil
	if made {
		// A folder made for this sweep goes again if the sweep writes
		// nothing into it (os.Remove leaves a folder that is not empty).
		defer func() { os.Remove(dir) }()
	}
	cells := 1
	for _, a := range axes {
		cells *= len(a.Values)
	}
	total := cells * len(selected) * cfg.Seeds
	fmt.Fprintf(c.App.Writer, "qmlsab sweep (SIMULATED: mongosim's model in virtual time): %s × %s × %s = %s of %s model time each, profile %s\n",
		texttable.Count(cells, "cell"), texttable.Count(len(selected), "arm"), texttable.Count(cfg.Seeds, "seed"), texttable.Count(total, "trial"),
		units.FormatDuration(base.Workload.Phases.Total()), c.String("profile"))
	cfg.Progress = sweepProgress(c.App.Writer)
	restoreGC := sweep.TuneGC()
	defer restoreGC()
	res, err := sweep.Run(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped by a signal: the sweep writes only at its end, so
			// nothing is half-made; the folder it made goes with it.
			kept := "its folder " + dir + " is removed"
			if !made {
				kept = dir + " was there before and is left as it was"
			}
			return cli.Exit(fmt.Sprintf("qmlsab sweep: %v; nothing written, %s", context.Cause(ctx), kept), exitInterrupted)
		}
		return fail("%v", err)
	}
	res.ToolVersion, res.CommandLine, res.Profile = toolVersion(), os.Args, c.String("profile")
	if err := store.WriteJSON(filepath.Join(dir, "sweep.json"), res); err != nil {
		return fail("%v", err)
	}
	page, err := sweep.HTML(res)
	if err != nil {
		return fail("%v", err)
	}
	if err := store.WriteFileAtomic(filepath.Join(dir, "sweep.html"), page); err != nil {
		return fail("%v", err)
	}
	sweep.WriteSummary(c.App.Writer, res)
	fmt.Fprintf(c.App.Writer, "%d trials in %.1f s (%.2f trials/s on %d workers)\nwrote %s and %s\n", res.Trials, res.WallSeconds, res.TrialsPerSec, res.Parallel,
		filepath.Join(dir, "sweep.json"), filepath.Join(dir, "sweep.html"))
	return nil
}

// repeated is a flag given once per value, taken whole: unlike a
// StringSliceFlag it does not split on commas (NAME=V1,V2 is one value).
type repeated struct{ values []string }

func (r *repeated) Set(s string) error { r.values = append(r.values, s); return nil }
func (r *repeated) String() string     { return strings.Join(r.values, " ") }

// repeatedFlag returns a repeated flag's values.
func repeatedFlag(c *cli.Context, name string) []string {
	if r, ok := c.Generic(name).(*repeated); ok {
		return r.values
	}
	return nil
}

// parseEach parses every value of a repeated flag with parse; the first
// that does not parse is an error naming the flag.
func parseEach[T any](c *cli.Context, flag string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range repeatedFlag(c, flag) {
		x, err := parse(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %v%s", flag, err, knobsHint(err))
		}
		out = append(out, x)
	}
	return out, nil
}

// knobsHint says where the names of knobs are listed, after an error
// about a name that is none ("" after any other error).
func knobsHint(err error) string {
	if errors.Is(err, sweep.ErrUnknownKnob) {
		return "; qmlsab sweep --list shows them"
	}
	return ""
}

// sweepProgress prints a line at every tenth of the trials.
func sweepProgress(w io.Writer) func(done, total int) {
	var mu sync.Mutex
	last := 0
	start := time.Now()
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if step := max(total/10, 1); done/step > last || done == total {
			last = done / step
			fmt.Fprintf(w, "  %d/%d trials (%.0f s)\n", done, total, time.Since(start).Seconds())
		}
	}
}

// scaled is a spill_to_disk workload with its phases scaled (a profile).
func scaled(w workload.SpillToDisk, f float64) workload.SpillToDisk {
	return *workload.Spec{Kind: workload.KindSpillToDisk, SpillToDisk: &w}.Scaled(f).SpillToDisk
}
