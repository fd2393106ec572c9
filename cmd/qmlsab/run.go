package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/progress"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run the A/B experiment: each arm n times, in seeded repetition blocks, into a results folder (or one shard of it)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arms", Value: "D,E", Usage: "comma-separated arm names; the first is the baseline"},
			armsFileFlag,
			&cli.IntFlag{Name: "n", Value: 5, Usage: "trials per arm"},
			&cli.StringFlag{Name: "workload", Value: workload.KindSpillToDisk, Usage: "a built-in workload (qmlsab workloads list) or a workload YAML `FILE`"},
			&cli.StringFlag{Name: "profile", Value: "default", Usage: "phase lengths: quick, default or long"},
			&cli.StringFlag{Name: "clock", Value: run.Virtual, Usage: "embedded target only: virtual (the model in model time, no wire; seconds per trial) or wall (real time over the wire protocol)"},
			&cli.StringFlag{Name: "topology", Usage: "run every arm on `TOPOLOGY`: sharded (a config server, 2 shards and a router: mongosim's on the embedded target, the arm's mongod and sharded.mongos on a local one; merge_partial_write only) or replset; default: each arm's own (an arms file's topology:)"},
			&cli.StringFlag{Name: "out", Usage: "run folder; without it the run's folder is named after the run, as its manifest and the history name it (default: results/<run id>)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of every random draw (arrivals, query shapes, the model); when not given and $QMLSAB_RUN_ID is set, one drawn from it (each night its own, alike in its shards)"},
			&cli.IntFlag{Name: "parallel", Usage: "trials at once on this host (default: one per CPU for virtual-clock trials, one at a time on the wall clock, where trials at once share the CPUs they measure)"},
			&cli.StringFlag{Name: "resume", Usage: "complete the interrupted run (or shard) in `DIR` with the arms its manifest records (--arms-file again only for a uri arm's credentials; arms given must be the run's, defined alike)"},
			&cli.StringFlag{Name: "shard", Usage: "run shard `i/N` (1-based) of the plan: its repetition blocks k with k mod N = i−1, into its own folder (qmlsab merge puts the shards together; docs/distributed.md)"},
			&cli.IntFlag{Name: "shards", Usage: "run one of `N` shards, the one $JOB_COMPLETION_INDEX (0-based, as a Kubernetes Indexed Job sets it) names"},
			&cli.BoolFlag{Name: "allow-remote", Usage: "let the storm run against a non-loopback target"},
			&cli.BoolFlag{Name: "verbose", Usage: "log each trial's steps to stderr"},
			wideFlag(),
		},
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	fail := refusal("qmlsab run")
	if err := flagsOnly(c, fail); err != nil {
		return err
	}
	spec, err := resolveWorkload(c.String("workload"))
	if err != nil {
		return fail("--workload: %v", err)
	}
	fromFile, err := loadArms(c)
	if err != nil {
		return err
	}
	names := commaList(c, "arms")
	var resumed *store.Run
	var selected []arms.Arm
	if dir := c.String("resume"); dir != "" {
		r, err := store.Open(dir)
		if err != nil {
			return fail("--resume: %v", err)
		}
		resumed = r
		if selected, err = resumeSelection(c, r.Manifest, names, fromFile); err != nil {
			return fail("%v", err)
		}
	} else if selected, err = arms.Select(names, fromFile); err != nil {
		return fail("--arms: %v", err)
	}
	shard, err := shardFlags(c)
	if err != nil {
		return fail("%v", err)
	}
	if c.IsSet("clock") && c.String("clock") == run.Virtual {
		for _, a := range selected {
			if !a.Embedded() {
				return fail("--clock virtual: arm %s runs on the %s target; only the embedded model can run in model time", a.Name, a.Target)
			}
		}
	}

	logLevel := slog.LevelWarn
	if c.Bool("verbose") {
		logLevel = slog.LevelInfo
	}
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	cfg := run.Config{
		Arms: selected, N: c.Int("n"), Workload: spec, Profile: c.String("profile"), Resume: resumed != nil,
		Seed: c.Uint64("seed"), Parallel: c.Int("parallel"), AllowRemote: c.Bool("allow-remote"),
		Clock:       c.String("clock"),
		Topology:    c.String("topology"),
		Shard:       shard,
		ToolVersion: toolVersion(),
		CommandLine: os.Args,
	}
	if resumed != nil {
		// A resumed run keeps its own conditions: only the flags given
		// are passed on, for the run layer to check against the manifest.
		unset := func(flag string) bool { return !c.IsSet(flag) }
		if unset("n") {
			cfg.N = 0
		}
		if unset("profile") {
			cfg.Profile = ""
		}
		if unset("clock") {
			cfg.Clock = ""
		}
		if unset("seed") {
			cfg.Seed = 0
		}
		if unset("workload") {
			cfg.Workload = workload.Spec{}
		}
	}
	seedFrom := ""
	if stamp := os.Getenv(store.RunIDEnv); resumed == nil && !c.IsSet("seed") && stamp != "" {
		// A nightly job sets the night's id: each night draws anew, and
		// a night's shards (or the night run again) alike.
		cfg.Seed, seedFrom = run.StampSeed(stamp), " (from $"+store.RunIDEnv+")"
	}
	if err := cfg.Validate(); err != nil {
		return fail("%v", err)
	}
	dir := c.String("resume")
	if dir == "" && c.String("out") == "" {
		// The folder is named after the run: one id in its name, its
		// manifest and the history.
		id, err := run.NewRunID(cfg, time.Now())
		if err != nil {
			return fail("%v", err)
		}
		cfg.RunID = id
		dir = store.RunDir(store.ResultsRoot, id, shard.Index, shard.Count)
		if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err == nil {
			return fail("run %s already has its folder %s ($%s=%q names the same run again): complete it with qmlsab run --resume %s, or give this run another $%s or --out",
				id, dir, store.RunIDEnv, os.Getenv(store.RunIDEnv), dir, store.RunIDEnv)
		}
	} else if dir == "" {
		dir = c.String("out")
	}
	if resumed == nil {
		// Refused before anything is said or made; the run layer checks
		// again under the folder's lock.
		if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err != nil {
			if err := store.CheckNewRunFolder(dir); err != nil {
				return fail("--out %v, and is not a run (no %s in it); name a new or empty folder", err, store.ManifestFile)
			}
		}
	}
	cfg.Dir = dir
	// Everything the run layer would refuse before its first trial is
	// refused here, before the run is announced or its folder made.
	if err := run.Preflight(cfg); err != nil {
		return fail("%v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("--out: %v", err)
	}

	w := spec.Scaled(run.Profiles[c.String("profile")])
	if w.Merge != nil && c.IsSet("clock") && c.String("clock") == run.Virtual {
		fmt.Fprintln(c.App.Writer, "note: merge_partial_write always crosses the wire (wall clock): the hole it measures is a secondary forwarding its writes")
	}
	modelTime := w.SpillToDisk != nil && c.String("clock") == run.Virtual && !slices.ContainsFunc(selected, func(a arms.Arm) bool { return !a.Embedded() })
	part := ""
	if shard.Count > 0 && !cfg.Resume {
		var units []string
		for _, k := range shard.Units(cfg.N) {
			units = append(units, strconv.Itoa(k+1))
		}
		part = fmt.Sprintf(", shard %s (repetition blocks %s)", shard, strings.Join(units, ", "))
	}
	if resumed != nil {
		fmt.Fprintf(c.App.Writer, "qmlsab run: resuming %s: %s\n", dir, resumePlan(resumed.Manifest))
	} else {
		fmt.Fprintf(c.App.Writer, "qmlsab run: %s, %s × %s%s, %s, seed %d%s, into %s\n",
			w.Name, texttable.Count(len(selected), "arm"), texttable.Count(cfg.N, "trial"), part, trialLength(w, modelTime), cfg.Seed, seedFrom, dir)
	}
	// On a terminal the progress is a live region, and what goes to
	// standard error on the same terminal while it is live (the log, and
	// the provisioning tables, which are for the person watching as the
	// log is) goes through it, above the region. Execute closes it.
	sink, logw := progress.For(c.App.Writer, c.App.ErrWriter)
	defer sink.Close()
	cfg.Progress, cfg.Provisioning = sink, logw
	cfg.Log = slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: logLevel}))
	out, runErr := run.Execute(ctx, cfg)
	var allInvalid error
	if r, err := store.Open(out); err == nil {
		run.WriteTrialTable(c.App.Writer, r, c.Bool("wide"))
		var reasons []string
		invalid, finished := 0, 0
		for _, ts := range r.Manifest.Trials {
			switch ts.Status {
			case store.Invalid:
				invalid++
				if why := ts.Arm + "#" + strconv.Itoa(ts.Index) + ": " + ts.Reason; ts.Reason != "" && len(reasons) < 10 {
					reasons = append(reasons, why)
				}
				finished++
			case store.Valid:
				finished++
			}
		}
		if invalid > 0 {
			verb := "are"
			if invalid == 1 {
				verb = "is"
			}
			fmt.Fprintf(c.App.Writer, "warning: %d of %s %s invalid (reasons in the lines above and in manifest.json)\n", invalid,
				texttable.Count(len(r.Manifest.Trials), "trial"), verb)
		}
		if invalid > 0 && invalid == finished && runErr == nil && ctx.Err() == nil {
			// A run that measured nothing is a failure, not a result.
			allInvalid = fail("every trial of the run is invalid, so it measured nothing:\n  %s", strings.Join(reasons, "\n  "))
		}
	}
	if runErr != nil {
		if ctx.Err() != nil {
			// Stopped by a signal (interruptContext's): not a failed run,
			// and the finished trials are kept for --resume.
			return cli.Exit(fmt.Sprintf("qmlsab run: %v (%v)", runErr, context.Cause(ctx)), exitInterrupted)
		}
		return fail("%v", runErr)
	}
	if allInvalid != nil {
		return allInvalid
	}
	if r, err := store.Open(out); err == nil && r.Manifest.Shard != nil {
		fmt.Fprintf(c.App.Writer, "shard %s in %s; next: qmlsab merge --expect %d --out DIR <every shard's folder>\n", r.Manifest.Shard, out, r.Manifest.Shard.Count)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "results in %s; next: qmlsab report %s\n", out, out)
	return nil
}

// resumeSelection is what a resume's command line says of the arms, for
// the run layer to check against the arms the manifest records (and run
// those): without --arms, the arms file's definitions of the run's arms
// (the file may hold others); with --arms, which must name the run's
// arms, each resolved as a new run resolves it (the arms file, then the
// built-ins), so that a built-in asked for by name is not taken for the
// run's own arm of that name.
func resumeSelection(c *cli.Context, m store.Manifest, names []string, fromFile []arms.Arm) ([]arms.Arm, error) {
	own := m.ArmNames()
	if !c.IsSet("arms") {
		var out []arms.Arm
		for _, a := range fromFile {
			if slices.Contains(own, a.Name) {
				out = append(out, a)
			}
		}
		return out, nil
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(own))) {
		return nil, fmt.Errorf("--arms %s: the run in %s has the arms %s; a resumed run runs the arms it started with (leave --arms out)",
			strings.Join(names, ","), c.String("resume"), strings.Join(own, ","))
	}
	out, err := arms.Select(names, fromFile)
	if err != nil {
		return nil, fmt.Errorf("--arms: %v; the run's manifest records each of its arms, so leave --arms out to resume with the arms it records", err)
	}
	return out, nil
}

// resumePlan says what a resumed run will finish, from its own manifest
// (not from this command line's defaults).
func resumePlan(m store.Manifest) string {
	left := 0
	for _, ts := range m.Trials {
		if ts.Status != store.Valid && ts.Status != store.Invalid {
			left++
		}
	}
	length := "a fixed number of ops per trial"
	var spec workload.Spec
	if json.Unmarshal(m.Workload, &spec) == nil {
		length = trialLength(spec, m.Clock == run.Virtual)
	}
	arms := m.ArmNames()
	n := 0
	if m.Plan != nil {
		n = m.Plan.Units
	}
	clock := m.Clock
	if clock == "" {
		clock = "recorded"
	}
	profile := ""
	if m.Profile != "" {
		profile = ", profile " + m.Profile
	}
	return fmt.Sprintf("%s, %s (%s) × %s, %s, %s clock%s; %d of %s left",
		m.WorkloadName, texttable.Count(len(arms), "arm"), strings.Join(arms, ","), texttable.Count(n, "trial"), length, clock, profile, left,
		texttable.Count(len(m.Trials), "trial"))
}

// trialLength is how long each trial of workload w runs, as people write
// a duration ("4m per trial"), in model time when the run is on the
// virtual clock.
func trialLength(w workload.Spec, modelTime bool) string {
	d := w.Duration()
	switch {
	case d <= 0:
		return "a fixed number of ops per trial"
	case modelTime:
		return units.FormatDuration(d) + " of model time per trial"
	}
	return units.FormatDuration(d) + " per trial"
}

// jobIndexEnv is where a Kubernetes Indexed Job puts a pod's index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// shardFlags reads --shard i/N, or --shards N with the index from
// $JOB_COMPLETION_INDEX (0-based); the zero Shard is the whole plan.
func shardFlags(c *cli.Context) (store.Shard, error) {
	switch {
	case c.IsSet("shard") && c.IsSet("shards"):
		return store.Shard{}, fmt.Errorf("--shard and --shards: give one (--shards takes the index from $%s)", jobIndexEnv)
	case c.IsSet("shard"):
		i, n, ok := strings.Cut(c.String("shard"), "/")
		si, err1 := strconv.Atoi(strings.TrimSpace(i))
		sn, err2 := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err1 != nil || err2 != nil || sn < 1 || si < 1 || si > sn {
			return store.Shard{}, fmt.Errorf("--shard %q: want i/N with 1 ≤ i ≤ N, as in --shard 2/3", c.String("shard"))
		}
		return store.Shard{Index: si, Count: sn}, nil
	case c.IsSet("shards"):
		n := c.Int("shards")
		if n < 1 {
			return store.Shard{}, fmt.Errorf("--shards %d: want the number of shards, at least 1", n)
		}
		v, ok := os.LookupEnv(jobIndexEnv)
		if !ok {
			return store.Shard{}, fmt.Errorf("--shards %d: $%s is not set (a Kubernetes Indexed Job sets it); elsewhere use --shard i/N", n, jobIndexEnv)
		}
		k, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || k < 0 || k >= n {
			return store.Shard{}, fmt.Errorf("--shards %d: $%s=%q is not an index 0..%d", n, jobIndexEnv, v, n-1)
		}
		return store.Shard{Index: k + 1, Count: n}, nil
	}
	return store.Shard{}, nil
}
