package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
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
			&cli.BoolFlag{Name: "host", Usage: "run on the host model (model.HostHardware) instead of the single-process model; with --fit, its unknowns join the space"},
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
			if c.Bool("host") {
				cfg.Hardware = model.HostHardware()
			}
			if c.IsSet("storm-rate") {
				cfg.Workload.StormRate = c.Float64("storm-rate")
			}
			if c.IsSet("storm") {
				cfg.Workload.Phases.Storm = c.Duration("storm")
			}
			if err := checkCalibrateWorkload(c, cfg.Workload); err != nil {
				return err
			}
			ctx, stop := interruptContext(c.Context)
			defer stop()
			start := time.Now()
			trials, err := virtual.RunMatrix(ctx, cfg, list, c.Int("n"))
			if err != nil {
				return cli.Exit("qmlsab calibrate: "+err.Error(), 1)
			}
			virtual.WriteTable(c.App.Writer, trials)
			ph := cfg.Workload.Phases
			fmt.Fprintf(c.App.Writer, "\n%d trials of %v model time (warmup %v, storm %v, recovery %v) in %v wall\n",
				len(trials), ph.Total(), ph.Warmup, ph.Storm, ph.Recovery, time.Since(start).Round(time.Millisecond))
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
	fail := func(format string, args ...any) error {
		return cli.Exit(fmt.Sprintf("qmlsab calibrate: "+format, args...), 1)
	}
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
	if c.Bool("host") {
		base.Hardware = model.HostHardware()
	}
	base.Workload = scaled(base.Workload, scale)
	role := func(name string) arms.Arm { a, _ := arms.Lookup(name); return a }
	cfg := sweep.FitConfig{Base: base, D: role("D"), E: role("E"), F: role("F"), M: role("M"), Space: space, Seed: c.Uint64("seed"),
		FitSeeds: c.Int("fit-seeds"), PredictSeeds: c.Int("n"), Samples: c.Int("samples"), Refine: c.Int("refine"),
		Parallel: c.Int("parallel"), Progress: fitProgress(c.App.ErrWriter)}
	ctx, stop := interruptContext(c.Context)
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
	writeFit(c.App.Writer, cfg, r, c.String("profile"), c.Bool("host"), time.Since(start))
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

// writeFit prints a fit: the fitted values, each observation's residual
// beside the observed figure, the objective per build variant, D's, E's,
// M's and F's predictions, F's acceptance as the model predicts it, and
// the verdict.
func writeFit(w io.Writer, cfg sweep.FitConfig, r *sweep.FitResult, profile string, host bool, took time.Duration) {
	b := r.Best
	modelName := "the single-process model"
	if host {
		modelName = "the host model"
	}
	fmt.Fprintf(w, "qmlsab calibrate --fit (SIMULATED: a model of mongod on an M50, not a measurement)\n\n")
	start := fmt.Sprintf("a Latin hypercube of %d points", cfg.Samples)
	if r.Start == "grid" {
		start = "every point of the (small, discrete) space"
	}
	fmt.Fprintf(w, "Method: %d unknowns over their plausible ranges; %s, then a compass search from the best (at most %d polls); at each point arms D and E run on seeds %d–%d (profile %s, %s); objective Σ (residual ÷ tolerance)² over D's and E's observations, D's failovers a hard constraint. %d points, %d trials (%d shared between points), %v wall, %.1f trials/s.\n\n",
		len(r.Space), start, cfg.Refine, cfg.Seed, cfg.Seed+uint64(cfg.FitSeeds)-1, profile, modelName, len(r.Points), r.Evaluated, r.Reused, took.Round(time.Second), float64(r.Evaluated)/max(took.Seconds(), 1e-9))

	fmt.Fprintln(w, "Fitted values (the best point):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  unknown\tfitted\tplausible range\tembedded default\t")
	for i, d := range r.Space {
		def := sweep.Setting{Config: cfg.Base, Arm: cfg.D}
		if !d.Knob.AppliesTo(cfg.D) {
			def.Arm = cfg.E
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", d.Knob.Name, d.Knob.Label(b.Values[i]), dimRange(d), d.Knob.Label(sweep.KnobValue(d.Knob, def)))
	}
	tw.Flush()

	if len(r.Variants) > 0 {
		fmt.Fprintln(w, "\nModel selection: E's build variant (simShedHazard), the best point found with each:")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  variant\tobjective\tD's objective\tE's objective\tE's figures there\t")
		for _, v := range r.Variants {
			if !v.Found {
				fmt.Fprintf(tw, "  %s\t(not searched)\t\t\t\t\n", v.Variant)
				continue
			}
			var dObj, eObj float64
			var figs []string
			for i, o := range sweep.Observations {
				q := (v.Best.Res[i] / o.Tol) * (v.Best.Res[i] / o.Tol)
				if o.Arm == "D" {
					dObj += q
				} else {
					eObj += q
					figs = append(figs, strings.TrimPrefix(o.Name, "E ")+" "+o.FormatValue(v.Best.Sim[i]))
				}
			}
			sel := ""
			if v.Best.Objective == b.Objective {
				sel = " (selected)"
			}
			fmt.Fprintf(tw, "  %s%s\t%.2f\t%.2f\t%.2f\t%s\t\n", v.Variant, sel, v.Best.Objective, dObj, eObj, strings.Join(figs, "; "))
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\nResiduals at the fitted point (median of %d seeds unless the row says otherwise; objective %.2f; D's failovers at most %.0f):\n", cfg.FitSeeds, b.Objective, b.Failovers)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  observation\tsimulated\tobserved\tresidual\ttolerance\tmatch\tover every point searched\t")
	for i, o := range sweep.Observations {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range r.Points {
			if !math.IsNaN(p.Sim[i]) {
				lo, hi = min(lo, p.Sim[i]), max(hi, p.Sim[i])
			}
		}
		span := "–"
		if lo <= hi {
			span = o.FormatValue(lo) + " – " + o.FormatValue(hi)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.2f\t±%.2f\t%s\t%s\t\n", o.Name, o.FormatValue(b.Sim[i]), o.Observed, b.Res[i], o.Tol,
			yesNo(o.Matches(b.Res[i])), span)
	}
	feasible := 0
	for _, p := range r.Points {
		if p.Feasible() {
			feasible++
		}
	}
	fmt.Fprintf(tw, "  D failovers\t%.0f\t0\t(hard constraint)\t\t%s\tnone at %d of %d points\t\n", b.Failovers, yesNo(b.Feasible()), feasible, len(r.Points))
	tw.Flush()

	fmt.Fprintf(w, "\nPredictions at the fitted point (%d seeds each; median [min–max]):\n", cfg.PredictSeeds)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  arm\tavailability\tfailovers\trestarts\tadmissions/s\tqueue kills/s\tsheds/s\tarrivals/s growing\tpeak RSS GiB\toutcome\tobserved\t")
	observed := investigation.Outcomes
	for _, p := range r.Predictions {
		col := func(name string, scale float64, format string) string {
			return rangeOf(p.Trials, func(s virtual.Summary) float64 { return s.Metrics[name] * scale }, format)
		}
		outcome := "neither"
		switch {
		case sweep.Holds(p.Trials):
			outcome = "holds"
		case sweep.Falls(p.Trials):
			outcome = "falls"
		}
		name := p.Arm
		if p.Variant != "" {
			name += " (" + p.Variant + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, col(metric.Availability, 1, "%.2f"), col(metric.Failovers, 1, "%.0f"),
			col(metric.Restarts, 1, "%.0f"), col(metric.AdmissionsPerS, 1, "%.0f"), col(metric.KillsPerS, 1, "%.0f"), col(metric.ShedsPerS, 1, "%.0f"),
			col(investigation.GrowthArrivalsPerS, 1, "%.0f"), col(metric.RSSPeakBytes, 1.0/(1<<30), "%.1f"), outcome, observed[p.Role])
	}
	tw.Flush()
	if f, ok := r.Prediction("F"); ok {
		fmt.Fprintln(w, "\nF's acceptance as the model predicts it (a prediction, never a fit target):")
		for _, cond := range investigation.FAcceptance {
			met, what := cond.Met(virtual.Figures(f.Trials))
			fmt.Fprintf(w, "  %-4s %s: %s\n", map[bool]string{true: "met", false: "NOT"}[met], cond.Name, what)
		}
	}
	fmt.Fprintf(w, "\nTo sweep around the fitted point: qmlsab sweep %s --vary NAME=FROM:TO:STEP ...\n", setFlags(r))
	fmt.Fprintln(w)
	if r.Reproduced() {
		fmt.Fprintln(w, "Verdict: the fitted point reproduces the investigation's D and E: every observation within tolerance, D holds and E falls.")
		return
	}
	fmt.Fprintln(w, "Verdict: no point of the plausible space that was searched reproduces the investigation's D and E.")
	fmt.Fprintln(w, "The nearest point is the fitted one above; it misses:")
	for i, o := range sweep.Observations {
		if !o.Matches(b.Res[i]) {
			fmt.Fprintf(w, "  - %s: %s simulated against %s observed (residual %+.2f, tolerance ±%.2f)\n", o.Name, o.FormatValue(b.Sim[i]), o.Observed, b.Res[i], o.Tol)
		}
	}
	if !b.Feasible() {
		fmt.Fprintf(w, "  - D failed over (%.0f), which the investigation never saw\n", b.Failovers)
	}
	if p, ok := r.Prediction("D"); ok && !sweep.Holds(p.Trials) {
		fmt.Fprintln(w, "  - D does not hold at the fitted point")
	}
	if p, ok := r.Prediction("E"); ok && !sweep.Falls(p.Trials) {
		fmt.Fprintln(w, "  - E does not fall at the fitted point")
	}
}

// setFlags are the sweep's --set flags that hold the fitted values.
func setFlags(r *sweep.FitResult) string {
	var out []string
	for i, d := range r.Space {
		v := r.Best.Values[i]
		text := v.Str
		if !v.IsStr {
			text = strconv.FormatFloat(v.Num, 'g', 6, 64)
			if d.Knob.Integer || d.Knob.Unit == sweep.UnitBytes {
				text = strconv.FormatFloat(math.Round(v.Num), 'f', 0, 64)
			}
		}
		out = append(out, "--set "+d.Knob.Name+"="+text)
		if d.Knob.Name == "host.dirtyRatio" {
			out = append(out, "--set host.dirtyBackgroundRatio="+strconv.FormatFloat(v.Num/2, 'g', 6, 64))
		}
	}
	return strings.Join(out, " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func dimRange(d sweep.Dim) string {
	if d.Values != nil {
		var vs []string
		for _, v := range d.Values {
			vs = append(vs, d.Knob.Label(v))
		}
		return strings.Join(vs, " | ")
	}
	s := d.Knob.Label(sweep.Num(d.Lo)) + " – " + d.Knob.Label(sweep.Num(d.Hi))
	if d.Log {
		s += " (log)"
	}
	return s
}

func rangeOf(trials []virtual.Summary, f func(virtual.Summary) float64, format string) string {
	var xs []float64
	for _, t := range trials {
		xs = append(xs, f(t))
	}
	if len(xs) == 0 {
		return "-"
	}
	s := fmt.Sprintf(format, metric.Quantile(xs, 0.5))
	if lo, hi := slices.Min(xs), slices.Max(xs); lo != hi {
		s += " [" + fmt.Sprintf(format, lo) + "–" + fmt.Sprintf(format, hi) + "]"
	}
	return s
}
