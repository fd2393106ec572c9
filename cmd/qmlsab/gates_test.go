package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `qmlsab report --gates sweeper-acceptance` on a D,E run of the embedded
// default exits 0 (D holds, E falls) and prints what each gate compared;
// with E given master's formula through an arms file, E stops falling and
// the report exits 3.
func TestReportGatesExitCodesFollowEachArmsExpectation(t *testing.T) {
	if testing.Short() {
		t.Skip("two virtual runs")
	}
	tmp := t.TempDir()
	ok := filepath.Join(tmp, "de")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "3", "--out", ok); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	out, code := qmlsab(t, "report", "--gates", "sweeper-acceptance", "--format", "json", ok)
	if code != 0 {
		t.Fatalf("report on D,E: exit %d, want 0\n%s", code, out)
	}
	for _, want := range []string{"D holds: no failover", "failovers max = 0, want == 0", "E falls: OOM every trial", "restarts min = "} {
		if !strings.Contains(out, want) {
			t.Errorf("gate lines lack %q:\n%s", want, out)
		}
	}

	armsFile := filepath.Join(tmp, "arms.yaml")
	if err := os.WriteFile(armsFile, []byte(`arms:
  - name: E
    build: master
    target: embedded
    setParameters:
      executionControlDeprioritizationGate: "true"
      internalQueryMaxBlockingSortMemoryUsageBytes: "33554432"
      throughputProbingMinConcurrency: "10"
      executionControlConcurrentReadLowPriorityTransactions: "3"
      queryMemoryLoadSheddingLowMarkPercent: "30"
      queryMemoryLoadSheddingHighMarkPercent: "70"
      simShedHazard: odds
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(tmp, "de-master")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--arms-file", armsFile, "--n", "3", "--out", bad); code != 0 {
		t.Fatalf("run with master's E: exit %d\n%s", code, out)
	}
	out, code = qmlsab(t, "report", "--gates", "sweeper-acceptance", "--format", "json", bad)
	if code != 3 || !strings.Contains(out, "E falls: unavailable") || !strings.Contains(out, "FAIL (availability median = ") {
		t.Fatalf("report with master's E: exit %d, want 3 with E's falls gate failing\n%s", code, out)
	}
}

// The gate lines come out even when the history step after them fails,
// so a refused history never hides what the gates found; without the
// history step a failed gate is exit 3.
func TestGateLinesPrecedeTheHistoryStep(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	if out, code := qmlsab(t, "run", "--arms", "E", "--n", "1", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	strict := filepath.Join(tmp, "strict.yaml")
	os.WriteFile(strict, []byte("name: strict\ngates:\n  - name: impossible\n    metric: availability\n    op: \">\"\n    value: 1.5\n"), 0o644)
	line := "gate impossible                       E    FAIL (availability median = "
	out, code := qmlsab(t, "report", dir, "--format", "json", "--gates", strict)
	if code != exitGateFailed || !strings.Contains(out, line) {
		t.Fatalf("failed gate: exit %d, want %d with its line\n%s", code, exitGateFailed, out)
	}
	notADir := filepath.Join(tmp, "a-file")
	os.WriteFile(notADir, []byte("x"), 0o644)
	out, code = qmlsab(t, "report", dir, "--format", "json", "--gates", strict, "--history", "--history-db", filepath.Join(notADir, "h.db"))
	if code != exitFailed || !strings.Contains(out, line) || !strings.Contains(out, "qmlsab report: --history: ") {
		t.Errorf("a history that cannot be opened: exit %d, want 1 after the gate lines\n%s", code, out)
	}
}
