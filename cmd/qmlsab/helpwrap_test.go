package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// Every help page keeps to 80 columns and loses no word: each flag's
// usage reads whole once the folded lines are joined, and a folded line
// goes on under its text column, never at the left margin.
func TestHelpFitsEightyColumns(t *testing.T) {
	pages := map[string][]cli.Flag{"": nil}
	for cmd, flags := range commandFlags() {
		pages[cmd] = flags
	}
	for cmd, flags := range pages {
		out, code := qmlsab(t, append(strings.Fields(cmd), "--help")...)
		if code != 0 {
			t.Fatalf("%s --help: exit %d\n%s", cmd, code, out)
		}
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("qmlsab %s --help: a %d-column line: %q", cmd, n, l)
			}
			if i > 0 && l != "" && !strings.HasPrefix(l, " ") && !strings.HasSuffix(l, ":") {
				t.Errorf("qmlsab %s --help: line %q starts at the margin (a fold lost its indent)", cmd, l)
			}
		}
		joined := strings.Join(strings.Fields(out), " ")
		for _, f := range flags {
			df, ok := f.(cli.DocGenerationFlag)
			if vf, visible := f.(cli.VisibleFlag); !ok || (visible && !vf.IsVisible()) {
				continue
			}
			usage := strings.Join(strings.Fields(strings.ReplaceAll(df.GetUsage(), "`", "")), " ")
			if !strings.Contains(joined, usage) {
				t.Errorf("qmlsab %s --help: the usage of %s does not read whole: %q", cmd, dashed(f.Names()[0]), usage)
			}
		}
	}
	if out, _ := qmlsab(t, "--help"); !strings.Contains(out, "   1    bad input (a value that parses but is wrong: an unknown arm, a missing\n        file,") {
		t.Errorf("the exit codes do not fold under their meaning:\n%s", out)
	}
}

// version and --version print the same line.
func TestVersionCommandAndFlagAgree(t *testing.T) {
	cmd, _ := qmlsab(t, "version")
	flag, _ := qmlsab(t, "--version")
	if cmd != flag || !strings.HasPrefix(cmd, "qmlsab version ") || !strings.Contains(cmd, "(mongosim ") {
		t.Errorf("version prints %q, --version %q; want one line, qmlsab version X (mongosim …)", cmd, flag)
	}
}
