package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/store"
)

// Flags written after a command's positional arguments (qmlsab report DIR
// --gates X): urfave/cli v2 stops parsing flags at the first positional
// argument and has no option to go on, so every command's action is
// wrapped (enforceUsage) to apply them first, and trailingFlags gives an
// action its positional arguments without them.

// unknownFlagError is a trailing flag the command does not have.
type unknownFlagError struct{ flag string }

func (e *unknownFlagError) Error() string { return "unknown flag " + e.flag }

// flagAssignment is one trailing flag and its value.
type flagAssignment struct{ flag, name, value string }

// scanTrailing splits a command's arguments into positional ones and the
// flags written among them; "--" ends the flags.
func scanTrailing(c *cli.Context) ([]string, []flagAssignment, error) {
	var pos []string
	var sets []flagAssignment
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !known(c, name) {
			return nil, nil, &unknownFlagError{flag: a}
		}
		if !hasValue {
			if isBool(c, name) {
				value = "true"
			} else {
				if i+1 >= len(rest) {
					return nil, nil, fmt.Errorf("flag %s needs a value", a)
				}
				i++
				value = rest[i]
			}
		}
		sets = append(sets, flagAssignment{flag: a, name: name, value: value})
	}
	return pos, sets, nil
}

// applyTrailingFlags sets the flags written after positional arguments.
func applyTrailingFlags(c *cli.Context) error {
	_, sets, err := scanTrailing(c)
	if err != nil {
		return err
	}
	for _, s := range sets {
		if err := c.Set(s.name, s.value); err != nil {
			return fmt.Errorf("flag %s: %v", s.flag, err)
		}
	}
	return nil
}

// trailingFlags returns a command's positional arguments; the flags among
// them have been applied before the action ran.
func trailingFlags(c *cli.Context) ([]string, error) {
	pos, _, err := scanTrailing(c)
	return pos, err
}

func known(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		if contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func isBool(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		if _, ok := f.(*cli.BoolFlag); ok && contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// flagsOnly refuses, through fail, the positional arguments of a command
// that takes flags only.
func flagsOnly(c *cli.Context, fail func(format string, args ...any) error) error {
	if c.Args().Len() > 0 {
		return fail("unexpected argument %q (flags only)", c.Args().First())
	}
	return nil
}

// outFolder is the folder --out names or, without it, a new folder of kind
// under results/ (shardCount > 0: of one shard of a plan).
func outFolder(c *cli.Context, kind store.FolderKind, shardIndex, shardCount int) string {
	if dir := c.String("out"); dir != "" {
		return dir
	}
	return store.NewRunDir(store.ResultsRoot, kind, time.Now(), shardIndex, shardCount)
}
