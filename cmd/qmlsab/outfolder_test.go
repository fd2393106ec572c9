package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `run --out DIR` into a folder holding other files and no run exits 1
// naming the folder, before anything is said or written.
func TestRunOutRefusesAFolderOfOtherFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "1", "--profile", "quick", "--out", dir)
	if code != 1 || !strings.Contains(out, "qmlsab run: --out "+dir+" exists and is not empty (it holds thesis.tex)") || strings.Contains(out, "arms ×") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused run wrote into %s: %v", dir, entries)
	}
}
