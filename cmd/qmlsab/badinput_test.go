package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/stormtest"
)

// The catalogue of bad input: each gives exit 1 and this exact message
// (docs/reliability.md lists them).
func TestBadInputCatalogue(t *testing.T) {
	dir := t.TempDir()
	badURI := filepath.Join(dir, "baduri.yaml")
	os.WriteFile(badURI, []byte("arms:\n  - name: U\n    target: uri\n    uri: \"mongodb://bob:s3cret@[::1:27017\"\n"), 0o644)
	oldRun := filepath.Join(dir, "old")
	os.MkdirAll(oldRun, 0o755)
	os.WriteFile(filepath.Join(oldRun, "manifest.json"), []byte(`{"schema":"qmlsab/run/v0","trials":[]}`), 0o644)
	badWorkload := filepath.Join(dir, "w.yaml")
	os.WriteFile(badWorkload, []byte("name: w\nkind: spill_to_disk\nspill_to_disk:\n  canaryRate: 0\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--arms", "D,Q", "--out", out}, `qmlsab run: --arms: unknown arm "Q" (known: A, D, E, M, F, G)`},
		{[]string{"run", "-n", "0", "--out", out}, "qmlsab run: -n 0: at least one trial per arm"},
		{[]string{"run", "-n", "-3", "--out", out}, "qmlsab run: -n -3: at least one trial per arm"},
		{[]string{"run", "--workload", "nope", "--out", out}, `qmlsab run: --workload: unknown workload "nope" (built-in: merge_partial_write, spill_to_disk; or a path to a workload YAML file)`},
		{[]string{"run", "--workload", badWorkload, "--out", out}, "qmlsab run: --workload: " + badWorkload + ":4: spill_to_disk.canaryRate: 0 is outside [0.001, 1000]"},
		{[]string{"run", "--arms-file", badURI, "--arms", "U", "--out", out}, "qmlsab run: --arms-file: " + badURI + `:4: uri mongodb://bob:<redacted>@[::1:27017: error parsing uri: invalid host "": address [::1:27017: missing ']' in address`},
		{[]string{"run", "--arms-file", filepath.Join(dir, "missing.yaml"), "--out", out}, "qmlsab run: --arms-file: reading arms file: open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
		{[]string{"run", "--arms-file", dir, "--out", out}, "qmlsab run: --arms-file: reading arms file: read " + dir + ": is a directory"},
		{[]string{"run", "--resume", oldRun}, "qmlsab run: --resume: " + filepath.Join(oldRun, "manifest.json") + `: schema "qmlsab/run/v0", this qmlsab reads "qmlsab/run/v2"`},
		{[]string{"report", oldRun}, "qmlsab report: " + filepath.Join(oldRun, "manifest.json") + `: schema "qmlsab/run/v0", this qmlsab reads "qmlsab/run/v2"`},
		{[]string{"run", "--profile", "fast", "--out", out}, `qmlsab run: --profile "fast": want quick, default or long`},
		{[]string{"run", "--clock", "fast", "--out", out}, `qmlsab run: --clock "fast": want virtual or wall`},
		{[]string{"run", "--parallel", "-1", "--out", out}, "qmlsab run: --parallel -1: must not be negative"},
		{[]string{"run", "stray", "--out", out}, `qmlsab run: unexpected argument "stray" (flags only)`},
		{[]string{"report", "--format", "pdf", oldRun}, `qmlsab report: --format "pdf": want any of html, json, perf, bench, md`},
	} {
		got, code := qmlsab(t, tc.args...)
		if code != 1 || strings.TrimSpace(got) != tc.want {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s", tc.args, code, strings.TrimSpace(got), tc.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("%v: the password reached the message", tc.args)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Error("bad input still wrote a run")
	}
}

// Labels are taken as written, commas and all, one per --label; a report
// whose flags are wrong writes nothing: no summary, no page, no history.
func TestReportLabelsAsWrittenAndNothingWrittenBeforeTheFlagsAreChecked(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	if out, code := qmlsab(t, "run", "--arms", "E", "--n", "1", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	before := stormtest.DirEntries(t, dir)
	db := filepath.Join(tmp, "h", "history.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", dir, "--label", "branch"}, `qmlsab report: --label "branch": want KEY=VALUE`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "nolabel"}, `qmlsab report: --label "nolabel": want KEY=VALUE`},
		{[]string{"report", "--history", "--history-db", db, "--label", "branch=master", "--label", "=x", dir}, `qmlsab report: --label "=x": want KEY=VALUE`},
		{[]string{"report", dir, "--label", "branch=master"}, "qmlsab report: --label: labels are stored with the run in the history; add --history"},
		// A newline broke history list's one line per night; MongoDB
		// history keys like $set and .a were stored as given.
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "msg=two\nlines"}, `qmlsab report: --label "msg=two\nlines": label msg: the value holds U+000A, a control or non-printing character`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "msg=a\tb"}, `qmlsab report: --label "msg=a\tb": label msg: the value holds U+0009, a control or non-printing character`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "$set=x"}, `qmlsab report: --label "$set=x": label name "$set": want letters, digits, '_', '.' or '-', starting with a letter, digit or '_'`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", ".a=x"}, `qmlsab report: --label ".a=x": label name ".a": want letters, digits, '_', '.' or '-', starting with a letter, digit or '_'`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "a b=x"}, `qmlsab report: --label "a b=x": label name "a b": want letters, digits, '_', '.' or '-', starting with a letter, digit or '_'`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "k=" + strings.Repeat("x", 100_000)}, `qmlsab report: --label "k=` + strings.Repeat("x", 58) + `"…: label k: a value of 100000 bytes: at most 256`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", strings.Repeat("k", 65) + "=x"}, `qmlsab report: --label "` + strings.Repeat("k", 60) + `"…: label name of 65 bytes: at most 64`},
		{[]string{"report", dir, "--history", "--history-db", db, "--label", "branch=a", "--label", "branch=b"}, `qmlsab report: --label "branch=b": label branch given twice`},
	} {
		out, code := qmlsab(t, tc.args...)
		if code != exitFailed || strings.TrimSpace(out) != tc.want {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s", tc.args, code, strings.TrimSpace(out), tc.want)
		}
		if after := stormtest.DirEntries(t, dir); !slices.Equal(after, before) {
			t.Errorf("%v: the run folder went from %v to %v", tc.args, before, after)
		}
		if _, err := os.Stat(filepath.Dir(db)); err == nil {
			t.Errorf("%v: the history's folder was created", tc.args)
		}
	}

	out, code := qmlsab(t, "report", dir, "--format", "json", "--history", "--history-db", db, "--label", "msg=fix a,b", "--label", "branch=feat,x=1")
	if code != 0 {
		t.Fatalf("report with labels: exit %d\n%s", code, out)
	}
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(context.Background(), history.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("history: %v, %d runs, want 1", err, len(runs))
	}
	if want := map[string]string{"msg": "fix a,b", "branch": "feat,x=1"}; !maps.Equal(runs[0].Labels, want) {
		t.Errorf("labels stored: %v, want %v", runs[0].Labels, want)
	}
}

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
