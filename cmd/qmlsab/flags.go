package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// One name per concept: a flag that was renamed keeps its old spelling as
// a hidden flag for a release. Using it prints one deprecation line on
// stderr and sets the new flag (unless that is given too, which wins).
// renamedFlags maps the old name to the new; the hidden flags are made by
// renamedString, renamedInt, renamedFloat and renamedList so that help
// shows only the new names. An old name is an old spelling only where a
// command has it hidden beside its new flag (import ftdc's --arm is its
// own flag).
var renamedFlags = map[string]string{
	"db":    "history-db", // history add/list/detect/export, trend: report's name
	"seeds": "n",          // calibrate: run's and sweep's name for trials per arm
	"arm":   "arms",       // history detect/export, trend: run's comma-separated list (--arm D --arm E is --arms D,E)
	"p":     "alpha",      // history detect: one significance level, report's name
}

func renamedUsage(old string) string {
	return "deprecated spelling of " + dashed(renamedFlags[old])
}

// renamedString is the hidden old spelling of a string flag.
func renamedString(old string) cli.Flag {
	return &cli.StringFlag{Name: old, Hidden: true, Usage: renamedUsage(old)}
}

// renamedInt is the hidden old spelling of an int flag.
func renamedInt(old string) cli.Flag {
	return &cli.IntFlag{Name: old, Hidden: true, Usage: renamedUsage(old)}
}

// renamedFloat is the hidden old spelling of a float flag.
func renamedFloat(old string) cli.Flag {
	return &cli.Float64Flag{Name: old, Hidden: true, Usage: renamedUsage(old)}
}

// renamedList is the hidden old spelling, repeated once per value, of a
// comma-separated list flag.
func renamedList(old string) cli.Flag {
	return &cli.StringSliceFlag{Name: old, Hidden: true, Usage: renamedUsage(old)}
}

// applyRenamedFlags carries an old spelling's value to its new flag, with
// a line on stderr saying what to write instead.
func applyRenamedFlags(c *cli.Context, path string) error {
	for _, f := range c.Command.Flags {
		old := f.Names()[0]
		name, ok := renamedFlags[old]
		if vf, isVisible := f.(cli.VisibleFlag); !ok || !c.IsSet(old) || (isVisible && vf.IsVisible()) {
			continue
		}
		fmt.Fprintf(c.App.ErrWriter, "%s: %s is deprecated and will be removed; use %s\n", path, dashed(old), dashed(name))
		if c.IsSet(name) {
			continue
		}
		value := fmt.Sprint(c.Value(old))
		if _, list := f.(*cli.StringSliceFlag); list {
			value = strings.Join(c.StringSlice(old), ",")
		}
		if err := c.Set(name, value); err != nil {
			return fmt.Errorf("flag %s: %w", dashed(old), err)
		}
	}
	return nil
}

// defaultText is the default help shows for a flag: the one its usage
// states in words ("(default: every CPU)") when it does, else the
// library's rendering of its zero-or-set value; "" when there is none.
func defaultText(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	if _, in, ok := strings.Cut(df.GetUsage(), "(default: "); ok {
		depth := 0
		for i, r := range in {
			switch r {
			case '(':
				depth++
			case ')':
				if depth == 0 {
					return in[:i]
				}
				depth--
			}
		}
	}
	if strings.Contains(df.GetUsage(), "(required") {
		return "required"
	}
	if bf, ok := f.(*cli.BoolFlag); ok && !bf.Value {
		return "false"
	}
	return df.GetDefaultText()
}

// statesDefault says whether a flag's usage says its default (or that it
// is required) in words, so help must not add the library's "(default: 0)".
func statesDefault(f cli.Flag) bool {
	df, ok := f.(cli.DocGenerationFlag)
	return ok && (strings.Contains(df.GetUsage(), "(default: ") || strings.Contains(df.GetUsage(), "(required"))
}

// installFlagHelp makes help print each flag's default once: a flag whose
// usage states its default in words loses the library's own
// "(default: …)", which for such flags is the meaningless zero value.
func installFlagHelp() {
	if flagStringerInstalled {
		return
	}
	flagStringerInstalled = true
	library := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		line := library(f)
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || !statesDefault(f) {
			return line
		}
		if s := df.GetDefaultText(); s != "" {
			if i := strings.LastIndex(line, " (default: "+s+")"); i >= 0 {
				line = line[:i] + line[i+len(" (default: "+s+")"):]
			}
		}
		return line
	}
}

var flagStringerInstalled bool

// commaList is a comma-separated flag's items (--arms D,E, --paths, --format
// html,json), each trimmed, the empty ones dropped.
func commaList(c *cli.Context, flag string) []string {
	var items []string
	for _, item := range strings.Split(c.String(flag), ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
