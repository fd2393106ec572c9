package main

import (
	"slices"
	"strings"
	"unicode"
)

// The commands' outputs, read by the tests: lines, fields and words.

// isWordRune reports whether r continues a word (as \w does).
func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// hasWord reports whether w stands in s as a whole word: no letter,
// digit or '_' right before or after it.
func hasWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		before, after := ' ', ' '
		if start > 0 {
			before = []rune(s[:start])[len([]rune(s[:start]))-1]
		}
		if end < len(s) {
			after = []rune(s[end:])[0]
		}
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		i = start + 1
	}
}

// lineWithFields is the first line of out whose whitespace-separated
// fields begin with these ("" when none does).
func lineWithFields(out string, fields ...string) string {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) && (l == "" || !unicode.IsSpace([]rune(l)[0])) {
			return l
		}
	}
	return ""
}

// between is the text of s after the first from, up to the next to.
func between(s, from, to string) (string, bool) {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return "", false
	}
	in, _, ok := strings.Cut(rest, to)
	return in, ok
}

// isDigits reports whether s is one or more decimal digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// replaceEach replaces each stretch of s from open to close (both
// included) with repl of what stands between them; an open without its
// close is left as it is.
func replaceEach(s, open, close string, repl func(inner string) string) string {
	var b strings.Builder
	for {
		before, rest, ok := strings.Cut(s, open)
		b.WriteString(before)
		if !ok {
			return b.String()
		}
		inner, after, ok := strings.Cut(rest, close)
		if !ok {
			b.WriteString(open + rest)
			return b.String()
		}
		b.WriteString(repl(inner))
		s = after
	}
}
