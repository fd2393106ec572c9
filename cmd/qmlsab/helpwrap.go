package main

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/texttable"
)

// installHelpWrap folds every help page to the 80 columns the tables keep
// to. urfave/cli's own wrap option (a "wrapAt" function given to
// HelpPrinterCustom) folds a flag's line before the library's tabwriter
// aligns the usage column, and a continuation line, having no tab, ends
// the tabwriter's column block: the flags after a folded one lose their
// alignment. So help is printed as the library lays it out, aligned, and
// its long lines are folded afterwards, each continuation indented to
// where the line's text column starts.
func installHelpWrap() {
	if helpWrapInstalled {
		return
	}
	helpWrapInstalled = true
	library := cli.HelpPrinter
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		var b strings.Builder
		library(&b, templ, data)
		io.WriteString(w, foldHelp(b.String(), texttable.Width))
	}
}

var helpWrapInstalled bool

// foldHelp folds each line of help text longer than width at spaces:
// the continuation lines start under the line's text column, or, when
// that leaves less than minHelpText columns, the text moves under the
// name, indented a little more.
func foldHelp(text string, width int) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if utf8.RuneCountInString(l) <= width {
			out = append(out, l)
			continue
		}
		lead, col := leadingSpaces(l), textColumn(l)
		head, body := l[:byteOffset(l, col)], l[byteOffset(l, col):]
		if col == lead { // prose: fold it at its own indentation
			head, body = "", strings.TrimSpace(l)
		}
		indent := col
		if width-col < minHelpText {
			out = append(out, strings.TrimRight(head, " "))
			head, indent = "", lead+6
		}
		pad := strings.Repeat(" ", indent)
		for k, f := range texttable.Fold(body, width-indent) {
			if k == 0 && head != "" {
				out = append(out, head+f)
				continue
			}
			out = append(out, pad+f)
		}
	}
	return strings.Join(out, "\n")
}

// minHelpText is the fewest columns a folded help line's text keeps
// beside its name.
const minHelpText = 30

// textColumn is where a help line's text starts, in runes: after the
// first gap of two or more spaces that follows a name (a flag's usage, a
// command's), else after " - " (NAME: the command and what it does), else
// the line's indentation.
func textColumn(l string) int {
	r := []rune(l)
	lead := leadingSpaces(l)
	for i := lead; i+1 < len(r); i++ {
		if r[i] == ' ' && r[i+1] == ' ' {
			j := i
			for j < len(r) && r[j] == ' ' {
				j++
			}
			if j < len(r) {
				return j
			}
			break
		}
	}
	if i := strings.Index(l, " - "); i >= 0 {
		return utf8.RuneCountInString(l[:i]) + 3
	}
	return lead
}

func leadingSpaces(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// byteOffset is the byte offset of rune n of s.
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
