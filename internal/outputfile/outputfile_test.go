package outputfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each kind takes its own outputs (as qmlsab writes them, in miniature)
// and refuses anything else, the other kinds' outputs included.
func TestEachKindRecognisesOnlyItsOwnOutputs(t *testing.T) {
	dir := t.TempDir()
	samples := map[string]string{
		"html":  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<meta name=\"generator\" content=\"qmlsab dev\">\n",
		"sum":   `{"arms": [], "schema": "qmlsab/summary/v1"}`,
		"sweep": `{"schema": "qmlsab/sweep/v1", "cells": []}`,
		"perf":  `[{"info": {"test_name": "w/D", "tags": ["qmlsab", "w"]}, "metrics": []}]`,
		"otava": `[{"timestamp": 1, "metrics": [], "attributes": {"branch": "", "run": "r", "workload": "w", "workload_digest": "d", "arm": "D", "build": "b"}}]`,
		"bench": "workload: w\nserver: s\nnote: SIMULATED\nBenchmarkW/arm=D/metric=availability 1 0.9 availability\n",
		"md":    "### qmlsab: w, D vs E\n\nConditions: x.\n",
	}
	kinds := map[string]Kind{"html": HTML, "sum": SummaryJSON, "sweep": SweepJSON, "perf": PerfJSON, "otava": OtavaJSON, "bench": BenchTxt, "md": SummaryMD}
	for name, content := range samples {
		path := write(t, dir, name, content)
		for kname, kind := range kinds {
			err := Check(path, kind)
			if kname == name && err != nil {
				t.Errorf("%s as %s: %v, want it taken", name, kname, err)
			}
			if kname != name && (err == nil || !strings.HasPrefix(err.Error(), path+" exists and is not "+kind.Name)) {
				t.Errorf("%s as %s: %v, want a refusal naming the file and the kind", name, kname, err)
			}
		}
	}
	// Lists with nothing in them hold nothing to lose.
	empty := write(t, dir, "empty-list", "[]\n")
	for _, k := range []Kind{PerfJSON, OtavaJSON} {
		if err := Check(empty, k); err != nil {
			t.Errorf("[] as %s: %v", k.Name, err)
		}
	}
	// Near misses are refused.
	for name, tc := range map[string]struct {
		content string
		kind    Kind
	}{
		"another generator":      {"<html><head><meta name=\"generator\" content=\"Hugo\">", HTML},
		"another schema":         {`{"schema": "other/summary/v1"}`, SummaryJSON},
		"two documents":          {`{"schema": "qmlsab/summary/v1"} {"x": 1}`, SummaryJSON},
		"perf of another tool":   {`[{"info": {"tags": ["genny"]}}]`, PerfJSON},
		"a list of numbers":      {`[1, 2]`, OtavaJSON},
		"bench with other lines": {"workload: w\nrm -rf /\n", BenchTxt},
		"a heading of another":   {"### notes\n", SummaryMD},
		"an SQLite database":     {"SQLite format 3\x00", HTML},
	} {
		if err := Check(write(t, dir, "near", tc.content), tc.kind); err == nil {
			t.Errorf("%s: taken as %s", name, tc.kind.Name)
		}
	}
}

// No file, or an empty one, takes any output; a folder, a device and a
// protected file take none, the protected one under any name it has.
func TestCheckRefusesWhatIsNoOutputAndTheProtectedFileUnderAnyName(t *testing.T) {
	dir := t.TempDir()
	if err := Check(filepath.Join(dir, "new.html"), HTML); err != nil {
		t.Errorf("a new file: %v", err)
	}
	if err := Check(write(t, dir, "empty", ""), HTML); err != nil {
		t.Errorf("an empty file: %v", err)
	}
	if err := Check(dir, HTML); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("a folder: %v", err)
	}
	if err := Check("/dev/null", HTML); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/null: %v", err)
	}
	// The history, even were it to carry an output's mark, and however
	// it is reached.
	db := write(t, dir, "h.db", "<meta name=\"generator\" content=\"qmlsab dev\">")
	hard := filepath.Join(dir, "hard.html")
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	soft := filepath.Join(dir, "soft.html")
	if err := os.Symlink("h.db", soft); err != nil {
		t.Fatal(err)
	}
	dotted := filepath.Join(dir, ".", "sub", "..", "h.db")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	guard := Protected{Path: db, What: "the history database (--history-db)"}
	for _, p := range []string{db, hard, soft, dotted} {
		if err := Check(p, HTML, guard); err == nil || !strings.HasPrefix(err.Error(), p+" is the history database (--history-db) ("+db+")") {
			t.Errorf("%s: %v, want a refusal naming the history", p, err)
		}
	}
	if err := Check(write(t, dir, "page.html", "<meta name=\"generator\" content=\"qmlsab dev\">"), HTML, guard); err != nil {
		t.Errorf("another qmlsab page beside the history: %v", err)
	}
	if err := Check(filepath.Join(dir, "none.html"), HTML, Protected{Path: filepath.Join(dir, "missing.db"), What: "x"}); err != nil {
		t.Errorf("a protected file that does not exist: %v", err)
	}
}
