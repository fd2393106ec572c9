// Command qmlsab is the A/B harness for MongoDB query memory load shedding.
// This file only wires subcommands; each lives in its own package.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/mongosim"
)

// version is set by -ldflags "-X main.version=..."; otherwise it comes from
// the module's build info.
var version = ""

func toolVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// versionLine is the tool's version as `qmlsab version` and `qmlsab
// --version` both print it, after "qmlsab version ".
func versionLine() string {
	return fmt.Sprintf("%s (mongosim %s, wire %d)", toolVersion(), mongosim.Version, mongosim.MaxWireVersion)
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		// Most cli.Exit errors print themselves and exit with their code
		// inside Run; one that reaches here (an After hook's) has not.
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if err.Error() != "" {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "qmlsab:", err)
		os.Exit(exitFailed)
	}
}

// newApp builds the command tree; tests run it with their own writers.
func newApp() *cli.App {
	app := &cli.App{
		Name:    "qmlsab",
		Usage:   "A/B-test MongoDB query memory load shedding",
		Version: versionLine(),
		// Values are taken as written: --label 'msg=fix a,b' is one
		// label; a flag is repeated for more values.
		DisableSliceFlagSeparator: true,
		CustomAppHelpTemplate:     cli.AppHelpTemplate + "\n" + exitCodeHelp() + "\n",
		Commands: []*cli.Command{
			{
				Name:  "version",
				Usage: "print the tool version",
				Action: func(c *cli.Context) error {
					cli.ShowVersion(c) // what --version prints
					return nil
				},
			},
			simCommand(),
			armsCommand(),
			workloadsCommand(),
			reportCommand(),
			runCommand(),
			mergeCommand(),
			calibrateCommand(),
			sweepCommand(),
			historyCommand(),
			trendCommand(),
			importCommand(),
			ftdcCommand(),
		},
	}
	installFlagHelp()
	installHelpWrap()
	enforceUsage(app)
	return app
}

// interruptedExit is sim's exit: 130 saying so when ctx (interruptContext's)
// was cancelled by a signal, else err.
func interruptedExit(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	msg := fmt.Sprintf("qmlsab sim: %v; the replica set is stopped", context.Cause(ctx))
	if err != nil {
		msg = fmt.Sprintf("qmlsab sim: %v (%v)", context.Cause(ctx), err)
	}
	return cli.Exit(msg, exitInterrupted)
}

// simCommand starts the embedded simulator as a replica set on loopback and
// keeps it up until interrupted, so any client can be pointed at it.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "run an in-process mongosim replica set (a simulation, not a real mongod) until Ctrl-C",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "members", Value: 3, Usage: "number of members"},
			&cli.DurationFlag{Name: "election-timeout", Value: mongosim.DefaultElectionTimeout, Usage: "settings.electionTimeoutMillis (at least 1ms)"},
			&cli.DurationFlag{Name: "for", Usage: "stop after this long, more than 0 (default: until interrupted)"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("members") < 1 || c.Int("members") > 7 {
				return cli.Exit("qmlsab sim: --members must be between 1 and 7", 1)
			}
			// A replica set's electionTimeoutMillis is a positive number of
			// milliseconds: less would be taken as the 10 s default.
			if d := c.Duration("election-timeout"); d < time.Millisecond {
				return cli.Exit(fmt.Sprintf("qmlsab sim: --election-timeout %v: must be at least 1ms (settings.electionTimeoutMillis is a positive number of milliseconds)", d), 1)
			}
			if d := c.Duration("for"); c.IsSet("for") && d <= 0 {
				return cli.Exit(fmt.Sprintf("qmlsab sim: --for %v: must be more than 0 (leave it out to run until interrupted)", d), 1)
			}
			ctx, stop := interruptContext(c.Context, c.App.ErrWriter)
			defer stop()
			start, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			rs, err := mongosim.StartReplicaSet(start, mongosim.ReplicaSetOptions{Members: c.Int("members"), ElectionTimeout: c.Duration("election-timeout")})
			if err != nil {
				return interruptedExit(ctx, fmt.Errorf("starting mongosim: %w", err))
			}
			up := ctx
			if d := c.Duration("for"); d > 0 { // counted from when the set is up
				var cancel context.CancelFunc
				up, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			fmt.Fprintf(c.App.Writer, "mongosim replica set (SIMULATED mongod %s) is up; primary is member %d\n", mongosim.Version, rs.Primary())
			fmt.Fprintf(c.App.Writer, "  %s\n", rs.URI())
			fmt.Fprintf(c.App.Writer, "  members: %s\n", strings.Join(rs.Hosts(), " "))
			<-up.Done()
			rs.Close()
			// Stopped by a signal (Ctrl-C), not by --for: interrupted,
			// as every command a signal stops exits.
			return interruptedExit(ctx, nil)
		},
	}
}
