package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/outputfile"
	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/store"
)

// formats are report outputs and their files.
var formats = map[string]string{"html": "report.html", "json": "summary.json", "perf": "perf.json", "bench": "bench.txt", "md": "summary.md"}

// formatKinds are the outputs' kinds: what an existing file must be for a
// report to write over it (outputfile.Check).
var formatKinds = map[string]outputfile.Kind{"html": outputfile.HTML, "json": outputfile.SummaryJSON, "perf": outputfile.PerfJSON,
	"bench": outputfile.BenchTxt, "md": outputfile.SummaryMD}

func reportCommand() *cli.Command {
	return command("report", "the A/B report of one run (default: the newest in results/) or of several runs of one workload", "[RUN_DIR ...]", reportAction,
		&cli.StringFlag{Name: "out", Usage: "write the outputs into `DIR` (default: the (first) run folder); a file there is written over only if it is that output of an earlier report"},
		&cli.StringFlag{Name: "format", Value: "html,json", Usage: "outputs: any of html, json, perf, bench, md"},
		&cli.StringFlag{Name: "baseline", Usage: "the `ARM` the others are compared with (default: the run's first arm)"},
		&cli.StringFlag{Name: "gates", Usage: "a gate set: `sweeper-acceptance` (alias seed000) or a gate YAML file; exit 3 when a gate fails"},
		&cli.BoolFlag{Name: "gate-predictions", Usage: "let the gates of arms whose outcome is the model's prediction (F and G on the simulator) fail the set too; without it they are reported only"},
		&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "significance level of the U test"},
		&cli.StringFlag{Name: "results", Value: "results", Usage: "where to look for the newest run when none is given"},
		&cli.BoolFlag{Name: "history", Usage: "also add the run(s) to the history (--history-db) for qmlsab history detect and trend"},
		historyDBFlag(),
		labelFlag,
		reportAllowPartialFlag)
}

// reportAllowPartialFlag is --allow-partial as report reads it: the
// concept of history add's (accept a run that has not finished every
// planned trial), for the gates as much as for the history.
var reportAllowPartialFlag = &cli.BoolFlag{Name: "allow-partial",
	Usage: "accept a run with unfinished trials (or missing shards): the gates judge the finished ones, and --history stores the run marked partial; without it report --gates exits 3 on such a run and --history refuses it"}

func reportAction(c *cli.Context) error {
	fail, dirs, err := operands(c, "qmlsab report")
	if err != nil {
		return err
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
	if c.Bool("gate-predictions") && !c.IsSet("gates") {
		return fail("--gate-predictions: it decides how --gates judges predictions; give --gates")
	}
	opts := report.Options{Baseline: c.String("baseline"), Alpha: c.Float64("alpha"), AllowPartial: c.Bool("allow-partial"), GatePredictions: c.Bool("gate-predictions")}
	if g := c.String("gates"); g != "" {
		gs, err := report.LoadGates(g)
		if err != nil {
			return fail("--gates: %v", gateSetError(g, err))
		}
		opts.Gates = &gs
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
		// Under a stamp (a nightly job's night), the newest run is the
		// night's own: a night whose run died is not reported as the
		// night before it.
		newest := report.Newest
		if stamp := os.Getenv(store.RunIDEnv); stamp != "" {
			newest = func(root string) (string, error) { return store.NewestRunOf(root, stamp) }
		}
		d, err := newest(c.String("results"))
		if err != nil {
			return fail("%v", err)
		}
		dirs = []string{d}
	}
	out := c.String("out")
	if out == "" {
		out = dirs[0]
	}
	slices.Sort(want)
	want = slices.Compact(want)
	// An output goes only where nothing is or over the same output of an
	// earlier report, never over the history or another file.
	for _, f := range want {
		if err := checkOutput(filepath.Join(out, formats[f]), formatKinds[f], c.String("history-db")); err != nil {
			if !c.IsSet("out") {
				return fail("%v (without --out the outputs go into the run folder)", err)
			}
			return fail("--out %v", err)
		}
	}
	// A locked or unfinished run the history would refuse is refused
	// before the report is written.
	if c.Bool("history") {
		if err := historyPreflight(c, dirs); err != nil {
			return exitFor(err, fail("--history: %v", err))
		}
	}
	// From here a signal stops the report (reportOutputs says what it
	// leaves).
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	say := &sayer{w: c.App.Writer}
	interrupted := func(left string) error {
		cause := context.Cause(ctx)
		if ctx.Err() == nil {
			cause = errOutputClosed // the write failed before the signal was handled
		}
		return cli.Exit(fmt.Sprintf("qmlsab report: %v; %s", cause, left), exitInterrupted)
	}
	stopped := func() bool { return ctx.Err() != nil || say.closed() }
	nothing := "nothing written (outputs already in " + out + " are as they were)"
	in, err := report.Load(dirs)
	if err != nil {
		return fail("%v", err)
	}
	// A run without a finished trial has nothing to report; a gate set
	// cannot pass on it (fail closed: exit 3, as for a failed gate).
	if in.Finished == 0 {
		msg := fmt.Sprintf("qmlsab report: %s: no trial finished (%d planned): nothing to report; %s", strings.Join(dirs, " "), in.Planned, nothing)
		if opts.Gates != nil {
			return cli.Exit(msg+"; the gate set cannot pass", exitGateFailed)
		}
		return cli.Exit(msg, exitFailed)
	}
	// The first line comes once the input is read (bad input is refused
	// in one line), before anything is written.
	say.printf("qmlsab report: %s into %s (%s)\n", strings.Join(dirs, " "), out, strings.Join(want, ", "))
	if stopped() {
		return interrupted(nothing)
	}
	a, err := report.Analyze(in, opts)
	if err != nil {
		return fail("%v", err)
	}
	outputs := make([]stagedOutput, 0, len(want))
	for _, f := range want {
		if stopped() {
			return interrupted(nothing)
		}
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
		outputs = append(outputs, stagedOutput{path: filepath.Join(out, formats[f]), data: b})
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail("--out: %v", err)
	}
	if err := writeOutputs(outputs, stopped); err != nil {
		if stopped() {
			return interrupted(nothing)
		}
		return fail("%v", err)
	}
	var wrote []string
	for _, o := range outputs {
		wrote = append(wrote, o.path)
		say.printf("wrote %s\n", o.path)
	}
	if in.Simulated {
		say.printf("SIMULATED: the trials ran against mongosim, a model of mongod, not a real server.\n")
	}
	// What the report leaves out is said where a script's log keeps it,
	// not only in the page's footnotes.
	if note := completenessNote(in, opts.AllowPartial); note != "" {
		fmt.Fprintln(c.App.ErrWriter, note)
	}
	if opts.Gates != nil {
		// The gate lines come before the history step, so that a history
		// that refuses the run does not hide what the gates found.
		for _, arm := range a.Arms {
			for _, g := range arm.Gates {
				if g.NotApplicable {
					continue
				}
				say.printf("gate %-32s %-4s %s\n", g.Gate.Name, arm.Name, g.Line())
			}
		}
	}
	written := "its outputs were written whole (" + strings.Join(wrote, ", ") + ")"
	if c.Bool("history") {
		if stopped() {
			return interrupted(written + "; the run was not added to the history")
		}
		if err := addToHistory(ctx, c, c.String("history-db"), dirs); err != nil {
			return exitFor(err, fail("--history: %v", err))
		}
	}
	if slices.Contains(want, "html") {
		say.printf("report: %s\n", filepath.Join(out, formats["html"]))
	}
	if stopped() {
		return interrupted(written)
	}
	if failures := a.GateFailures(); len(failures) > 0 {
		return cli.Exit(fmt.Sprintf("qmlsab report: the gate set %s fails:\n  %s", opts.Gates.Name, strings.Join(failures, "\n  ")), exitGateFailed)
	}
	return nil
}

// completenessNote says how much of the runs a report rests on: the
// planned trials that did not finish and the finished ones that are
// invalid (harness faults, left out of the statistics), with counts; ""
// when every planned trial finished valid.
func completenessNote(in *report.Input, allowPartial bool) string {
	invalid := in.Invalid()
	inc := in.Incomplete()
	if inc == "" && invalid == 0 {
		return ""
	}
	var parts []string
	if inc != "" {
		parts = append(parts, fmt.Sprintf("%d planned trial(s) did not finish (%s)", in.Planned-in.Finished, inc))
	}
	if invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d finished trial(s) are invalid (harness faults; their reasons are in the report's appendix)", invalid))
	}
	valid := 0
	for _, arm := range in.Arms {
		valid += len(in.Valid(arm))
	}
	note := fmt.Sprintf("qmlsab report: warning: %s; the statistics rest on the %d valid trial(s)", strings.Join(parts, "; "), valid)
	switch {
	case inc != "" && allowPartial:
		note += "; the incomplete run is accepted (--allow-partial)"
	case inc != "":
		note += "; finish the run (qmlsab run --resume) or accept it with --allow-partial (report --gates fails an incomplete run without it)"
	}
	return note
}

// A report writes its outputs together, so that a signal never leaves a
// mix of this report's outputs and an earlier one's: each is written to a
// temporary file beside its place (synced), and only when every one is
// written are they renamed into place. A signal (or a closed standard
// output) before that removes the temporary files: nothing of this report
// is left and the outputs already there are as they were; after it, the
// new outputs are all in place, each whole. Either way the report exits
// 130.

// stagedOutput is an output file of a report and its content.
type stagedOutput struct {
	path string
	data []byte
	tmp  string
}

// writeOutputs writes every output to a temporary file beside it, then,
// unless stopped says the report was interrupted meanwhile, renames them
// all into place. On an error or an interruption before the renames no
// temporary file is left and no output is touched.
func writeOutputs(outputs []stagedOutput, stopped func() bool) (err error) {
	defer func() {
		if err != nil {
			for _, o := range outputs {
				if o.tmp != "" {
					os.Remove(o.tmp)
				}
			}
		}
	}()
	for i := range outputs {
		if stopped() {
			return errors.New("interrupted")
		}
		if outputs[i].tmp, err = store.WriteTemp(outputs[i].path, outputs[i].data); err != nil {
			return err
		}
	}
	if stopped() {
		return errors.New("interrupted")
	}
	for i, o := range outputs {
		if err := os.Rename(o.tmp, o.path); err != nil {
			return fmt.Errorf("writing %s: %w", o.path, err)
		}
		outputs[i].tmp = ""
	}
	return nil
}

// sayer prints a command's lines and remembers whether its output is
// closed (a write failed with EPIPE): then the command stops as
// interrupted, whether or not the SIGPIPE has been handled yet.
type sayer struct {
	w      io.Writer
	broken bool
}

func (s *sayer) printf(format string, args ...any) {
	if _, err := fmt.Fprintf(s.w, format, args...); errors.Is(err, syscall.EPIPE) {
		s.broken = true
	}
}

func (s *sayer) closed() bool { return s.broken }
