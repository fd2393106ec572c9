package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/store"
)

// qmlsabSplit runs the command line in-process and returns its standard
// output and its standard error apart, with its exit code.
func qmlsabSplit(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run(append([]string{"qmlsab"}, args...))
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ec):
		code = ec.ExitCode()
		errOut.WriteString(err.Error())
	case err != nil:
		code = 1
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// withTrials is a copy of a finished run in which the trials keep marks
// as the manifest's status (pending or interrupted: their folders are
// removed, as a run stopped before them has none; invalid: the manifest
// says why), the others as they were.
func withTrials(t *testing.T, run string, marks map[string]store.Status) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest
	for i, ts := range m.Trials {
		key := fmt.Sprintf("%s#%d", ts.Arm, ts.Index)
		status, ok := marks[key]
		if !ok {
			continue
		}
		m.Trials[i].Status = status
		switch status {
		case store.Invalid:
			m.Trials[i].Reason = "host saturated (test)"
		default:
			if err := os.RemoveAll(store.TrialDir(dir, ts.Arm, ts.Index)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []string{"report.html", "summary.json"} {
		os.Remove(filepath.Join(dir, f))
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// report --gates fails closed: a run with no finished trial, an arm of
// the run without a valid trial, an incomplete run without
// --allow-partial, and a gate with no data each exit 3 (a gate failed),
// naming what could not be judged; and report says on standard error how
// many planned trials did not finish and how many are invalid, whether or
// not it judges gates.
func TestReportGatesFailClosed(t *testing.T) {
	tmp := t.TempDir()
	run := filepath.Join(tmp, "run")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "2", "--profile", "quick", "--out", run); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	// A gate set every arm of this run passes, whatever the model does.
	lenient := filepath.Join(tmp, "lenient.yaml")
	os.WriteFile(lenient, []byte("name: lenient\ngates:\n  - name: answered\n    metric: availability\n    op: \">=\"\n    value: 0\n"), 0o644)
	if _, errOut, code := qmlsabSplit(t, "report", "--format", "json", "--gates", lenient, run); code != 0 || errOut != "" {
		t.Fatalf("a complete run whose gates pass: exit %d, want 0 and nothing on stderr:\n%s", code, errOut)
	}

	// No finished trial: nothing to report, and no gate set can pass.
	none := withTrials(t, run, map[string]store.Status{"D#1": store.Interrupted, "D#2": store.Pending, "E#1": store.Pending, "E#2": store.Pending})
	_, errOut, code := qmlsabSplit(t, "report", "--format", "html,json", "--gates", lenient, none)
	if code != exitGateFailed || !strings.Contains(errOut, "no trial finished (4 planned)") {
		t.Errorf("report --gates on a run with no finished trial: exit %d, want %d saying no trial finished:\n%s", code, exitGateFailed, errOut)
	}
	if _, err := os.Stat(filepath.Join(none, "report.html")); err == nil {
		t.Error("a report was written of a run with no finished trial")
	}
	if _, errOut, code := qmlsabSplit(t, "report", "--format", "json", none); code != exitFailed || !strings.Contains(errOut, "nothing to report") {
		t.Errorf("report (no gates) on a run with no finished trial: exit %d, want %d:\n%s", code, exitFailed, errOut)
	}

	// An arm without a valid trial: its gates cannot be judged, even when
	// the incomplete run is accepted.
	noE := withTrials(t, run, map[string]store.Status{"E#1": store.Pending, "E#2": store.Interrupted})
	_, errOut, code = qmlsabSplit(t, "report", "--format", "json", "--gates", lenient, "--allow-partial", noE)
	if code != exitGateFailed || !strings.Contains(errOut, `arm E has no valid trial (2 unfinished): its gates "answered" cannot be judged`) {
		t.Errorf("report --gates with arm E without trials: exit %d, want %d naming E:\n%s", code, exitGateFailed, errOut)
	}
	if strings.Contains(errOut, "arm D") {
		t.Errorf("arm D's gate passed, yet:\n%s", errOut)
	}
	invalidE := withTrials(t, run, map[string]store.Status{"E#1": store.Invalid, "E#2": store.Invalid})
	_, errOut, code = qmlsabSplit(t, "report", "--format", "json", "--gates", lenient, invalidE)
	if code != exitGateFailed || !strings.Contains(errOut, `arm E has no valid trial (2 invalid)`) || !strings.Contains(errOut, "2 finished trial(s) are invalid") {
		t.Errorf("report --gates with E's trials invalid: exit %d, want %d naming E and counting the invalid:\n%s", code, exitGateFailed, errOut)
	}

	// An incomplete run: said on stderr with counts; its gates are not
	// judged on part of it unless --allow-partial.
	partial := withTrials(t, run, map[string]store.Status{"D#2": store.Interrupted, "E#2": store.Pending})
	stdout, errOut, code := qmlsabSplit(t, "report", "--format", "json", partial)
	if code != 0 || !strings.Contains(errOut, "2 planned trial(s) did not finish (2 of 4 planned trials finished)") || !strings.Contains(errOut, "--allow-partial") {
		t.Errorf("report of an incomplete run: exit %d, want 0 with the counts on stderr:\nstdout:\n%s\nstderr:\n%s", code, stdout, errOut)
	}
	if strings.Contains(stdout, "did not finish") {
		t.Errorf("the incompleteness went to stdout, not stderr:\n%s", stdout)
	}
	_, errOut, code = qmlsabSplit(t, "report", "--format", "json", "--gates", lenient, partial)
	if code != exitGateFailed || !strings.Contains(errOut, "the run is incomplete (2 of 4 planned trials finished)") {
		t.Errorf("report --gates of an incomplete run: exit %d, want %d:\n%s", code, exitGateFailed, errOut)
	}
	_, errOut, code = qmlsabSplit(t, "report", "--format", "json", "--gates", lenient, "--allow-partial", partial)
	if code != 0 || !strings.Contains(errOut, "accepted (--allow-partial)") {
		t.Errorf("report --gates --allow-partial of an incomplete run whose gates pass: exit %d, want 0:\n%s", code, errOut)
	}

	// A gate with no data fails, naming the arm, the gate and the metric.
	merge := filepath.Join(tmp, "merge-only.yaml")
	os.WriteFile(merge, []byte("name: merge-only\ngates:\n  - name: no unsafe sheds\n    metric: unsafe_sheds\n    op: \"==\"\n    value: 0\n"), 0o644)
	stdout, errOut, code = qmlsabSplit(t, "report", "--format", "json", "--gates", merge, run)
	if code != exitGateFailed || !strings.Contains(errOut, `arm D, gate "no unsafe sheds": no data (unsafe_sheds: no valid trial has it)`) ||
		!strings.Contains(errOut, `arm E, gate "no unsafe sheds": no data`) || !strings.Contains(stdout, "no data (") {
		t.Errorf("report --gates with a gate on a metric the run lacks: exit %d, want %d naming each arm and the metric:\nstdout:\n%s\nstderr:\n%s",
			code, exitGateFailed, stdout, errOut)
	}
}
