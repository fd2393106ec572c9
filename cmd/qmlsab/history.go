package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/changepoint"
	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/outputfile"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/nightly"
	"github.com/qmlsab/qmlsab/store"
)

// exitRegression is history detect's exit code for a recent regression
// (report uses 3 for a failed gate, 1 is bad input).
const exitRegression = 4

// historyDBFlag is the history's location, --history-db on every command
// that reads or writes it.
func historyDBFlag() cli.Flag {
	return &cli.StringFlag{Name: "history-db", Value: filepath.Join("results", "history.db"), EnvVars: []string{"QMLSAB_HISTORY"},
		Usage: "the history: an SQLite `FILE` (created on first use) or a mongodb:// URI shared by many machines"}
}

var labelFlag = &cli.StringSliceFlag{Name: "label", Usage: "a `KEY=VALUE` label of the run(s) (branch=master, commit=abc123); repeatable"}

// labels reads the --label flags: KEY=VALUE each, of the form
// history.CheckLabel allows, every KEY once (whether they label a run or
// filter the history).
func labels(c *cli.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range c.StringSlice("label") {
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %s: want KEY=VALUE", quoteLabel(l))
		}
		if err := history.CheckLabel(k, v); err != nil {
			return nil, fmt.Errorf("--label %s: %v", quoteLabel(l), err)
		}
		if _, twice := out[k]; twice {
			return nil, fmt.Errorf("--label %s: label %s given twice", quoteLabel(l), k)
		}
		out[k] = v
	}
	return out, nil
}

// quoteLabel quotes a --label for a message, its first 60 characters: a
// label of 100,000 characters is refused without being echoed whole.
func quoteLabel(l string) string {
	if r := []rune(l); len(r) > 60 {
		return strconv.Quote(string(r[:60])) + "…"
	}
	return strconv.Quote(l)
}

func filter(c *cli.Context) (history.Filter, error) {
	l, err := labels(c)
	if err != nil {
		return history.Filter{}, err
	}
	if n := c.Int("last"); n < 0 {
		return history.Filter{}, fmt.Errorf("--last %d: want a number of nights, at least 1 (or 0 for all)", n)
	}
	return history.Filter{Workload: c.String("workload"), Labels: l, Last: c.Int("last")}, nil
}

// armsToExamineFlag is --arms of the commands that read the history,
// written as run writes it (--arms D,E); what says what they do with
// the arms.
func armsToExamineFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "arms", Usage: "comma-separated `ARMS` to " + what + " (default: all)"}
}

var filterFlags = []cli.Flag{
	historyDBFlag(), renamedString("db"),
	&cli.StringSliceFlag{Name: "label", Usage: "keep nights carrying this `KEY=VALUE` label; repeatable"},
	&cli.StringFlag{Name: "workload", Usage: "keep nights of this workload"},
	&cli.IntFlag{Name: "last", Usage: "keep the newest `N` nights (default: all)"},
}

// openHistory opens the history for a reader (list, detect, export,
// trend): read-only, never created, and checked, so a workload, label,
// arm or metric that matches nothing is an error naming it rather than
// an empty answer.
func openHistory(ctx context.Context, loc string) (history.Store, error) {
	st, err := history.OpenReadOnly(ctx, loc)
	if errors.Is(err, history.ErrNoHistory) {
		return nil, fmt.Errorf("history %s: %w; qmlsab history add or report --history creates it", history.RedactURI(loc), err)
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", history.RedactURI(loc), err)
	}
	return history.Checked(st, knownMetrics()), nil
}

// knownMetrics are the metric names this qmlsab computes.
func knownMetrics() []string {
	var names []string
	for _, m := range metric.Registry {
		names = append(names, m.Name)
	}
	return names
}

// allowPartialFlag lets history add (and report --history) store a run
// that has not finished every planned trial.
var allowPartialFlag = &cli.BoolFlag{Name: "allow-partial", Usage: "store a run with unfinished trials (marked partial) instead of refusing it"}

// readyNight is nightly.Ready, an unfinished night's refusal saying how
// to finish it or store it anyway.
func readyNight(dirs []string, allowPartial bool) (partial bool, err error) {
	partial, err = nightly.Ready(dirs, allowPartial)
	if u := (*nightly.UnfinishedError)(nil); errors.As(err, &u) {
		err = fmt.Errorf("%w; finish it (qmlsab run --resume, or the missing shards) or store it as partial with --allow-partial", err)
	}
	return partial, err
}

// historyPreflight refuses, before anything is written, run folders that
// addToHistory would refuse for their state: still being written, or
// unfinished without --allow-partial (for report --history to check
// with its other flags).
func historyPreflight(c *cli.Context, dirs []string) error {
	for _, g := range nightly.Nights(dirs) {
		if _, err := readyNight(g, c.Bool("allow-partial")); err != nil {
			return err
		}
	}
	return nil
}

// addToHistory adds run folders to the history (the shard folders of one
// plan as one night), saying for each night whether it was new. A run
// still being written or unfinished is refused unless --allow-partial.
func addToHistory(ctx context.Context, c *cli.Context, loc string, dirs []string) error {
	l, err := labels(c)
	if err != nil {
		return err
	}
	groups := nightly.Nights(dirs)
	var runs []history.Run
	for _, g := range groups {
		partial, err := readyNight(g, c.Bool("allow-partial"))
		if err != nil {
			return err
		}
		r, err := nightly.FromRuns(g, l)
		if err != nil {
			return err
		}
		r.Partial = partial
		runs = append(runs, r)
	}
	// A signal (ctx's, interruptContext's) stops the adding between
	// nights, or rolls back the night being added: each night is in the
	// history whole or not at all.
	left := func(i int) string {
		var dirs []string
		for _, g := range groups[i:] {
			dirs = append(dirs, g...)
		}
		return strings.Join(dirs, " ")
	}
	st, err := history.Open(ctx, loc)
	if err != nil {
		err = fmt.Errorf("history %s: %w", history.RedactURI(loc), err)
		if ctx.Err() != nil {
			// Interrupted while opening (a signal can come before the
			// first night): say what was not added, as below.
			err = fmt.Errorf("%w; %s: not added", err, left(0))
		}
		return interruptedOr(ctx, err)
	}
	defer st.Close()
	notAdded := func(i int) error {
		return interruptedOr(ctx, fmt.Errorf("%s: not added", left(i)))
	}
	for i, r := range runs {
		if ctx.Err() != nil {
			return notAdded(i)
		}
		added, err := st.Add(ctx, r)
		if err != nil && ctx.Err() != nil {
			return notAdded(i) // the night's transaction rolled back
		}
		if err != nil {
			return interruptedOr(ctx, fmt.Errorf("%s: %w", strings.Join(groups[i], " "), err))
		}
		what := fmt.Sprintf("%s (%d trials", r.ID, len(r.Trials))
		if r.Partial {
			what += ", partial"
		}
		what += ")"
		from := strings.Join(groups[i], " ")
		if added {
			fmt.Fprintf(c.App.Writer, "history: added %s as night %s to %s\n", from, what, history.RedactURI(loc))
		} else {
			fmt.Fprintf(c.App.Writer, "history: %s (night %s) is already in %s; nothing changed\n", from, r.ID, history.RedactURI(loc))
		}
	}
	return nil
}

func historyCommand() *cli.Command {
	fail := func(cmd, format string, args ...any) error {
		return refusal("qmlsab history "+cmd)(format, args...)
	}
	return &cli.Command{
		Name:  "history",
		Usage: "the nightly pipeline's memory: runs kept night by night, change points, exports",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add run folders to the history (re-adding a run changes nothing)",
				ArgsUsage: "RUN_DIR...",
				Flags:     []cli.Flag{historyDBFlag(), renamedString("db"), labelFlag, allowPartialFlag},
				Action: func(c *cli.Context) error {
					dirs, err := trailingFlags(c)
					if err != nil {
						return fail("add", "%v", err)
					}
					if len(dirs) == 0 {
						return fail("add", "give at least one run folder")
					}
					ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
					defer stop()
					if err := addToHistory(ctx, c, c.String("history-db"), dirs); err != nil {
						return exitFor(err, fail("add", "%v", err))
					}
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "one line per night (--wide adds the labels)",
				Flags: append(append([]cli.Flag{}, filterFlags...), tableFlags()...),
				Action: func(c *cli.Context) error {
					format, err := tableFormatOf(c)
					if err != nil {
						return fail("list", "%v", err)
					}
					f, err := filter(c)
					if err != nil {
						return fail("list", "%v", err)
					}
					st, err := openHistory(c.Context, c.String("history-db"))
					if err != nil {
						return fail("list", "%v", err)
					}
					defer st.Close()
					runs, err := st.List(c.Context, f)
					if err != nil {
						return fail("list", "%v", err)
					}
					return nightly.ListTable(runs).Write(c.App.Writer, format)
				},
			},
			{
				Name:  "detect",
				Usage: "tonight's check (the newest night against the stable nights before it) and change points over the nights (E-Divisive with means); exit 4 when the newest night regresses",
				Flags: append(append([]cli.Flag{}, filterFlags...),
					&cli.StringSliceFlag{Name: "metric", Usage: "a `METRIC` to examine (default: every metric with a better direction); repeatable"},
					armsToExamineFlag("examine"), renamedList("arm"),
					&cli.BoolFlag{Name: "effect", Usage: "also examine each arm's nightly effect against the baseline arm (Hodges-Lehmann shift)"},
					&cli.IntFlag{Name: "recent", Value: 1, Usage: "a regression starting in the newest `K` nights fails (exit 4)"},
					&cli.StringFlag{Name: "format", Value: "text", Usage: "text, md (a block for a pull request or chat) or json"},
					wideFlag(),
					&cli.IntFlag{Name: "permutations", Value: changepoint.DefaultPermutations, Usage: "shuffles per test (at most 100000)"},
					&cli.IntFlag{Name: "min-segment", Value: changepoint.DefaultMinSegment, Usage: "fewest nights a segment may hold"},
					&cli.Uint64Flag{Name: "seed", Value: changepoint.DefaultSeed, Usage: "random seed of the shuffles (results are reproducible)"},
					&cli.IntFlag{Name: "baseline-nights", Value: nightly.DefaultBaselineNights, Usage: "tonight's check: the newest night's trials against those of the last `K` nights after the latest change point"},
					&cli.Float64Flag{Name: "alpha", Value: nightly.DefaultAlpha, Usage: "significance level of detect's tests: the change points' permutation test, and tonight's check family-wise over the night's (arm, metric) pairs (Holm)"},
					renamedFloat("p"),
					&cli.Float64Flag{Name: "min-shift", Value: nightly.DefaultMinShift, Usage: "tonight's check: smallest shift, relative to the baseline median, that fails the night"},
					&cli.BoolFlag{Name: "no-tonight", Usage: "skip tonight's check (change points alone decide)"},
					&cli.StringFlag{Name: "night", EnvVars: []string{store.RunIDEnv}, Usage: "tonight's run id, or the stamp it was made under: exit 1 when the newest night is another (tonight's run never reached the history)"},
				),
				Action: func(c *cli.Context) error {
					f, err := filter(c)
					if err != nil {
						return fail("detect", "%v", err)
					}
					if c.Int("recent") < 1 {
						return fail("detect", "--recent %d: at least 1", c.Int("recent"))
					}
					if k := c.Int("baseline-nights"); k < 1 {
						return fail("detect", "--baseline-nights %d: at least 1", k)
					}
					if a := c.Float64("alpha"); a <= 0 || a >= 1 {
						return fail("detect", "--alpha %v: want a level between 0 and 1", a)
					}
					if m := c.Float64("min-shift"); m < 0 {
						return fail("detect", "--min-shift %v: want 0 or more", m)
					}
					format := c.String("format")
					if format != "text" && format != "md" && format != "json" {
						return fail("detect", "--format %q: want text, md or json", format)
					}
					if n := c.Int("permutations"); n > changepoint.MaxPermutations {
						return fail("detect", "--permutations %d: at most %d (p-values down to 1/(N+1))", n, changepoint.MaxPermutations)
					}
					st, err := openHistory(c.Context, c.String("history-db"))
					if err != nil {
						return fail("detect", "%v", err)
					}
					defer st.Close()
					opts := nightly.DetectOptions{Metrics: c.StringSlice("metric"), Arms: commaList(c, "arms"), Effect: c.Bool("effect"),
						Recent: c.Int("recent"), Filter: f, ChangePoint: changepoint.Options{PValue: c.Float64("alpha"),
							Permutations: c.Int("permutations"), MinSegment: c.Int("min-segment"), Seed: c.Uint64("seed")},
						Tonight: nightly.TonightOptions{Off: c.Bool("no-tonight"), BaselineNights: c.Int("baseline-nights"), Alpha: c.Float64("alpha"),
							MinShift: c.Float64("min-shift")}}
					if opts.Tonight.MinShift == 0 {
						opts.Tonight.MinShift = -1 // --min-shift 0: no minimum (the options' zero is the default)
					}
					res, err := nightly.Detect(c.Context, st, opts)
					if err != nil {
						return fail("detect", "%v", err)
					}
					if night := c.String("night"); night != "" && !opts.Tonight.Off && res.Tonight.RunID != night && !store.RunIDOf(res.Tonight.RunID, night) {
						newest := "the history holds no night"
						if res.Nights > 0 {
							newest = fmt.Sprintf("the newest night is %s", res.Tonight.RunID)
						}
						return fail("detect", "--night %s ($%s): %s, not tonight's: tonight's run never reached the history (did it fail before report --history?)",
							night, store.RunIDEnv, newest)
					}
					switch format {
					case "md":
						err = nightly.WriteMarkdown(c.App.Writer, res, opts.Recent)
					case "json":
						err = nightly.WriteJSON(c.App.Writer, res)
					default:
						err = nightly.WriteText(c.App.Writer, res, opts.Recent, c.Bool("wide"))
					}
					if err != nil {
						return err
					}
					if res.Regressed() {
						return cli.Exit("", exitRegression)
					}
					if res.NoData() {
						return fail("detect", "night %d (%s) has no valid trial of %s: a night that measured nothing never passes",
							res.Tonight.Night, res.Tonight.RunID, strings.Join(res.Tonight.NoData, ", "))
					}
					return nil
				},
			},
			{
				Name:  "export",
				Usage: "the history in another tool's format: otava (Apache Otava's JSON import)",
				Flags: append(append([]cli.Flag{}, filterFlags...),
					&cli.StringFlag{Name: "format", Value: "otava", Usage: "otava"},
					armsToExamineFlag("export; Otava reads one series per file"), renamedList("arm"),
					&cli.StringSliceFlag{Name: "metric", Usage: "export only this `METRIC`; repeatable (default: all)"},
					&cli.StringFlag{Name: "out", Usage: "write to `FILE` (default: standard output): a new file or an export qmlsab wrote, never the history"},
				),
				Action: func(c *cli.Context) error {
					if c.String("format") != "otava" {
						return fail("export", "--format %q: want otava", c.String("format"))
					}
					f, err := filter(c)
					if err != nil {
						return fail("export", "%v", err)
					}
					if out := c.String("out"); out != "" {
						if err := checkOutput(out, outputfile.OtavaJSON, c.String("history-db")); err != nil {
							return fail("export", "--out %v", err)
						}
					}
					st, err := openHistory(c.Context, c.String("history-db"))
					if err != nil {
						return fail("export", "%v", err)
					}
					defer st.Close()
					runs, err := st.Runs(c.Context, f)
					if err != nil {
						return fail("export", "%v", err)
					}
					if err := history.CheckNames(runs, commaList(c, "arms"), c.StringSlice("metric"), knownMetrics()); err != nil {
						return fail("export", "%v", err)
					}
					var b strings.Builder
					if err := history.ExportOtava(&b, runs, history.OtavaOptions{Arms: commaList(c, "arms"), Metrics: c.StringSlice("metric")}); err != nil {
						return fail("export", "%v", err)
					}
					if out := c.String("out"); out != "" {
						return store.WriteFileAtomic(out, []byte(b.String()))
					}
					_, err = fmt.Fprint(c.App.Writer, b.String())
					return err
				},
			},
		},
	}
}

func trendCommand() *cli.Command {
	return &cli.Command{
		Name:  "trend",
		Usage: "trend.html: nightly medians with their range, change points and the A/B effect, for each metric and arm",
		Flags: append(append([]cli.Flag{}, filterFlags...),
			&cli.StringFlag{Name: "out", Value: filepath.Join("results", "trend.html"), Usage: "the page's `FILE`: a new file or a page qmlsab wrote, never the history"},
			&cli.StringFlag{Name: "results", Value: "results", Usage: "the `DIR` holding run folders (nights link to their report.html)"},
			&cli.StringSliceFlag{Name: "metric", Usage: "a `METRIC` to show (default: the key metrics); repeatable"},
			armsToExamineFlag("show"), renamedList("arm"),
		),
		Action: func(c *cli.Context) error {
			fail := refusal("qmlsab trend")
			f, err := filter(c)
			if err != nil {
				return fail("%v", err)
			}
			if err := checkOutput(c.String("out"), outputfile.HTML, c.String("history-db")); err != nil {
				return fail("--out %v", err)
			}
			st, err := openHistory(c.Context, c.String("history-db"))
			if err != nil {
				return fail("%v", err)
			}
			defer st.Close()
			if err := os.MkdirAll(filepath.Dir(c.String("out")), 0o755); err != nil {
				return fail("--out: %v", err)
			}
			opts := nightly.TrendOptions{Metrics: c.StringSlice("metric"), Arms: commaList(c, "arms"), Filter: f, RunsRoot: c.String("results")}
			if err := nightly.WriteTrend(c.Context, st, c.String("out"), opts); err != nil {
				return fail("%v", err)
			}
			fmt.Fprintf(c.App.Writer, "trend: %s\n", c.String("out"))
			return nil
		},
	}
}
