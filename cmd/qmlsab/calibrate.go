package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/sweep"
	"github.com/qmlsab/qmlsab/workload"
)

// calibrateCommand prints the calibration table: the spill_to_disk storm
// against built-in arms on the virtual engine, beside the figures the
// sweeper investigation observed on real servers. With --fit it estimates
// the host model's unknowns from the investigation's observations of D
// and predicts E and F (docs/model-host.md).
func calibrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "calibrate",
		Usage: "run the built-in arms on the model in virtual time and print its figures beside the investigation's; --fit estimates the host model's unknowns (a simulation)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arms", Value: "A,D,E,M,F,G", Usage: "built-in arms to run, comma-separated (table mode)"},
			&cli.IntFlag{Name: "n", Value: 5, Usage: "trials per arm (seeds --seed, --seed+1, ...); with --fit, per predicted arm"},
			renamedInt("seeds"),
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "first seed; a seed makes a trial deterministic"},
			&cli.Float64Flag{Name: "storm-rate", Usage: "storm queries per second (default: the workload's; table mode)"},
			&cli.DurationFlag{Name: "storm", Usage: "storm phase length (default: the workload's; table mode)"},
			&cli.BoolFlag{Name: "fit", Usage: "estimate the storm, the unreported admission settings, D's actor policy and E's build from the investigation's observations of D and E jointly, then predict D, E, M and F"},
			&cli.GenericFlag{Name: "space", Value: &repeated{}, Usage: "with --fit: search only these unknowns, each `NAME=LO:HI[:log]` or NAME=V1,V2,... (repeatable; default: the documented space)"},
			&cli.IntFlag{Name: "samples", Value: 48, Usage: "with --fit: Latin hypercube points"},
			&cli.IntFlag{Name: "refine", Value: 12, Usage: "with --fit: compass-search polls after the hypercube"},
			&cli.IntFlag{Name: "fit-seeds", Value: 2, Usage: "with --fit: trials of D per point (the same seeds at every point)"},
			&cli.StringFlag{Name: "profile", Value: "default", Usage: "with --fit: phase lengths, quick, default or long"},
			&cli.IntFlag{Name: "parallel", Usage: "with --fit: trials at once (default: every CPU)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return cli.Exit(fmt.Sprintf("qmlsab calibrate: unexpected argument %q (flags only)", c.Args().First()), 1)
			}
			if c.Int("n") < 1 {
				return cli.Exit("qmlsab calibrate: -n must be at least 1", 1)
			}
			if c.Int("parallel") < 0 {
				return cli.Exit(fmt.Sprintf("qmlsab calibrate: --parallel %d: must not be negative", c.Int("parallel")), 1)
			}
			if c.Bool("fit") {
				return fitAction(c)
			}
			for _, f := range []string{"space", "samples", "refine", "fit-seeds", "profile", "parallel"} {
				if c.IsSet(f) {
					return cli.Exit(fmt.Sprintf("qmlsab calibrate: --%s: with --fit only", f), 1)
				}
			}
			var list []arms.Arm
			for _, n := range strings.Split(c.String("arms"), ",") {
				a, ok := arms.Lookup(strings.TrimSpace(n))
				if !ok {
					return cli.Exit(fmt.Sprintf("qmlsab calibrate: --arms: unknown arm %q (built-in: %s)", n, "A, D, E, M, F, G"), 1)
				}
				list = append(list, a)
			}
			cfg := virtual.DefaultConfig(c.Uint64("seed"))
			if c.IsSet("storm-rate") {
				cfg.Workload.StormRate = c.Float64("storm-rate")
			}
			if c.IsSet("storm") {
				cfg.Workload.Phases.Storm = c.Duration("storm")
			}
			if err := checkCalibrateWorkload(c, cfg.Workload); err != nil {
				return err
			}
			ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
			defer stop()
			start := time.Now()
			trials, err := virtual.RunMatrix(ctx, cfg, list, c.Int("n"))
			if err != nil {
				return cli.Exit("qmlsab calibrate: "+err.Error(), 1)
			}
			virtual.WriteTable(c.App.Writer, trials)
			virtual.WriteResiduals(c.App.Writer, trials)
			ph := cfg.Workload.Phases
			fmt.Fprintf(c.App.Writer, "\n%s of %s model time (warmup %s, storm %s, recovery %s) in %v wall\n",
				texttable.Count(len(trials), "trial"), units.FormatDuration(ph.Total()), units.FormatDuration(ph.Warmup),
				units.FormatDuration(ph.Storm), units.FormatDuration(ph.Recovery), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}

// checkCalibrateWorkload holds the table's storm to the workload's bounds,
// memory included, as run and sweep do; the error names the flag that
// set the offending value, or the workload's key.
func checkCalibrateWorkload(c *cli.Context, w workload.SpillToDisk) error {
	err := workload.Spec{Name: workload.KindSpillToDisk, Kind: workload.KindSpillToDisk, SpillToDisk: &w}.Validate()
	if err == nil {
		return nil
	}
	flag := ""
	var fe *workload.FieldError
	if errors.As(err, &fe) {
		switch strings.Join(fe.Path[1:], ".") {
		case "stormRate":
			flag = "storm-rate"
		case "phases.storm", "phases":
			flag = "storm"
		case "canaryRate":
			// The canaries' term grows with the storm's length.
			if c.IsSet("storm") {
				flag = "storm"
			}
		}
	}
	if flag != "" && c.IsSet(flag) {
		return cli.Exit(fmt.Sprintf("qmlsab calibrate: --%s: %v", flag, err), 1)
	}
	return cli.Exit(fmt.Sprintf("qmlsab calibrate: workload: %v", err), 1)
}

// fitAction is calibrate --fit.
func fitAction(c *cli.Context) error {
	fail := refusal("qmlsab calibrate")
	for _, f := range []string{"arms", "storm-rate", "storm"} {
		if c.IsSet(f) {
			return fail("--%s: table mode only; --fit runs D and E over its search space and predicts M and F", f)
		}
	}
	scale, err := run.ProfileScale(c.String("profile"))
	if err != nil {
		return fail("%v", err)
	}
	for _, f := range []string{"samples", "fit-seeds"} {
		if c.Int(f) < 1 {
			return fail("--%s %d: at least 1", f, c.Int(f))
		}
	}
	if c.Int("refine") < 0 {
		return fail("--refine %d: must not be negative", c.Int("refine"))
	}
	space := sweep.DefaultSpace()
	if c.Bool("host") {
		space = append(space, sweep.HostSpace()...)
	}
	if given := repeatedFlag(c, "space"); len(given) > 0 {
		// The space is exactly the given unknowns (the others keep the
		// embedded default's values).
		var dims []sweep.Dim
		for _, text := range given {
			d, err := sweep.ParseDim(text)
			if err != nil {
				return fail("--space %v", err)
			}
			if slices.ContainsFunc(dims, func(x sweep.Dim) bool { return x.Knob.Name == d.Knob.Name }) {
				return fail("--space %s: %s is given twice", text, d.Knob.Name)
			}
			if i := slices.IndexFunc(space, func(x sweep.Dim) bool { return x.Knob.Name == d.Knob.Name }); i >= 0 {
				d.Why = space[i].Why
			}
			dims = append(dims, d)
		}
		space = dims
	}
	base := virtual.DefaultConfig(c.Uint64("seed"))
	base.Workload = scaled(base.Workload, scale)
	role := func(name string) arms.Arm { a, _ := arms.Lookup(name); return a }
	cfg := sweep.FitConfig{Base: base, D: role("D"), E: role("E"), F: role("F"), M: role("M"), Space: space, Seed: c.Uint64("seed"),
		FitSeeds: c.Int("fit-seeds"), PredictSeeds: c.Int("n"), Samples: c.Int("samples"), Refine: c.Int("refine"),
		Parallel: c.Int("parallel"), Progress: fitProgress(c.App.ErrWriter)}
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	restoreGC := sweep.TuneGC()
	defer restoreGC()
	start := time.Now()
	r, err := sweep.Fit(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fail("interrupted; nothing printed")
		}
		return fail("%v", err)
	}
	var sets []string
	for _, s := range r.FittedSettings() {
		sets = append(sets, "--set "+s)
	}
	sweep.WriteFit(c.App.Writer, cfg, r, sweep.FitReport{
		Title:   "qmlsab calibrate --fit (SIMULATED: a model of mongod on an M50, not a measurement)",
		Profile: c.String("profile"),
		Took:    time.Since(start),
		Next:    "To sweep around the fitted point: qmlsab sweep " + strings.Join(sets, " ") + " --vary NAME=FROM:TO:STEP ...",
	})
	return nil
}

// fitProgress reports a fit's stages on w, one line per stage.
func fitProgress(w io.Writer) func(stage string, done, total int) {
	return func(stage string, done, total int) {
		if done == total {
			fmt.Fprintf(w, "fit: %s: %d trials done\n", stage, total)
		}
	}
}
