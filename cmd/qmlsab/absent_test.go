package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/store"
)

// A run against a server that reports none of queryMemory, queues and mem
// and no hostInfo.system.memLimitMB (cmd/mongosim told to leave them out,
// as a 7.0 mongod or another implementation lacks them): it completes,
// every metric resting on those sections is absent — "–" with the reason
// in the terminal table, trial.json, the HTML and Markdown reports and
// summary.json, never 0 — and the gates on them say "no data", neither
// pass nor FAIL.
func TestRunAgainstAServerWithoutSheddingQueuesOrMem(t *testing.T) {
	if testing.Short() {
		t.Skip("an 11 s wall-clock trial on a local set of cmd/mongosim processes")
	}
	tmp := t.TempDir()
	bin, err := stormtest.BuildMongosim(tmp)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(tmp, "mongosim-old")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --simScanScale 200 --simBaselineMB 512 --simMemLimitMB 8192 --simCPUs 4 "+
		"--simOmitStatusSections queryMemory,queues,mem --simOmitHostInfo memLimitMB \"$@\"\n", bin)
	armsFile := filepath.Join(tmp, "arms.yaml")
	workloadFile := filepath.Join(tmp, "short.yaml")
	for name, doc := range map[string]string{
		wrapper:      script,
		armsFile:     "arms:\n  - name: Old\n    target: local\n    mongod: " + wrapper + "\n    setParameters: {}\n",
		workloadFile: "name: short\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 40\n  phases: {warmup: 2s, storm: 6s, recovery: 3s}\n",
	} {
		if err := os.WriteFile(name, []byte(doc), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "run")
	out, code := qmlsab(t, "run", "--arms", "Old", "--arms-file", armsFile, "--workload", workloadFile, "--n", "1",
		"--clock", "wall", "--parallel", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials["Old"]) != 1 {
		t.Fatalf("want one finished trial:\n%s", out)
	}
	trial := r.Trials["Old"][0]
	reasons := map[string]string{
		"admissions_per_s":              "the server reported no queues.execution.read.lowPriority",
		"kills_per_s":                   "the server reported no queues.execution.read.lowPriority",
		"read_tickets_median":           "the server reported no queues.execution.read.totalTickets",
		"lowpri_queue_sustained_growth": "the server reported no queues.execution.read.lowPriority.queueLength",
		"rss_peak_bytes":                "the server reported no mem.resident",
	}
	for m, why := range reasons {
		if v, ok := trial.Metrics[m]; ok {
			t.Errorf("trial.json: %s = %v from a server that does not report it; want absent", m, v)
		}
		if trial.Absent[m] != why {
			t.Errorf("trial.json: %s absent because %q, want %q", m, trial.Absent[m], why)
		}
	}
	for _, m := range []string{"availability", "storm_completed", "canary_p99_ms", "failovers"} {
		if _, ok := trial.Metrics[m]; !ok {
			t.Errorf("trial.json: %s absent (%q); the client measured it", m, trial.Absent[m])
		}
	}
	// A server without queryMemory.loadShedding has no shedder: it shed
	// nothing, a zero, not a gap.
	if v, ok := trial.Metrics["server_sheds_per_s"]; !ok || v != 0 {
		t.Errorf("trial.json: server_sheds_per_s = %v (present %v, %q); a server without a shedder sheds nothing", v, ok, trial.Absent["server_sheds_per_s"])
	}
	// The terminal table: the rss column is "–[n]" and note n says why.
	row, note := strings.Fields(lineWithFields(out, "Old#1", "valid")), ""
	if len(row) > 2 {
		note, _ = between(row[len(row)-1]+"\n", "–[", "]\n")
	}
	if !isDigits(note) {
		t.Fatalf("the trial row does not end with an absent rss peak (–[n]):\n%s", out)
	}
	if want := "[" + note + "] absent: the server reported no mem.resident"; !strings.Contains(out, want) {
		t.Errorf("run output lacks %q:\n%s", want, out)
	}

	// A gate that cannot be judged fails the set (fail closed): exit 3,
	// naming the arm, the gate and the metric.
	out, code = qmlsab(t, "report", "--gates", "sweeper-acceptance", "--format", "html,json,md", dir)
	if code != exitGateFailed {
		t.Fatalf("report: exit %d, want %d: gates on absent metrics cannot pass\n%s", code, exitGateFailed, out)
	}
	for _, gate := range []string{"queue bounded", "sheds outpace admissions"} {
		line := gateRow(out, gate, "Old")
		if !strings.HasPrefix(line, "no data (") {
			t.Errorf("gate %q on an absent metric: %q, want no data (reason)\n%s", gate, line, out)
		}
		if want := `arm Old, gate "` + gate + `": no data (`; !strings.Contains(out, want) {
			t.Errorf("the exit message does not name %q:\n%s", want, out)
		}
	}
	html := readFile(t, filepath.Join(dir, "report.html"))
	for _, want := range []string{`title="absent: the server reported no queues.execution.read.lowPriority"`,
		`title="absent: the server reported no mem.resident"`, `<span class="nodata">no data</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	md := readFile(t, filepath.Join(dir, "summary.md"))
	for _, want := range []string{"– (note ", "the server reported no queues.execution.read.lowPriority", "no data, which fails"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	var summary struct {
		Arms []struct {
			Metrics map[string]any
			Absent  map[string]string
			Gates   []struct{ Name, Status, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "summary.json"))), &summary); err != nil || len(summary.Arms) != 1 {
		t.Fatalf("summary.json: %v %+v", err, summary)
	}
	arm := summary.Arms[0]
	for m, why := range reasons {
		if _, ok := arm.Metrics[m]; ok {
			t.Errorf("summary.json has %s", m)
		}
		if arm.Absent[m] != why {
			t.Errorf("summary.json: %s absent because %q, want %q", m, arm.Absent[m], why)
		}
	}
	for _, g := range arm.Gates {
		if g.Name == "queue bounded" && (g.Status != "no data" || !strings.Contains(g.Reason, "queues.execution")) {
			t.Errorf("summary.json gate %+v", g)
		}
	}

	// The killOp actor against the same server: without mem.resident it
	// cannot tell the memory's level, so it kills nothing and the run
	// goes on (it once panicked on the missing memLimitMB and took the
	// whole process down, leaving run.lock behind).
	actorArms := filepath.Join(tmp, "actor.yaml")
	if err := os.WriteFile(actorArms, []byte("arms:\n  - name: OldD\n    target: local\n    mongod: "+wrapper+
		"\n    setParameters: {}\n    actors:\n      - killop: {rssHighPercent: 70, interval: 100ms, appName: qmlsab-storm}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	actorDir := filepath.Join(tmp, "actor-run")
	out, code = qmlsab(t, "run", "--arms", "OldD", "--arms-file", actorArms, "--workload", workloadFile, "--n", "1",
		"--clock", "wall", "--parallel", "1", "--out", actorDir)
	if code != 0 {
		t.Fatalf("run with the killOp actor: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(actorDir, "run.lock")); !os.IsNotExist(err) {
		t.Errorf("run.lock left behind: %v", err)
	}
	ar, err := store.Open(actorDir)
	if err != nil || len(ar.Trials["OldD"]) != 1 {
		t.Fatalf("the actor's run: %v\n%s", err, out)
	}
	if k := ar.Trials["OldD"][0].Metrics["storm_killed"]; k != 0 {
		t.Errorf("the actor killed %v ops without knowing the server's memory", k)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run whose every trial is invalid measured nothing: it exits 1 and
// names each trial's reason.
func TestRunWithEveryTrialInvalidExits1(t *testing.T) {
	tmp := t.TempDir()
	armsFile := filepath.Join(tmp, "arms.yaml")
	missing := filepath.Join(tmp, "no-such-mongod")
	if err := os.WriteFile(armsFile, []byte("arms:\n  - name: L\n    target: local\n    mongod: "+missing+"\n    setParameters: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := qmlsab(t, "run", "--arms", "L", "--arms-file", armsFile, "--n", "2", "--profile", "quick", "--clock", "wall",
		"--out", filepath.Join(tmp, "run"))
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"every trial of the run is invalid", "L#1: provisioning", "L#2: provisioning", missing} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// gateRow is what the terminal's row of a gate and an arm says after
// them ("" when there is no such row).
func gateRow(out, gate, arm string) string {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, "gate "+gate)
		if f := strings.Fields(rest); ok && rest != strings.TrimLeft(rest, " \t") && len(f) > 1 && f[0] == arm {
			_, after, _ := strings.Cut(rest, arm)
			return strings.TrimLeft(after, " \t")
		}
	}
	return ""
}
