package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/sweep"
	"github.com/qmlsab/qmlsab/workload"
)

// calibrateCommand prints the calibration table: the spill_to_disk storm
// against built-in arms on the virtual engine, beside the figures the
// sweeper investigation observed on real servers. With --fit it finds the
// ensemble: every setting of the model's unknowns the observations (the
// investigation's, or a run's) allow, and the predicted arms' acceptance
// across them (fit.go).
func calibrateCommand() *cli.Command {
	return command("calibrate", "run the built-in arms on the model in virtual time and print its figures beside the investigation's; --fit finds every setting of the model's unknowns the observations allow and predicts the other arms across them (a simulation)", "[SHARD_DIR... with --fit --merge]", calibrateAction,
		&cli.StringFlag{Name: "arms", Value: "A,D,E,M,F,G", Usage: "built-in arms to run, comma-separated (table mode); with --fit --observed, the run's arms to fit"},
		&cli.IntFlag{Name: "n", Value: 5, Usage: "trials per arm (seeds --seed, --seed+1, ...); with --fit, per predicted arm"},
		renamedInt("seeds"),
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "first seed; a seed makes a trial deterministic"},
		&cli.Float64Flag{Name: "storm-rate", Usage: "storm queries per second (default: the workload's; table mode)"},
		&cli.DurationFlag{Name: "storm", Usage: "storm phase length (default: the workload's; table mode)"},
		&cli.BoolFlag{Name: "fit", Usage: "find every fit the observations allow (the acceptable set; the investigation's observations of D and E, or a run's with --observed) and predict the other arms across it, each acceptance condition as a share of fits × seeds"},
		&cli.StringFlag{Name: "observed", Usage: "with --fit: take the observations from the run folder `RUN` (a run, an FTDC import or a model run) instead of the investigation's, tolerances from its trials' spread; --arms names the run's arms to fit"},
		&cli.StringFlag{Name: "predict", Value: "F,G", Usage: "with --fit: arms predicted at every acceptable point, comma-separated (built-in, or the --observed run's)"},
		&cli.GenericFlag{Name: "space", Value: &repeated{}, Usage: "with --fit: search only these unknowns, each `NAME=LO:HI[:log]` or NAME=V1,V2,... (repeatable; default: the documented space)"},
		&cli.IntFlag{Name: "samples", Value: sweep.DefaultEnsemble().Samples, Usage: "with --fit: Latin hypercube samples over the continuous unknowns, each under every variant of the discrete ones"},
		&cli.IntFlag{Name: "starts", Value: sweep.DefaultEnsemble().Starts, Usage: "with --fit: independent searches (chains) the samples are dealt to; a sharded search runs whole chains"},
		&cli.IntFlag{Name: "refine", Value: sweep.DefaultEnsemble().Steps, Usage: "with --fit: evolution steps of each chain from its best point"},
		&cli.IntFlag{Name: "acceptable", Value: sweep.DefaultEnsemble().MinAcceptable, Usage: "with --fit: acceptable points the chains explore for"},
		&cli.IntFlag{Name: "predict-points", Value: sweep.DefaultEnsemble().PredictPoints, Usage: "with --fit: most acceptable points the arms are predicted at (a spread subset of a larger set)"},
		&cli.IntFlag{Name: "fit-seeds", Value: sweep.DefaultEnsemble().FitSeeds, Usage: "with --fit: trials of each fitted arm per point (the same seeds at every point)"},
		&cli.StringFlag{Name: "profile", Value: "default", Usage: "with --fit: phase lengths, quick, default or long (with --observed: the run's own)"},
		&cli.IntFlag{Name: "parallel", Usage: "with --fit: trials at once (default: every CPU)"},
		&cli.StringFlag{Name: "shard", Usage: "with --fit: run shard `i/N` of the search (whole chains), or with --from of the predictions, into --out (docs/distributed.md)"},
		&cli.StringFlag{Name: "from", Usage: "with --fit --shard: the merged search in `DIR` whose predictions to run"},
		&cli.BoolFlag{Name: "merge", Usage: "with --fit: merge the shard folders given as arguments into --out: search shards into the search, prediction shards into the ensemble"},
		&cli.StringFlag{Name: "format", Value: formatText, Usage: "with --fit: the ensemble as text (for a terminal) or json"},
		&cli.StringFlag{Name: "out", Usage: "with --fit: `DIR` for fit.json and fit.html (a shard's file with --shard, the merge's with --merge); files there are written over only if an earlier fit wrote them"})
}

// calibrateAction prints the calibration table, or with --fit finds the
// ensemble (fitAction).
func calibrateAction(c *cli.Context) error {
	if c.Args().Len() > 0 && !(c.Bool("fit") && c.Bool("merge")) {
		return cli.Exit(fmt.Sprintf("qmlsab calibrate: unexpected argument %q (flags only; shard folders with --fit --merge)", c.Args().First()), 1)
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
	for _, f := range fitFlags {
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
