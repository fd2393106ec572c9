package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim/calibrate"
)

// calibrateMain runs `mongosim calibrate`: the spill_to_disk storm against
// the built-in arms in virtual time, printed beside the seed's figures.
func calibrateMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mongosim calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	armNames := fs.String("arms", "A,D,E,F,G", "built-in arms to run, comma-separated")
	seeds := fs.Int("seeds", 5, "trials per arm (seeds simSeed, simSeed+1, ...)")
	simSeed := fs.Uint64("simSeed", 1, "first seed; a seed makes a trial deterministic")
	rate := fs.Float64("stormRate", 0, "storm queries per second (0: the workload's default)")
	storm := fs.Duration("storm", 0, "storm phase length (0: the workload's default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *seeds < 1 {
		fmt.Fprintln(stderr, "mongosim calibrate: --seeds must be at least 1")
		return 2
	}
	var list []arms.Arm
	for _, n := range strings.Split(*armNames, ",") {
		a, ok := arms.Lookup(strings.TrimSpace(n))
		if !ok {
			fmt.Fprintf(stderr, "mongosim calibrate: --arms: unknown arm %q (built-in: A, D, E, F, G)\n", n)
			return 2
		}
		list = append(list, a)
	}
	cfg := calibrate.DefaultConfig(*simSeed)
	if *rate > 0 {
		cfg.Workload.StormRate = *rate
	}
	if *storm > 0 {
		cfg.Workload.Phases.Storm = *storm
	}
	start := time.Now()
	trials, err := calibrate.RunMatrix(cfg, list, *seeds)
	if err != nil {
		fmt.Fprintf(stderr, "mongosim calibrate: %v\n", err)
		return 1
	}
	calibrate.WriteTable(stdout, trials)
	ph := cfg.Workload.Phases
	fmt.Fprintf(stdout, "\n%d trials of %v model time (warmup %v, storm %v, recovery %v) in %v wall\n",
		len(trials), ph.Total(), ph.Warmup, ph.Storm, ph.Recovery, time.Since(start).Round(time.Millisecond))
	return 0
}
