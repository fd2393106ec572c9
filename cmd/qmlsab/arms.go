package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/mongosim/model"
)

var armsFileFlag = &cli.StringFlag{Name: "arms-file", Usage: "YAML file of arms (its arms override built-ins of the same name)"}

// loadArms returns the arms of --arms-file (none without it).
func loadArms(c *cli.Context) ([]arms.Arm, error) {
	path := c.String("arms-file")
	if path == "" {
		return nil, nil
	}
	list, err := arms.LoadFile(path)
	if err != nil {
		return nil, cli.Exit(fmt.Sprintf("qmlsab %s: --arms-file: %v", commandPath(c), err), 1)
	}
	return list, nil
}

// allArms is the file's arms followed by the built-ins they do not override.
func allArms(fromFile []arms.Arm) []arms.Arm {
	out := append([]arms.Arm(nil), fromFile...)
	for _, b := range arms.Builtin() {
		overridden := false
		for _, f := range fromFile {
			overridden = overridden || f.Name == b.Name
		}
		if !overridden {
			out = append(out, b)
		}
	}
	return out
}

func armsCommand() *cli.Command {
	return &cli.Command{
		Name:  "arms",
		Usage: "list and show the arms an experiment can compare",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "a table of the built-in arms and those of --arms-file (qmlsab arms show NAME for one arm in full)",
				Flags: append([]cli.Flag{armsFileFlag}, tableFlags()...),
				Action: func(c *cli.Context) error {
					format, err := tableFormatOf(c)
					if err != nil {
						return cli.Exit("qmlsab arms list: "+err.Error(), 1)
					}
					fromFile, err := loadArms(c)
					if err != nil {
						return err
					}
					t := armsTable(allArms(fromFile))
					if err := t.Write(c.App.Writer, format); err != nil {
						return err
					}
					if format.Machine == "" && !format.Wide {
						fmt.Fprintln(c.App.Writer, "(--wide: addresses, parameters, actors; qmlsab arms show NAME: one arm in full)")
					}
					return nil
				},
			},
			{
				Name:      "show",
				Usage:     "an arm, resolved, as YAML (credentials redacted)",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{armsFileFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cli.Exit("qmlsab arms show: give one arm name, after the flags (qmlsab arms show --arms-file arms.yaml D)", 1)
					}
					fromFile, err := loadArms(c)
					if err != nil {
						return err
					}
					sel, err := arms.Select([]string{c.Args().First()}, fromFile)
					if err != nil {
						return cli.Exit("qmlsab arms show: "+err.Error(), 1)
					}
					out, err := arms.Marshal(sel)
					if err != nil {
						return err
					}
					if _, err := c.App.Writer.Write(out); err != nil {
						return err
					}
					if !sel[0].Embedded() {
						return nil
					}
					if _, err := model.ParamsFrom(sel[0].SetParameters); err != nil {
						return cli.Exit(fmt.Sprintf("qmlsab arms show: arm %s: %v", sel[0].Name, err), 1)
					}
					return writeParamTable(c.App.Writer, sel[0].SetParameters)
				},
			},
		},
	}
}

// armsTable is arms list's table: name, target, build and description
// fit a terminal; the address, parameters and actors are wide columns.
func armsTable(list []arms.Arm) *texttable.Table {
	t := &texttable.Table{Columns: []texttable.Column{
		{Title: "NAME", Key: "name"}, {Title: "TARGET", Key: "target"}, {Title: "BUILD", Key: "build"},
		{Title: "DESCRIPTION", Key: "description", Wrap: true},
		{Title: "ADDRESS", Key: "address", Wide: true}, {Title: "PARAMETERS", Key: "parameters", Wide: true},
		{Title: "ACTORS", Key: "actors", Wide: true},
	}}
	for _, a := range list {
		a = a.Redacted()
		var params []string
		for k, v := range a.SetParameters {
			params = append(params, k+"="+v)
		}
		sort.Strings(params)
		var actors []string
		for _, act := range a.Actors {
			switch {
			case act.KillOp != nil:
				actors = append(actors, fmt.Sprintf("killop(rss>%g%%, %s, %s)", act.KillOp.RSSHighPercent, act.KillOp.Interval, scope(act.KillOp.AppName, act.KillOp.AnyApp)))
			case act.Exec != nil:
				actors = append(actors, "exec("+act.Exec.Command[0]+")")
			}
		}
		address := a.URI
		if address == "" {
			address = a.Mongod
		}
		t.Add(texttable.Text(a.Name), texttable.Text(a.Target), texttable.Optional(a.Build), texttable.Text(a.Description), texttable.Optional(address),
			texttable.Cell{Text: dashIfEmpty(strings.Join(params, " ")), Value: orEmpty(a.SetParameters)},
			texttable.Cell{Text: dashIfEmpty(strings.Join(actors, " ")), Value: orEmpty(actors)})
	}
	return t
}

// orEmpty is v for JSON, with a nil map or slice as an empty one.
func orEmpty(v any) any {
	switch x := v.(type) {
	case map[string]string:
		if x == nil {
			return map[string]string{}
		}
	case []string:
		if x == nil {
			return []string{}
		}
	}
	return v
}

func scope(app string, any bool) string {
	if any {
		return "any app"
	}
	return "app " + app
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// commandPath is the command being run, "arms list" say, for messages.
func commandPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append([]string{x.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// writeParamTable lists, as YAML comments, every server parameter the
// embedded model obeys: its type as mongod declares it, default, bounds,
// the arm's value, and what it does.
func writeParamTable(w io.Writer, set map[string]string) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "# server parameters of the embedded model (set with setParameters)")
	fmt.Fprintln(tw, "#   NAME\tTYPE\tDEFAULT\tRANGE\tTHIS ARM\tMEANING")
	for _, s := range model.ParamSpecs {
		rng, val := "-", "-"
		if s.HasBounds {
			lo, hi := any(s.Min), any(s.Max)
			if s.Type == model.TypeInt || s.Type == model.TypeLong {
				lo, hi = int64(s.Min), int64(s.Max)
			}
			rng = fmt.Sprintf("[%s, %s]", model.FormatValue(lo), model.FormatValue(hi))
		}
		if v, ok := set[s.Name]; ok {
			val = v
		}
		if !s.Runtime {
			rng += " (startup)"
		}
		fmt.Fprintf(tw, "#   %s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Type, model.FormatValue(s.Default), rng, val, s.Doc)
	}
	return tw.Flush()
}
