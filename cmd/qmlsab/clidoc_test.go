package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite docs/cli.md from the command definitions")

// docs/cli.md is the command tree as written: a flag added, renamed or
// given another default without the file following fails here.
func TestCLIDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "cli.md")
	want := cliMarkdown(newApp())
	if *updateCLIDoc {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/qmlsab -run TestCLIDoc -update-cli-doc writes it)", err)
	}
	if string(got) != want {
		t.Errorf("docs/cli.md is stale: go test ./cmd/qmlsab -run TestCLIDoc -update-cli-doc")
	}
	for _, s := range []string{"## qmlsab history detect", "`--history-db`", "| 4 |"} {
		if !strings.Contains(want, s) {
			t.Errorf("docs/cli.md lacks %q", s)
		}
	}
	if strings.Contains(want, "`--db`") || strings.Contains(want, "`--seeds`") {
		t.Error("docs/cli.md lists an old spelling")
	}
}
