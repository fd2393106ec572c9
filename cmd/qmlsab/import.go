package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/ftdcimport"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// importCommand builds run folders from records qmlsab did not make.
func importCommand() *cli.Command {
	return group("import", "build a run folder from another record of A/B trials",
		command("ftdc", "a run folder from members' diagnostic.data (FTDC) and which arm each time window was (docs/ftdc.md)", "[DIAGNOSTIC_DATA...]",
			importFTDCAction,
			&cli.StringFlag{Name: "spec", Usage: "a YAML `FILE` naming the diagnostic data, each trial's arm and start, and the phases"},
			&cli.StringFlag{Name: "arm", Usage: "without --spec: the arm of the one trial"},
			&cli.StringFlag{Name: "start", Usage: "without --spec: the trial's start, RFC 3339 (2025-06-01T10:00:00Z)"},
			&cli.StringFlag{Name: "phases", Usage: "without --spec: warmup,storm,recovery lengths (30s,150s,60s)"},
			&cli.StringFlag{Name: "outcomes", Usage: "without --spec: client-side outcomes, JSON lines or CSV (docs/ftdc.md)"},
			&cli.StringFlag{Name: "out", Usage: "the new run folder (default: results/<timestamp>-<id>)"}))
}

func importFTDCAction(c *cli.Context) error {
	fail, sources, err := operands(c, "qmlsab import ftdc")
	if err != nil {
		return err
	}
	var spec *ftdcimport.Spec
	if path := c.String("spec"); path != "" {
		for _, f := range []string{"arm", "start", "phases", "outcomes"} {
			if c.IsSet(f) {
				return fail("--%s: with --spec, the spec file says it", f)
			}
		}
		if len(sources) > 0 {
			return fail("unexpected argument %q: with --spec, the spec file names the diagnostic data", sources[0])
		}
		if spec, err = ftdcimport.LoadSpec(path); err != nil {
			return fail("--spec: %v", err)
		}
	} else {
		var ph ftdcimport.Phases
		parts := strings.Split(c.String("phases"), ",")
		if len(parts) != 3 {
			return fail("--phases %q: want warmup,storm,recovery such as 30s,150s,60s (or --spec FILE)", c.String("phases"))
		}
		for i, d := range []*time.Duration{&ph.Warmup, &ph.Storm, &ph.Recovery} {
			if *d, err = time.ParseDuration(strings.TrimSpace(parts[i])); err != nil {
				return fail("--phases %q: %q is not a duration", c.String("phases"), parts[i])
			}
		}
		if spec, err = ftdcimport.FromFlags(c.String("arm"), c.String("start"), ph, c.String("outcomes"), sources); err != nil {
			return fail("%v", err)
		}
	}
	dir := outFolder(c, store.RunFolder, 0, 0)
	// A signal stops the import before its folder is renamed into place:
	// what it assembled beside --out is removed, and --out is not made.
	ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
	defer stop()
	res, err := ftdcimport.Import(spec, dir, ftdcimport.Options{ToolVersion: toolVersion(), CommandLine: os.Args, Context: ctx})
	if err != nil && ctx.Err() != nil {
		return cli.Exit(fmt.Sprintf("qmlsab import ftdc: %v; nothing written to %s", context.Cause(ctx), dir), exitInterrupted)
	}
	if err != nil {
		return fail("%v", err)
	}
	w := c.App.Writer
	kind := ""
	if res.Simulated {
		kind = " (SIMULATED: the diagnostic data was written by mongosim)"
	}
	fmt.Fprintf(w, "imported %d trial(s) from diagnostic data%s\n", res.Trials, kind)
	var armNames []string
	for a := range res.Missing {
		armNames = append(armNames, a)
	}
	slices.Sort(armNames)
	for _, a := range armNames {
		var names []string
		for _, m := range metric.AbsentWithout(res.Missing[a]) {
			names = append(names, m.Name)
		}
		fmt.Fprintf(w, "  arm %s: no %s records, so absent: %s\n", a, strings.Join(res.Missing[a], ", "), strings.Join(names, ", "))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "results in %s; next: qmlsab report %s\n", dir, dir)
	return nil
}
