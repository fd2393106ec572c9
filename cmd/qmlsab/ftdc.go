package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/ftdc"
)

// ftdcCommand reads MongoDB's diagnostic data (FTDC).
func ftdcCommand() *cli.Command {
	return group("ftdc", "read MongoDB diagnostic data (diagnostic.data, FTDC) of mongod or mongosim",
		command("dump", "one line per sample of FTDC files or diagnostic.data directories, as JSON lines or CSV",
			"FILE_OR_DIR... [--paths p1,p2,...] [--format jsonl|csv] [--list]", ftdcDumpAction,
			&cli.StringFlag{Name: "paths", Usage: "the metrics to write, comma-separated dotted paths such as serverStatus.mem.resident (default: all)"},
			&cli.StringFlag{Name: "format", Value: "jsonl", Usage: "jsonl (an object per sample; start in ms since the epoch) or csv"},
			&cli.BoolFlag{Name: "list", Usage: "list the metric paths instead of the samples"}))
}

func ftdcDumpAction(c *cli.Context) error {
	fail, sources, err := operands(c, "qmlsab ftdc dump")
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fail("name at least one FTDC file or diagnostic.data directory")
	}
	format := c.String("format")
	if format != "jsonl" && format != "csv" {
		return fail("--format %q: want jsonl or csv", format)
	}
	paths := commaList(c, "paths")
	if _, err := ftdc.Files(sources...); err != nil {
		return fail("%v", err)
	}
	torn := func(err error) {
		fmt.Fprintf(c.App.ErrWriter, "qmlsab ftdc dump: warning: %v (a process killed mid-write; everything before it was read)\n", err)
	}
	// A member just started has written its metadata but no sample yet:
	// that is said, not left to look like an empty list or a missing
	// metric.
	noSamples := func() {
		fmt.Fprintf(c.App.ErrWriter, "qmlsab ftdc dump: no samples yet in %s: the diagnostic data holds no metric chunk (a member writes its first samples to metrics.interim after its first few sampling intervals)\n",
			strings.Join(sources, " "))
	}
	if c.Bool("list") || len(paths) > 0 || format == "csv" {
		all, err := ftdc.ListPaths(sources...)
		if err != nil && !ftdc.IsTruncated(err) {
			return fail("%v", err)
		}
		if len(all) == 0 {
			if err != nil {
				torn(err)
			}
			noSamples()
			return nil
		}
		if c.Bool("list") {
			w := bufio.NewWriter(c.App.Writer)
			for _, p := range all {
				fmt.Fprintln(w, p)
			}
			if err != nil {
				torn(err)
			}
			return w.Flush()
		}
		for _, p := range paths {
			if p != "start" && !slices.Contains(all, p) {
				return fail("--paths %s: no such metric in %s (--list shows them)", p, strings.Join(sources, " "))
			}
		}
		if len(paths) == 0 {
			paths = all // CSV's columns: every metric, read once
		}
	}
	out := &countingWriter{w: c.App.Writer}
	err = ftdc.Dump(out, paths, format, sources...)
	if err != nil && !ftdc.IsTruncated(err) {
		return fail("%v", err)
	}
	if err != nil {
		torn(err)
	}
	if out.n == 0 {
		noSamples()
	}
	return nil
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
