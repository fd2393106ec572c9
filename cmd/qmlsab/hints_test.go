package main

import (
	"path/filepath"
	"strings"
	"testing"
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
