package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

func runCommand() *cli.Command {
	return command("run", "run the A/B experiment: each arm n times, in seeded repetition blocks, into a results folder (or one shard of it)", "", runAction,
		&cli.StringFlag{Name: "arms", Value: "D,E", Usage: "comma-separated arm names; the first is the baseline"},
		armsFileFlag,
		&cli.IntFlag{Name: "n", Value: 5, Usage: "trials per arm"},
		&cli.StringFlag{Name: "workload", Value: workload.KindSpillToDisk, Usage: "a built-in workload (qmlsab workloads list) or a workload YAML `FILE`"},
		&cli.StringFlag{Name: "profile", Value: "default", Usage: "phase lengths: quick, default or long"},
		&cli.StringFlag{Name: "clock", Value: string(store.ClockVirtual), Usage: "embedded target only: virtual (the model in model time, no wire; seconds per trial) or wall (real time over the wire protocol)"},
		&cli.StringFlag{Name: "topology", Usage: "run every arm on `TOPOLOGY`: sharded (a config server, 2 shards and a router: mongosim's on the embedded target, the arm's mongod and sharded.mongos on a local one; merge_partial_write only) or replset; default: each arm's own (an arms file's topology:)"},
		&cli.StringFlag{Name: "out", Usage: "run folder; without it the run's folder is named after the run, as its manifest and the history name it (default: results/<run id>)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of every random draw (arrivals, query shapes, the model); when not given and $QMLSAB_RUN_ID is set, one drawn from it (each night its own, alike in its shards)"},
		&cli.IntFlag{Name: "parallel", Usage: "trials at once on this host (default: one per CPU for virtual-clock trials, one at a time on the wall clock, where trials at once share the CPUs they measure)"},
		&cli.StringFlag{Name: "resume", Usage: "complete the interrupted run (or shard) in `DIR` with the arms its manifest records (--arms-file again only for a uri arm's credentials; arms given must be the run's, defined alike)"},
		&cli.StringFlag{Name: "shard", Usage: "run shard `i/N` (1-based) of the plan: its repetition blocks k with k mod N = i−1, into its own folder (qmlsab merge puts the shards together; docs/distributed.md)"},
		&cli.IntFlag{Name: "shards", Usage: "run one of `N` shards, the one $JOB_COMPLETION_INDEX (0-based, as a Kubernetes Indexed Job sets it) names"},
		&cli.BoolFlag{Name: "allow-remote", Usage: "let the storm run against a non-loopback target"},
		&cli.BoolFlag{Name: "verbose", Usage: "log each trial's steps to stderr"},
		wideFlag())
}

func runAction(c *cli.Context) error {
	fail := refusal("qmlsab run")
	if err := flagsOnly(c, fail); err != nil {
		return err
	}
	fromFile, err := loadArms(c)
	if err != nil {
		return err
	}
	shard, err := shardFlags(c)
	if err != nil {
		return fail("%v", err)
	}
	logLevel := slog.LevelWarn
	if c.Bool("verbose") {
		logLevel = slog.LevelInfo
	}
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	// On a terminal the progress is a live region, and what goes to
	// standard error on the same terminal while it is live (the log, and
	// the provisioning tables, which are for the person watching as the
	// log is) goes through it, above the region. The run closes it.
	sink, logw := progress.For(c.App.Writer, c.App.ErrWriter)
	defer sink.Close()
	x := run.Exec{Parallel: c.Int("parallel"), Shard: shard, AllowRemote: c.Bool("allow-remote"), ToolVersion: toolVersion(), CommandLine: os.Args,
		Progress: sink, Provisioning: logw, Log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: logLevel}))}
	var out *run.Outcome
	var runErr error
	if dir := c.String("resume"); dir != "" {
		g, err := resumeGiven(c, fromFile)
		if err != nil {
			return fail("%v", err)
		}
		x.Starting = func(s run.Start) { fmt.Fprintf(c.App.Writer, "qmlsab run: resuming %s: %s\n", s.Dir, s.Summary()) }
		out, runErr = run.Resume(ctx, dir, x, g)
	} else {
		e, dir, err := newExperiment(c, fromFile, &x)
		if err != nil {
			return fail("%v", err)
		}
		out, runErr = run.Run(ctx, e, dir, x)
	}
	if out == nil { // refused before it began
		return fail("%v", runErr)
	}
	run.WriteTrialTable(c.App.Writer, out.Run, c.Bool("wide"))
	if t := out.Run.Manifest.Tally(); t.Invalid > 0 {
		verb := "are"
		if t.Invalid == 1 {
			verb = "is"
		}
		fmt.Fprintf(c.App.Writer, "warning: %d of %s %s invalid (reasons in the lines above and in manifest.json)\n", t.Invalid, texttable.Count(t.Trials, "trial"), verb)
	}
	var stopped *run.Stopped
	switch {
	case errors.As(runErr, &stopped) && stopped.Interrupted:
		// Stopped by a signal (interruptContext's): not a failed run,
		// and the finished trials are kept for --resume.
		return cli.Exit(fmt.Sprintf("qmlsab run: interrupted; finished trials are kept, resume with: qmlsab run --resume %s (%v)", stopped.Dir, context.Cause(ctx)), exitInterrupted)
	case stopped != nil:
		return fail("the run stopped: %v (finished trials are intact; the trials it could not write are left to run again: once the results disk is fixed, complete the run with: qmlsab run --resume %s)", stopped.Err, stopped.Dir)
	case runErr != nil:
		return fail("%v", runErr)
	}
	if err := out.MeasuredNothing(); err != nil {
		return fail("%v", err)
	}
	if m := out.Run.Manifest; m.Shard != nil {
		fmt.Fprintf(c.App.Writer, "shard %s in %s; next: qmlsab merge --expect %d --out DIR <every shard's folder>\n", m.Shard, out.Run.Dir, m.Shard.Count)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "results in %s; next: qmlsab report %s\n", out.Run.Dir, out.Run.Dir)
	return nil
}

// newExperiment is the experiment the flags describe and the new run's
// folder (--out, else results/<run id>, the id then set in x), with x
// told how to announce the run.
func newExperiment(c *cli.Context, fromFile []arms.Arm, x *run.Exec) (run.Experiment, string, error) {
	spec, err := resolveWorkload(c.String("workload"))
	if err != nil {
		return run.Experiment{}, "", fmt.Errorf("--workload: %v", err)
	}
	selected, err := arms.Select(commaList(c, "arms"), fromFile)
	if err != nil {
		return run.Experiment{}, "", fmt.Errorf("--arms: %v", err)
	}
	s := run.Spec{Arms: selected, N: c.Int("n"), Workload: spec, Profile: c.String("profile"), Topology: c.String("topology"), Seed: c.Uint64("seed")}
	if c.IsSet("clock") {
		s.Clock = store.Clock(c.String("clock")) // asked for by name: every arm must run on it
	}
	seedFrom := ""
	if stamp := os.Getenv(store.RunIDEnv); !c.IsSet("seed") && stamp != "" {
		// A nightly job sets the night's id: each night draws anew, and
		// a night's shards (or the night run again) alike.
		s.Seed, seedFrom = run.StampSeed(stamp), " (from $"+store.RunIDEnv+")"
	}
	e, err := run.NewExperiment(s)
	if err != nil {
		return e, "", err
	}
	dir := c.String("out")
	if dir == "" {
		// The folder is named after the run: one id in its name, its
		// manifest and the history.
		id, err := e.RunID(os.Getenv(store.RunIDEnv), time.Now())
		if err != nil {
			return e, "", err
		}
		x.RunID = id
		dir = store.RunDir(store.ResultsRoot, id, x.Shard.Index, x.Shard.Count)
		if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err == nil {
			return e, "", fmt.Errorf("run %s already has its folder %s ($%s=%q names the same run again): complete it with qmlsab run --resume %s, or give this run another $%s or --out",
				id, dir, store.RunIDEnv, os.Getenv(store.RunIDEnv), dir, store.RunIDEnv)
		}
	}
	x.Starting = func(st run.Start) {
		if st.Experiment.Workload().Merge != nil && s.Clock == store.ClockVirtual {
			fmt.Fprintln(c.App.Writer, "note: merge_partial_write always crosses the wire (wall clock): the hole it measures is a secondary forwarding its writes")
		}
		fmt.Fprintf(c.App.Writer, "qmlsab run: %s%s, into %s\n", st.Summary(), seedFrom, st.Dir)
	}
	return e, dir, nil
}

// resumeGiven is what a resume's command line gives besides the folder,
// for the run layer to check against the run's manifest: the arms (with
// --arms, each resolved as a new run resolves it, the arms file then the
// built-ins, and together the run's arms; without it, the arms file's
// definitions, of which the run takes its own) and the conditions the
// flags given state.
func resumeGiven(c *cli.Context, fromFile []arms.Arm) (run.Given, error) {
	g := run.Given{Defined: fromFile}
	if c.IsSet("arms") {
		sel, err := arms.Select(commaList(c, "arms"), fromFile)
		if err != nil {
			return g, fmt.Errorf("--arms: %v; the run's manifest records each of its arms, so leave --arms out to resume with the arms it records", err)
		}
		g = run.Given{Arms: sel, AllArms: true}
	}
	if c.IsSet("n") {
		n := c.Int("n")
		g.N = &n
	}
	if c.IsSet("seed") {
		seed := c.Uint64("seed")
		g.Seed = &seed
	}
	if c.IsSet("clock") {
		clock := store.Clock(c.String("clock"))
		g.Clock = &clock
	}
	for flag, stated := range map[string]**string{"profile": &g.Profile, "topology": &g.Topology} {
		if v := c.String(flag); c.IsSet(flag) || (flag == "topology" && v != "") {
			*stated = &v
		}
	}
	if c.IsSet("workload") {
		spec, err := resolveWorkload(c.String("workload"))
		if err != nil {
			return g, fmt.Errorf("--workload: %v", err)
		}
		g.Workload = &spec.Name
	}
	return g, nil
}

// jobIndexEnv is where a Kubernetes Indexed Job puts a pod's index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// shardFlags reads --shard i/N, or --shards N with the index from
// $JOB_COMPLETION_INDEX (0-based); the zero Shard is the whole plan.
func shardFlags(c *cli.Context) (plan.Shard, error) {
	switch {
	case c.IsSet("shard") && c.IsSet("shards"):
		return plan.Shard{}, fmt.Errorf("--shard and --shards: give one (--shards takes the index from $%s)", jobIndexEnv)
	case c.IsSet("shard"):
		s, err := plan.ParseShard(c.String("shard"))
		if err != nil {
			return plan.Shard{}, fmt.Errorf("--shard %v, as in --shard 2/3", err)
		}
		return s, nil
	case c.IsSet("shards"):
		n := c.Int("shards")
		if n < 1 {
			return plan.Shard{}, fmt.Errorf("--shards %d: want the number of shards, at least 1", n)
		}
		v, ok := os.LookupEnv(jobIndexEnv)
		if !ok {
			return plan.Shard{}, fmt.Errorf("--shards %d: $%s is not set (a Kubernetes Indexed Job sets it); elsewhere use --shard i/N", n, jobIndexEnv)
		}
		k, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || k < 0 || k >= n {
			return plan.Shard{}, fmt.Errorf("--shards %d: $%s=%q is not an index 0..%d", n, jobIndexEnv, v, n-1)
		}
		return plan.Shard{Index: k + 1, Count: n}, nil
	}
	return plan.Shard{}, nil
}
