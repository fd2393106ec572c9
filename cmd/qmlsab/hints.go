package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"

	"github.com/qmlsab/qmlsab/report"
)

// The hints of usage errors ("did you mean …?") are urfave/cli v2's
// suggestions: cli.SuggestFlag and cli.SuggestCommand name the candidate
// most like what was typed by Jaro-Winkler similarity. qmlsab calls them
// itself rather than setting App.Suggest, because App.Suggest only adds
// them to the library's own "Incorrect Usage" message (several lines, then
// the help), which enforceUsage replaces with one line and exit 2; and a
// flag written after a positional argument is never parsed by the library
// at all (args.go), so no library path would suggest one.
//
// One thing v2 cannot do is decline: it names its most similar candidate
// however unlike (--no-such-flag gets "-n", a command "no-such-command"
// gets "h") and does not return the similarity. So a suggestion is kept
// only when it is at least minSimilarity alike by the measure v2 uses
// (smetrics.JaroWinkler with v2's boost threshold and prefix size);
// otherwise the error lists what is known.

// minSimilarity is the least Jaro-Winkler similarity of a typo to what
// was meant: a swapped or dropped letter (reprot, lst, --gtaes) scores
// 0.92 or more, a prefix of three letters or more (--rec for --recent)
// 0.88, unrelated words 0.7 or less.
const minSimilarity = 0.8

// alike reports whether candidate is near enough to given to suggest.
func alike(given, candidate string) bool {
	const boostThreshold, prefixSize = 0.7, 4 // v2's (suggestions.go)
	return candidate != "" && smetrics.JaroWinkler(candidate, given, boostThreshold, prefixSize) >= minSimilarity
}

// suggestFlag is the flag (as written: --arms, -n) among flags that given
// (a flag that is none of them, with or without its dashes) most likely
// meant, by cli.SuggestFlag; "" when none is alike. Hidden flags (old
// names kept working) are never suggested.
func suggestFlag(flags []cli.Flag, given string) string {
	if cli.SuggestFlag == nil { // built with urfave_cli_no_suggest
		return ""
	}
	var visible []cli.Flag
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); !ok || v.IsVisible() {
			visible = append(visible, f)
		}
	}
	name := strings.TrimLeft(given, "-")
	meant := cli.SuggestFlag(visible, name, true)
	if !alike(name, strings.TrimLeft(meant, "-")) {
		return ""
	}
	return meant
}

// suggestName is the name among names (commands, help topics, gate sets)
// that given most likely meant, by cli.SuggestCommand; "" when none is
// alike. SuggestCommand says its pick only inside its sentence
// (cli.SuggestDidYouMeanTemplate), and it also weighs "help" and "h",
// which count only when they are among names.
func suggestName(names []string, given string) string {
	if cli.SuggestCommand == nil { // built with urfave_cli_no_suggest
		return ""
	}
	cmds := make([]*cli.Command, len(names))
	for i, n := range names {
		cmds[i] = &cli.Command{Name: n}
	}
	said := cli.SuggestCommand(cmds, given)
	for _, n := range names {
		if said == fmt.Sprintf(cli.SuggestDidYouMeanTemplate, n) && alike(given, n) {
			return n
		}
	}
	return ""
}

// gateSetError is LoadGates's err for --gates g, or, when g is neither a
// file nor a built-in gate set but close to a built-in's name (a typo:
// sweeper-acceptanse), that said with the name meant.
func gateSetError(g string, err error) error {
	if _, serr := os.Stat(g); !errors.Is(serr, fs.ErrNotExist) {
		return err
	}
	if m := suggestName(slices.Sorted(maps.Keys(report.BuiltinGates)), g); m != "" {
		return fmt.Errorf("%q is neither a built-in gate set nor a file; did you mean %q?", g, m)
	}
	return err
}
