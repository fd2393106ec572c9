package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 35: trend --history-db h.db --out h.db wrote HTML over every
// stored night and exited 0. Every command that writes an output file
// refuses, with exit 1 naming the flag and the file, to write it over the
// history (however the path names it) or over a file that is not its own
// kind of output written by qmlsab; the file is left as it was. Over its
// own earlier outputs each command writes as before.
func TestOutputsAreNeverWrittenOverTheHistoryOrAForeignFile(t *testing.T) {
	tmp := t.TempDir()
	wl := nightlyWorkload(t, tmp, 150)
	run := filepath.Join(tmp, "night")
	quickRun(t, wl, run, 41)
	db := filepath.Join(tmp, "h.db")
	if out, code := qmlsab(t, "history", "add", "--history-db", db, run); code != 0 {
		t.Fatalf("history add: exit %d\n%s", code, out)
	}
	dbBefore, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link.html")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(tmp, "notes.html")
	const notes = "<html><body>my notes</body></html>\n"
	if err := os.WriteFile(foreign, []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := func(args []string, flag, file, why string) {
		t.Helper()
		out, code := qmlsab(t, args...)
		if code != 1 || !strings.Contains(out, flag+" "+file+" "+why) {
			t.Errorf("%v: exit %d, want 1 naming %s %s (%s):\n%s", args, code, flag, file, why, out)
		}
	}
	for _, out := range []string{db, link, tmp + "/./h.db"} {
		refused([]string{"trend", "--history-db", db, "--out", out}, "--out", out, "is the history database")
		refused([]string{"history", "export", "--history-db", db, "--out", out}, "--out", out, "is the history database")
	}
	refused([]string{"trend", "--history-db", db, "--out", foreign}, "--out", foreign, "exists and is not an HTML page qmlsab wrote")
	refused([]string{"history", "export", "--history-db", db, "--out", foreign}, "--out", foreign, "exists and is not an Otava export qmlsab wrote")
	if b, _ := os.ReadFile(db); string(b) != string(dbBefore) {
		t.Fatal("the history database changed")
	}
	if b, _ := os.ReadFile(foreign); string(b) != notes {
		t.Fatal("the foreign file changed")
	}
	if out, code := qmlsab(t, "history", "list", "--wide", "--history-db", db); code != 0 || !strings.Contains(out, "nightly") {
		t.Fatalf("the history after the refusals: exit %d\n%s", code, out)
	}

	// Each command writes over its own earlier output, twice.
	page, export := filepath.Join(tmp, "trend.html"), filepath.Join(tmp, "otava.json")
	for range 2 {
		for _, args := range [][]string{
			{"trend", "--history-db", db, "--out", page},
			{"history", "export", "--history-db", db, "--out", export},
			{"report", "--format", "html,json,perf,bench,md", run},
		} {
			if out, code := qmlsab(t, args...); code != 0 {
				t.Fatalf("%v over its own output: exit %d\n%s", args, code, out)
			}
		}
	}
	// But not over another kind's: a trend page is no summary.json.
	reportDir := filepath.Join(tmp, "rep")
	os.MkdirAll(reportDir, 0o755)
	mixed := filepath.Join(reportDir, "summary.json")
	if err := os.Rename(export, mixed); err != nil {
		t.Fatal(err)
	}
	refused([]string{"report", "--out", reportDir, run}, "--out", mixed, "exists and is not a summary.json qmlsab wrote")
	if _, err := os.Stat(filepath.Join(reportDir, "report.html")); !os.IsNotExist(err) {
		t.Errorf("a refused report wrote report.html: %v", err)
	}
	// report's outputs and the history: --history-db named as an output.
	reportDB := filepath.Join(reportDir, "report.html")
	if err := os.Link(db, reportDB); err != nil {
		t.Fatal(err)
	}
	os.Remove(mixed)
	refused([]string{"report", "--out", reportDir, "--history-db", db, run}, "--out", reportDB, "is the history database")
	if b, _ := os.ReadFile(db); string(b) != string(dbBefore) {
		t.Fatal("the history database changed")
	}
	// A sweep's folder holding a sweep.json it did not write.
	sweepDir := filepath.Join(tmp, "sweep")
	os.MkdirAll(sweepDir, 0o755)
	os.WriteFile(filepath.Join(sweepDir, "sweep.json"), []byte(`{"mine": true}`), 0o644)
	refused([]string{"sweep", "--arms", "E", "--vary", "workload.stormRate=100,200", "--n", "1", "--profile", "quick", "--out", sweepDir},
		"--out", filepath.Join(sweepDir, "sweep.json"), "exists and is not a sweep.json qmlsab wrote")
}
