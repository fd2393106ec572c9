package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit codes are a contract with whatever runs qmlsab (a CI job, a
// script): each code has one meaning, the same for every command.
// exitRegression (4) is history detect's, declared with it.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitGateFailed  = 3
	exitInterrupted = 130
)

// exitCodeRow is one row of the contract.
type exitCodeRow struct {
	Code    int
	Meaning string
}

// exitCodes is the contract as data: `qmlsab --help` prints it and a test
// holds the README's table to it.
var exitCodes = []exitCodeRow{
	{exitOK, "ok"},
	{exitFailed, "bad input (a value that parses but is wrong: an unknown arm, a missing file, a malformed label) or a failed run (history detect: tonight's run is not the newest night, or ran an arm without a valid trial)"},
	{exitUsage, "usage: an unknown command or flag, or a flag without its value; one line names the closest match"},
	{exitGateFailed, "a gate failed or could not be judged (report --gates fails closed: a gate with no data, an arm without a valid trial, a run without a finished trial, an incomplete run without --allow-partial; the gates of a predicted arm decide only with --gate-predictions)"},
	{exitRegression, "a regression (history detect)"},
	{exitInterrupted, "interrupted by SIGINT, SIGTERM, SIGHUP, or SIGPIPE (its output closed); the finished trials are kept (run --resume completes the run), partial output removed; a second signal exits at once, its clean-up unfinished"},
}

// exitCodeHelp is the contract as the root command's help prints it.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("EXIT CODES:\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "   %-3d  %s\n", e.Code, e.Meaning)
	}
	return strings.TrimRight(b.String(), "\n")
}

// usageError is a command line that does not parse, said in one line:
// what was not understood and, when one is close (meant, a suggestion of
// hints.go), what was meant; otherwise what is known.
func usageError(cmdPath, what, given, meant string, candidates []string) error {
	msg := fmt.Sprintf("%s: unknown %s %q", cmdPath, what, given)
	if meant != "" {
		msg += fmt.Sprintf("; did you mean %q?", meant)
	} else if len(candidates) > 0 {
		msg += fmt.Sprintf(" (known: %s)", strings.Join(candidates, ", "))
	}
	return cli.Exit(msg, exitUsage)
}

// commandNames are the names a command's subcommands answer to.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return names
}

// dashed is a flag as written on a command line: -n for a one-letter
// name, --arms otherwise (the flag package writes every name with one
// dash).
func dashed(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagNames are a command's flags as written on a command line.
func flagNames(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		for _, n := range f.Names() {
			names = append(names, dashed(n))
		}
	}
	return names
}

// enforceUsage makes every command of the tree answer a command line it
// cannot parse with exit 2 and one line: an unknown subcommand (qmlsab
// reprot, qmlsab history lst), an unknown flag wherever it is written, a
// flag without its value. It is applied once to the whole tree, so
// commands added later are covered without code of their own.
func enforceUsage(app *cli.App) {
	app.OnUsageError = flagUsageError(app.Name, func() []cli.Flag { return app.Flags })
	app.Action = unknownCommand(app.Name, true, func() []*cli.Command { return app.Commands })
	// qmlsab help reprot: the library's help command reports a topic it
	// does not know only through CommandNotFound, which cannot fail the
	// command; the miss is kept and returned once the command is done.
	var helpMiss error
	app.CommandNotFound = func(c *cli.Context, name string) {
		path := app.Name
		var names []string
		if c.Command != nil && c.Command.Name != app.Name {
			path = c.Command.HelpName
			names = commandNames(c.Command.Subcommands)
		} else {
			names = commandNames(app.Commands)
		}
		helpMiss = usageError(path, "help topic", name, suggestName(names, name), names)
	}
	app.After = func(*cli.Context) error { return helpMiss }
	for _, c := range app.Commands {
		enforceCommandUsage(c, app.Name+" "+c.Name)
	}
}

func enforceCommandUsage(c *cli.Command, path string) {
	c.OnUsageError = flagUsageError(path, func() []cli.Flag { return c.Flags })
	switch {
	case len(c.Subcommands) > 0 && c.Action == nil:
		c.Action = unknownCommand(path, false, func() []*cli.Command { return c.Subcommands })
	case c.Action != nil:
		c.Action = withTrailingFlags(path, c.Action)
	}
	for _, s := range c.Subcommands {
		enforceCommandUsage(s, path+" "+s.Name)
	}
}

// unknownCommand is the action of a command that only groups others:
// its help without arguments, a usage error for a name it does not have.
func unknownCommand(path string, root bool, subcommands func() []*cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if !c.Args().Present() {
			if root {
				return cli.ShowAppHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
		names := commandNames(subcommands())
		return usageError(path, "command", c.Args().First(), suggestName(names, c.Args().First()), names)
	}
}

// flagUsageError turns the flag package's parse errors ("flag provided
// but not defined: -arsm") into the one-line usage error.
func flagUsageError(path string, flags func() []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			return usageError(path, "flag", dashed(name), suggestFlag(flags(), name), flagNames(flags()))
		}
		if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
			msg = fmt.Sprintf("flag %s needs a value", dashed(name))
		}
		return cli.Exit(fmt.Sprintf("%s: %s", path, msg), exitUsage)
	}
}

// withTrailingFlags applies the flags written after a command's
// positional arguments (qmlsab report DIR --gates X) before the action
// runs, so a mistake among them is a usage error like one before them.
func withTrailingFlags(path string, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		err := applyTrailingFlags(c)
		if err == nil {
			err = applyRenamedFlags(c, path)
		}
		if err != nil {
			var u *unknownFlagError
			if errors.As(err, &u) {
				return usageError(path, "flag", u.flag, suggestFlag(c.Command.Flags, u.flag), flagNames(c.Command.Flags))
			}
			return cli.Exit(fmt.Sprintf("%s: %v", path, err), exitUsage)
		}
		return action(c)
	}
}
