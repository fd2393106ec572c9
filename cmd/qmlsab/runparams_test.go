package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An embedded arm whose server parameters the model does not take is
// refused when the experiment is built: exit 1 before any trial, naming
// the arm and the parameter, and no run folder (it was n invalid trials).
func TestRunRefusesABadEmbeddedParameterBeforeAnyTrial(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "arms.yaml")
	doc := "arms:\n  - name: X\n    setParameters: {throughputProbingMinConcurrency: \"4.5\"}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	out, code := qmlsab(t, "run", "--arms-file", file, "--arms", "D,X", "-n", "3", "--profile", "quick", "--out", dir)
	if code != 1 || !strings.HasPrefix(out, "qmlsab run: --arms: arm X: ") || !strings.Contains(out, "throughputProbingMinConcurrency") ||
		strings.Contains(out, "started") || strings.Contains(out, "×") {
		t.Errorf("a bad parameter of arm X: exit %d\n%s\nwant exit 1 naming arm X and the parameter, before any trial", code, out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the refused run made its folder")
	}
}
