package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
)

// run runs the CLI in-process and returns its output and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run(append([]string{"qmlsab"}, args...))
	code := 0
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ec):
		code = ec.ExitCode()
		out.WriteString(err.Error())
	case err != nil:
		code = 1
		out.WriteString(err.Error())
	}
	return out.String(), code
}

func TestArmsListAndShow(t *testing.T) {
	out, code := run(t, "arms", "list")
	if code != 0 {
		t.Fatalf("arms list exit %d: %s", code, out)
	}
	for _, name := range []string{"A ", "D ", "E ", "F ", "G "} {
		if !strings.Contains(out, "\n"+name) {
			t.Errorf("arms list lacks arm %q:\n%s", name, out)
		}
	}
	out, code = run(t, "arms", "show", "F")
	if code != 0 {
		t.Fatalf("arms show F exit %d: %s", code, out)
	}
	back, err := arms.Parse("show-output", []byte(out))
	if err != nil || len(back) != 1 || back[0].SetParameters["queryMemoryLoadSheddingSweepQueuedOps"] != "true" {
		t.Fatalf("arms show output does not round-trip: %v\n%s", err, out)
	}
}

func TestArmsFileOverridesAndErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "arms.yaml")
	os.WriteFile(good, []byte("arms:\n  - name: U\n    target: uri\n    uri: mongodb://bob:pa55@127.0.0.1:27017/?replicaSet=rs0\n"), 0o644)
	out, code := run(t, "arms", "show", "--arms-file", good, "U")
	if code != 0 || strings.Contains(out, "pa55") || !strings.Contains(out, "bob:<redacted>@127.0.0.1:27017") {
		t.Fatalf("show of a uri arm (exit %d) must redact the password:\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("arms:\n  - name: X\n    colour: blue\n"), 0o644)
	for _, args := range [][]string{{"arms", "list", "--arms-file", bad}, {"arms", "show", "--arms-file", bad, "X"}} {
		out, code := run(t, args...)
		if code != 1 || !strings.Contains(out, bad+`:3: unknown key "colour"`) {
			t.Errorf("%v: exit %d, output %q; want exit 1 naming %s:3", args, code, out, bad)
		}
	}
	out, code = run(t, "arms", "list", "--arms-file", filepath.Join(dir, "missing.yaml"))
	if code != 1 || !strings.Contains(out, "missing.yaml") {
		t.Errorf("missing file: exit %d %q", code, out)
	}
	out, code = run(t, "arms", "show", "U", "--arms-file", good)
	if code != 1 || !strings.Contains(out, "after the flags") {
		t.Errorf("flags after the name: exit %d %q; want a message saying where flags go", code, out)
	}
	out, code = run(t, "arms", "show", "Z")
	if code != 1 || !strings.Contains(out, `unknown arm "Z"`) {
		t.Errorf("unknown arm: exit %d %q", code, out)
	}
}
