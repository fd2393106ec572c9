package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/store"
)

// formats are report outputs and their files.
var formats = map[string]string{"html": "report.html", "json": "summary.json", "perf": "perf.json", "bench": "bench.txt", "md": "summary.md"}

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "the A/B report of one run (default: the newest in results/) or of several runs of one workload",
		ArgsUsage: "[RUN_DIR ...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the outputs into `DIR` (default: the (first) run folder)"},
			&cli.StringFlag{Name: "format", Value: "html,json", Usage: "outputs: any of html, json, perf, bench, md"},
			&cli.StringFlag{Name: "baseline", Usage: "the `ARM` the others are compared with (default: the run's first arm)"},
			&cli.StringFlag{Name: "gates", Usage: "a gate set: `sweeper-acceptance` (alias seed000) or a gate YAML file; exit 3 when a gate fails"},
			&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "significance level of the U test"},
			&cli.StringFlag{Name: "results", Value: "results", Usage: "where to look for the newest run when none is given"},
			&cli.BoolFlag{Name: "history", Usage: "also add the run(s) to the history (--history-db) for qmlsab history detect and trend"},
			historyDBFlag(),
			labelFlag,
			allowPartialFlag,
		},
		Action: reportAction,
	}
}

func reportAction(c *cli.Context) error {
	fail := refusal("qmlsab report")
	dirs, err := trailingFlags(c)
	if err != nil {
		return fail("%v", err)
	}
	var want []string
	for _, f := range commaList(c, "format") {
		if _, ok := formats[f]; !ok {
			return fail("--format %q: want any of html, json, perf, bench, md", f)
		}
		want = append(want, f)
	}
	if len(want) == 0 {
		return fail("--format: no output named")
	}
	if a := c.Float64("alpha"); a <= 0 || a >= 1 {
		return fail("--alpha %v: want a level between 0 and 1", a)
	}
	// Every flag is checked before anything is written: a label the
	// history would refuse must not leave a report behind.
	if _, err := labels(c); err != nil {
		return fail("%v", err)
	}
	if c.IsSet("label") && !c.Bool("history") {
		return fail("--label: labels are stored with the run in the history; add --history")
	}
	if len(dirs) == 0 {
		d, err := report.Newest(c.String("results"))
		if err != nil {
			return fail("%v", err)
		}
		dirs = []string{d}
	}
	// A locked or unfinished run the history would refuse is refused
	// before the report is written.
	if c.Bool("history") {
		if err := historyPreflight(c, dirs); err != nil {
			return exitFor(err, fail("--history: %v", err))
		}
	}
	in, err := report.Load(dirs)
	if err != nil {
		return fail("%v", err)
	}
	opts := report.Options{Baseline: c.String("baseline"), Alpha: c.Float64("alpha")}
	if g := c.String("gates"); g != "" {
		gs, err := report.LoadGates(g)
		if err != nil {
			return fail("--gates: %v", err)
		}
		opts.Gates = &gs
	}
	a, err := report.Analyze(in, opts)
	if err != nil {
		return fail("%v", err)
	}
	out := c.String("out")
	if out == "" {
		out = dirs[0]
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail("--out: %v", err)
	}
	slices.Sort(want)
	for _, f := range want {
		var b []byte
		switch f {
		case "html":
			b, err = report.HTML(a, toolVersion())
		case "json":
			b, err = report.SummaryJSON(a, toolVersion())
		case "perf":
			b, err = report.PerfJSON(a)
		case "bench":
			b = report.BenchTxt(a)
		case "md":
			b = report.Markdown(a)
		}
		if err != nil {
			return fail("%s: %v", formats[f], err)
		}
		path := filepath.Join(out, formats[f])
		if err := store.WriteFileAtomic(path, b); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(c.App.Writer, "wrote %s\n", path)
	}
	if in.Simulated {
		fmt.Fprintln(c.App.Writer, "SIMULATED: the trials ran against mongosim, a model of mongod, not a real server.")
	}
	defer func() {
		if slices.Contains(want, "html") {
			fmt.Fprintf(c.App.Writer, "report: %s\n", filepath.Join(out, formats["html"]))
		}
	}()
	if opts.Gates != nil {
		// The gate lines come before the history step, so that a history
		// that refuses the run does not hide what the gates found.
		for _, arm := range a.Arms {
			for _, g := range arm.Gates {
				if g.NotApplicable {
					continue
				}
				fmt.Fprintf(c.App.Writer, "gate %-32s %-4s %s\n", g.Gate.Name, arm.Name, g.Line())
			}
		}
	}
	if c.Bool("history") {
		if err := addToHistory(c, c.String("history-db"), dirs); err != nil {
			return exitFor(err, fail("--history: %v", err))
		}
	}
	if opts.Gates != nil && !a.GatesPass() {
		return cli.Exit("qmlsab report: a gate failed", exitGateFailed)
	}
	return nil
}
