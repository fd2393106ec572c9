package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/texttable"
)

// formatText is the --format of a table for a terminal.
const formatText = "text"

// tableFlags are the flags of a command that prints a table.
func tableFlags() []cli.Flag {
	return []cli.Flag{wideFlag(), &cli.StringFlag{Name: "format", Value: formatText, Usage: "text (for a terminal), json or csv (every column, for machines)"}}
}

// wideFlag shows every column of a table, however wide.
func wideFlag() cli.Flag {
	return &cli.BoolFlag{Name: "wide", Usage: "every column of the table, one line a row (the default fits 80 columns)"}
}

// tableFormatOf reads --wide and --format.
func tableFormatOf(c *cli.Context) (texttable.Format, error) {
	f := texttable.Format{Wide: c.Bool("wide")}
	if !c.IsSet("format") {
		return f, nil
	}
	switch v := c.String("format"); v {
	case formatText:
	case texttable.JSON, texttable.CSV:
		f.Machine = v
	default:
		return f, fmt.Errorf("--format %q: want %s, %s or %s", v, formatText, texttable.JSON, texttable.CSV)
	}
	return f, nil
}
