package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// cliMarkdown is docs/cli.md: every command, its flags with their
// defaults, and the exit codes, from the command tree itself (a test
// fails when the file is stale).
func cliMarkdown(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# qmlsab command line\n\n")
	b.WriteString("Generated from the command definitions (`go test ./cmd/qmlsab -run TestCLIDoc -update-cli-doc` rewrites it).\n")
	b.WriteString("Flags may be written before or after positional arguments. Sizes are written like `8MiB` (or plain bytes), durations like `30s`.\n")
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			p := path + " " + c.Name
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", strings.TrimSpace(p), c.Usage)
			if c.ArgsUsage != "" {
				fmt.Fprintf(&b, "\nArguments: `%s`\n", c.ArgsUsage)
			}
			var rows []string
			for _, f := range c.Flags {
				if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
					continue
				}
				df, ok := f.(cli.DocGenerationFlag)
				if !ok {
					continue
				}
				d := defaultText(f)
				if d == "" {
					d = "–"
				}
				for _, env := range df.GetEnvVars() {
					d += ", $" + env
				}
				rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", dashed(f.Names()[0]), cell(strings.ReplaceAll(df.GetUsage(), "`", "")), cell(d)))
			}
			if len(rows) > 0 {
				b.WriteString("\n| flag | meaning | default |\n|---|---|---|\n")
				b.WriteString(strings.Join(rows, "\n") + "\n")
			}
			walk(p, c.Subcommands)
		}
	}
	walk("qmlsab", app.Commands)
	b.WriteString("\n## Exit codes\n\n| code | meaning |\n|---|---|\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, cell(e.Meaning))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
