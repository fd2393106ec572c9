package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/workload"
)

// resolveWorkload is a built-in workload's name or a workload YAML file.
func resolveWorkload(arg string) (workload.Spec, error) {
	if spec, ok := workload.Builtin(arg); ok {
		return spec, nil
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return workload.LoadFile(arg)
	}
	return workload.Spec{}, fmt.Errorf("unknown workload %q (built-in: %s; or a path to a workload YAML file)", arg, strings.Join(workload.Names(), ", "))
}

func workloadsCommand() *cli.Command {
	return &cli.Command{
		Name:  "workloads",
		Usage: "list and show the workloads an experiment can run",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "the built-in workloads",
				Flags: tableFlags(),
				Action: func(c *cli.Context) error {
					format, err := tableFormatOf(c)
					if err != nil {
						return cli.Exit("qmlsab workloads list: "+err.Error(), 1)
					}
					t := &texttable.Table{Columns: []texttable.Column{{Title: "NAME", Key: "name"}, {Title: "KIND", Key: "kind", Wide: true},
						{Title: "LENGTH", Key: "length"}, {Title: "DESCRIPTION", Key: "description", Wrap: true}}}
					for _, n := range workload.Names() {
						s, _ := workload.Builtin(n)
						length := texttable.Text("fixed ops")
						if d := s.Duration(); d > 0 {
							length = texttable.Text(d.String())
						}
						t.Add(texttable.Text(s.Name), texttable.Text(s.Kind), length, texttable.Text(s.Description))
					}
					return t.Write(c.App.Writer, format)
				},
			},
			{
				Name:      "show",
				Usage:     "one workload (a built-in name or a YAML file), resolved, as YAML a workload file can start from",
				ArgsUsage: "NAME|FILE",
				Action: func(c *cli.Context) error {
					if c.Args().Len() != 1 {
						return cli.Exit("qmlsab workloads show: want one workload name or file", 1)
					}
					s, err := resolveWorkload(c.Args().First())
					if err != nil {
						return cli.Exit("qmlsab workloads show: "+err.Error(), 1)
					}
					b, err := workload.Marshal(s)
					if err != nil {
						return cli.Exit("qmlsab workloads show: "+err.Error(), 1)
					}
					_, err = c.App.Writer.Write(b)
					return err
				},
			},
		},
	}
}
