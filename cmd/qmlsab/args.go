package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// trailingFlags returns a command's positional arguments and applies the
// flags written after them (qmlsab report DIR --gates X): urfave/cli v2
// stops parsing flags at the first positional argument and has no option
// to go on, so this one helper does it for every command that takes
// folders.
func trailingFlags(c *cli.Context) ([]string, error) {
	var pos []string
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !known(c, name) {
			return nil, fmt.Errorf("unknown flag %s", a)
		}
		if !hasValue {
			if isBool(c, name) {
				value = "true"
			} else {
				if i+1 >= len(rest) {
					return nil, fmt.Errorf("flag %s needs a value", a)
				}
				i++
				value = rest[i]
			}
		}
		if err := c.Set(name, value); err != nil {
			return nil, fmt.Errorf("flag %s: %v", a, err)
		}
	}
	return pos, nil
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
