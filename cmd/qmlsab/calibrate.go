package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// calibrateCommand prints the calibration table: the spill_to_disk storm
// against built-in arms on the virtual engine, beside the figures the
// sweeper investigation observed on real servers.
func calibrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "calibrate",
		Usage: "run the built-in arms on the model in virtual time and print its figures beside the investigation's (a simulation)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arms", Value: "A,D,E,F,G", Usage: "built-in arms to run, comma-separated"},
			&cli.IntFlag{Name: "seeds", Value: 5, Usage: "trials per arm (seeds --seed, --seed+1, ...)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "first seed; a seed makes a trial deterministic"},
			&cli.Float64Flag{Name: "storm-rate", Usage: "storm queries per second (default: the workload's)"},
			&cli.DurationFlag{Name: "storm", Usage: "storm phase length (default: the workload's)"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("seeds") < 1 {
				return cli.Exit("qmlsab calibrate: --seeds must be at least 1", 1)
			}
			var list []arms.Arm
			for _, n := range strings.Split(c.String("arms"), ",") {
				a, ok := arms.Lookup(strings.TrimSpace(n))
				if !ok {
					return cli.Exit(fmt.Sprintf("qmlsab calibrate: --arms: unknown arm %q (built-in: %s)", n, "A, D, E, F, G"), 1)
				}
				list = append(list, a)
			}
			cfg := virtual.DefaultConfig(c.Uint64("seed"))
			if r := c.Float64("storm-rate"); r > 0 {
				cfg.Workload.StormRate = r
			}
			if d := c.Duration("storm"); d > 0 {
				cfg.Workload.Phases.Storm = d
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			trials, err := virtual.RunMatrix(ctx, cfg, list, c.Int("seeds"))
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
