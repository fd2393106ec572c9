package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Bad input that is close to good input names what was meant: an arm in
// the wrong case, a misspelt gate set (checked with the other flags,
// before the run folders are read); a folder that is no run says so,
// naming it once.
func TestBadInputNamesWhatWasMeant(t *testing.T) {
	none := filepath.Join(t.TempDir(), "no-run")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--arms", "d,e"}, `qmlsab run: --arms: unknown arm "d"; did you mean "D"? (arm names are case-sensitive; known: A, D, E, M, F, G)`},
		{[]string{"report", "--gates", "sweeper-acceptanse", none},
			`qmlsab report: --gates: "sweeper-acceptanse" is neither a built-in gate set nor a file; did you mean "sweeper-acceptance"?`},
		{[]string{"report", none}, "qmlsab report: " + none + ": not a run folder (no such folder)"},
		{[]string{"history", "add", none}, "qmlsab history add: " + none + ": not a run folder (no such folder)"},
	} {
		out, code := qmlsab(t, c.args...)
		if code != 1 || strings.TrimSpace(out) != c.want {
			t.Errorf("%s: exit %d\n%s\nwant exit 1 and\n%s", strings.Join(c.args, " "), code, out, c.want)
		}
	}
}

// A usage error's hint is urfave/cli v2's suggestion (SuggestCommand,
// SuggestFlag), for a command, a help topic, a flag before or after a
// positional argument and a gate set alike; what is like no candidate
// gets the list of what is known (or the plain error), never v2's
// nearest, which it names however unlike (-n for --no-such-flag).
func TestUsageHintsAreTheLibrarysSuggestions(t *testing.T) {
	app := newApp()
	var run, report *cli.Command
	for _, c := range app.Commands {
		switch c.Name {
		case "run":
			run = c
		case "report":
			report = c
		}
	}
	topLevel := make([]*cli.Command, 0, len(app.Commands))
	for _, c := range app.Commands {
		if !c.Hidden {
			topLevel = append(topLevel, c)
		}
	}
	none := filepath.Join(t.TempDir(), "no-run")
	said := func(name string) string { return fmt.Sprintf(cli.SuggestDidYouMeanTemplate, name) }
	for _, c := range []struct {
		args               []string
		library, libraryIs string // v2's suggestion, and it in v2's words
		want               string
	}{
		{[]string{"reprot"}, cli.SuggestCommand(topLevel, "reprot"), said("report"), `qmlsab: unknown command "reprot"; did you mean "report"?`},
		{[]string{"help", "hsitory"}, cli.SuggestCommand(topLevel, "hsitory"), said("history"), `qmlsab: unknown help topic "hsitory"; did you mean "history"?`},
		{[]string{"run", "--arsm", "D"}, cli.SuggestFlag(run.Flags, "arsm", true), "--arms", `qmlsab run: unknown flag "--arsm"; did you mean "--arms"?`},
		{[]string{"report", none, "--alowpartial"}, cli.SuggestFlag(report.Flags, "alowpartial", true), "--allow-partial", `qmlsab report: unknown flag "--alowpartial"; did you mean "--allow-partial"?`},
	} {
		if c.library != c.libraryIs {
			t.Errorf("%v: v2 suggests %q, the test expects %q", c.args, c.library, c.libraryIs)
		}
		out, code := qmlsab(t, c.args...)
		if code != exitUsage || strings.TrimSpace(out) != c.want {
			t.Errorf("%v: exit %d\n%s\nwant exit %d and\n%s", c.args, code, out, exitUsage, c.want)
		}
	}
	// Unlike every candidate: no hint.
	if s := cli.SuggestFlag(run.Flags, "no-such-flag", true); s == "" {
		t.Fatalf("v2 no longer names a flag for --no-such-flag; the case below no longer tests the threshold")
	}
	for _, args := range [][]string{{"run", "--no-such-flag"}, {"no-such-command"}, {"report", "--gates", filepath.Join(t.TempDir(), "gates.yaml"), none}} {
		if out, _ := qmlsab(t, args...); strings.Contains(out, "did you mean") {
			t.Errorf("%v: a hint for what is like nothing:\n%s", args, out)
		}
	}
}

// A flag's old spelling, kept hidden for a release, is never the hint:
// the hint is a name to write from now on.
func TestHintsNeverNameAHiddenSpelling(t *testing.T) {
	flags := []cli.Flag{&cli.IntFlag{Name: "seeds", Hidden: true}, &cli.IntFlag{Name: "n"}, &cli.Uint64Flag{Name: "seed"}}
	for _, typo := range []string{"--sedes", "--seedss"} {
		if got := suggestFlag(flags, typo); got == "--seeds" {
			t.Errorf("%s: hint %q, a hidden spelling", typo, got)
		}
	}
}
