package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/store"
)

func mergeCommand() *cli.Command {
	return command("merge", "merge the shard folders of one experiment (qmlsab run --shard i/N) into one run folder", "SHARD_DIR...", mergeAction,
		&cli.IntFlag{Name: "expect", Usage: "the number of shards `N` the experiment was split into (required)"},
		&cli.StringFlag{Name: "out", Usage: "the merged run's folder `DIR` (new or empty; required)"},
		&cli.BoolFlag{Name: "allow-partial", Usage: "merge even when shards are missing or unfinished (their trials are listed as pending)"})
}

func mergeAction(c *cli.Context) error {
	fail, dirs, err := operands(c, "qmlsab merge")
	if err != nil {
		return err
	}
	switch {
	case !c.IsSet("expect"):
		return fail("--expect N: how many shards the experiment was split into")
	case c.String("out") == "":
		return fail("--out DIR: where the merged run goes")
	case len(dirs) == 0:
		return fail("give the shard folders to merge")
	}
	// A merge stopped by a signal (Ctrl-C, kill, the terminal closed)
	// removes the folder it was building: nothing half-made is left.
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	m, set, err := store.MergeShards(ctx, store.MergeOptions{Dirs: dirs, Expect: c.Int("expect"), Out: c.String("out"),
		AllowPartial: c.Bool("allow-partial"), ToolVersion: toolVersion(), CommandLine: os.Args})
	if err != nil && ctx.Err() != nil {
		return cli.Exit(fmt.Sprintf("qmlsab merge: %v", err), exitInterrupted)
	}
	if err != nil {
		return fail("%v%s", err, strings.Join(append([]string{""}, resumeHints(set)...), "\n"))
	}
	for _, p := range append(set.Problems(), resumeHints(set)...) {
		fmt.Fprintln(c.App.Writer, "warning:", p)
	}
	if len(set.Problems()) > 0 {
		fmt.Fprintln(c.App.Writer, "warning: a partial run: its missing trials are listed as pending, and the report says how many")
	}
	var hosts []string
	for _, h := range m.Hosts {
		hosts = append(hosts, h.Hostname)
	}
	fmt.Fprintf(c.App.Writer, "merged %d shard(s) of plan %.12s (run %s), run on %d host(s) (%s): %d of %d trials into %s\n",
		len(m.Shards), m.Plan.Digest, m.RunID, len(m.Hosts), strings.Join(hosts, ", "), m.Tally().Finished, len(m.Trials), c.String("out"))
	if m.Simulated {
		fmt.Fprintln(c.App.Writer, "SIMULATED: the trials ran against mongosim, a model of mongod, not a real server.")
	}
	fmt.Fprintf(c.App.Writer, "next: qmlsab report %s\n", c.String("out"))
	return nil
}

// resumeHints are the commands that complete a set's unfinished shards.
func resumeHints(set *store.ShardSet) []string {
	var out []string
	if set == nil {
		return out
	}
	for _, r := range set.Runs {
		if len(set.Unfinished[r.Dir]) > 0 {
			out = append(out, fmt.Sprintf("complete shard %s with: qmlsab run --resume %s", r.Manifest.Shard, r.Dir))
		}
	}
	return out
}
