package progress

import (
	"strings"
	"unicode"

	"github.com/mattn/go-runewidth"
)

// sanitize makes text from elsewhere (an arm's name, a trial's reason,
// which can quote a server's error) safe to draw: every control
// character, the escape that starts a terminal sequence included,
// becomes U+FFFD. The region's rows then hold no escape sequence of
// their own, so cutting one never splits a sequence, and a reason cannot
// move the cursor or recolour the screen.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// cut shortens s to at most width terminal cells, by display width
// (a CJK character takes two cells, a combining mark none) and never
// inside a grapheme cluster, ending a cut line with "…".
func cut(s string, width int) string {
	if width < 1 {
		return ""
	}
	return runewidth.Truncate(s, width, "…")
}
