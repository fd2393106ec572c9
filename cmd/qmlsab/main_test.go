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
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/store"
)

// qmlsab runs the CLI in-process and returns its output and exit code.
// testFile writes content to a file name in a new temporary folder and
// returns its path.
func testFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func qmlsab(t testing.TB, args ...string) (string, int) {
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

// wallAttempts bounds runWhileTheHostKeepsUp's retries.
const wallAttempts = 3

// runWhileTheHostKeepsUp runs `qmlsab run args… --out <a fresh folder>`
// on the wall clock and returns the folder, the run read back and what
// it printed. A trial marked "host saturated" measured this machine,
// not the server: the in-process servers run here, and a busy 2-core
// machine can starve them. Such a run is retried (up to wallAttempts);
// when every attempt was starved the test is skipped, saying why, since
// its subject was not measured. Any exit but 0 fails the test.
func runWhileTheHostKeepsUp(t *testing.T, args ...string) (string, *store.Run, string) {
	t.Helper()
	var why []string
	for attempt := 1; attempt <= wallAttempts; attempt++ {
		dir := filepath.Join(t.TempDir(), "run")
		out, code := qmlsab(t, append(append([]string{"run"}, args...), "--out", dir)...)
		m, err := store.ReadManifest(dir)
		if err != nil {
			t.Fatalf("exit %d, no manifest (%v):\n%s", code, err, out)
		}
		starved := stormtest.Starved(m)
		if starved == "" {
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			r, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			return dir, r, out
		}
		why = append(why, starved)
		t.Logf("attempt %d measured the busy host, not the server: %s", attempt, starved)
	}
	t.Skipf("the host starved all %d wall-clock attempts, so the server was not measured:\n  %s", wallAttempts, strings.Join(why, "\n  "))
	return "", nil, ""
}

func TestArmsListAndShow(t *testing.T) {
	out, code := qmlsab(t, "arms", "list")
	if code != 0 {
		t.Fatalf("arms list exit %d: %s", code, out)
	}
	for _, name := range []string{"A ", "D ", "E ", "F ", "G "} {
		if !strings.Contains(out, "\n"+name) {
			t.Errorf("arms list lacks arm %q:\n%s", name, out)
		}
	}
	out, code = qmlsab(t, "arms", "show", "F")
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
	out, code := qmlsab(t, "arms", "show", "--arms-file", good, "U")
	if code != 0 || strings.Contains(out, "pa55") || !strings.Contains(out, "bob:<redacted>@127.0.0.1:27017") {
		t.Fatalf("show of a uri arm (exit %d) must redact the password:\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("arms:\n  - name: X\n    colour: blue\n"), 0o644)
	for _, args := range [][]string{{"arms", "list", "--arms-file", bad}, {"arms", "show", "--arms-file", bad, "X"}} {
		out, code := qmlsab(t, args...)
		if code != 1 || !strings.Contains(out, bad+`:3: unknown key "colour"`) {
			t.Errorf("%v: exit %d, output %q; want exit 1 naming %s:3", args, code, out, bad)
		}
	}
	out, code = qmlsab(t, "arms", "list", "--arms-file", filepath.Join(dir, "missing.yaml"))
	if code != 1 || !strings.Contains(out, "missing.yaml") {
		t.Errorf("missing file: exit %d %q", code, out)
	}
	out, code = qmlsab(t, "arms", "show", "U", "--arms-file", good)
	if code != 1 || !strings.Contains(out, "after the flags") {
		t.Errorf("flags after the name: exit %d %q; want a message saying where flags go", code, out)
	}
	out, code = qmlsab(t, "arms", "show", "Z")
	if code != 1 || !strings.Contains(out, `unknown arm "Z"`) {
		t.Errorf("unknown arm: exit %d %q", code, out)
	}
}

func TestRunRejectsBadFlagsByName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--profile", "fast"}, "--profile"},
		{[]string{"run", "--arms", "D,Q"}, `unknown arm "Q"`},
		{[]string{"run", "-n", "0"}, "-n 0: "},
		{[]string{"run", "--workload", "nope"}, "--workload"},
		{[]string{"run", "--resume", filepath.Join(t.TempDir(), "missing")}, "--resume"},
		{[]string{"run", "--clock", "fast"}, "--clock"},
		{[]string{"run", "--arms", "D,D"}, `arm "D" is named twice`},
	} {
		out, code := qmlsab(t, tc.args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %q; want an error naming %s", tc.args, code, out, tc.want)
		}
	}
}

func TestRunQuickProfileWritesASimulatedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	// The investigation's storm before the fit: an in-process wire set
	// keeps up with 150 queries/s on a busy 2-core machine, where the
	// fitted 271.5/s can saturate the host and leave the trials invalid.
	wl := testFile(t, "storm150.yaml", "name: storm150\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 150\n")
	// One arm: the wall-clock contrast of D's actor with E's shedder is
	// run's TestArmContrastOnBothClocks; here the command line's quick
	// wall-clock run, its banner and its resume.
	dir, r, out := runWhileTheHostKeepsUp(t, "--arms", "E", "--n", "1", "--profile", "quick", "--clock", "wall", "--workload", wl)
	if !strings.Contains(out, "SIMULATED") {
		t.Errorf("a run on mongosim must say it is simulated:\n%s", out)
	}
	if len(r.Valid("E")) != 1 {
		t.Fatalf("E: %d valid trials, want 1:\n%s", len(r.Valid("E")), out)
	}
	tr := r.Trials["E"][0]
	if tr.Metrics["storm_completed"]+tr.Metrics["storm_shed"]+tr.Metrics["storm_killed"]+tr.Metrics["storm_failed"] == 0 {
		t.Errorf("E: no storm ops recorded: %v", tr.Metrics)
	}
	// E sheds in the server.
	if tr.Metrics["storm_shed"] == 0 {
		t.Errorf("E should shed: %v", tr.Metrics)
	}
	out, code := qmlsab(t, "run", "--resume", dir)
	if code != 0 || strings.Count(out, "started") != 0 {
		t.Errorf("resuming a finished run must run nothing (exit %d):\n%s", code, out)
	}
	// The resume line states the run's own plan, not this command line's defaults.
	if !strings.Contains(out, "× 1 trial,") || !strings.Contains(out, "wall clock, profile quick") {
		t.Errorf("resume must state the run's own plan (1 trial per arm, wall clock, quick):\n%s", out)
	}
	// A resumed run keeps its conditions: another clock, profile or n is refused by name.
	for _, tc := range [][]string{{"--clock", "virtual"}, {"--profile", "default"}, {"-n", "2"}, {"--seed", "7"}} {
		out, code := qmlsab(t, append([]string{"run", "--resume", dir}, tc...)...)
		if code != 1 || !strings.Contains(out, tc[0]+" "+tc[1]+": ") || !strings.Contains(out, "keeps its conditions") {
			t.Errorf("resume with %v: exit %d, want 1 and a refusal naming %s:\n%s", tc, code, tc[0], out)
		}
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.Clock != "wall" || r.Manifest.Profile != "quick" || r.Manifest.Parallel != 1 {
		t.Errorf("manifest conditions clock %q profile %q parallel %d, want wall, quick, 1 (one wall trial at a time by default)",
			r.Manifest.Clock, r.Manifest.Profile, r.Manifest.Parallel)
	}
}

// The main job on the embedded default: five trials per arm with the
// default profile's 150 model-seconds of storm, in model time.
func TestRunMainJobInModelTime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "5", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "SIMULATED") || !strings.Contains(out, "virtual time") {
		t.Errorf("a model-time run must say it is simulated and in virtual time:\n%s", out)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		if len(r.Trials[arm]) != 5 {
			t.Fatalf("%s: %d valid trials, want 5", arm, len(r.Trials[arm]))
		}
		for _, tr := range r.Trials[arm] {
			if storm := tr.Phases["recovery"] - tr.Phases["storm"]; storm < 120 {
				t.Errorf("%s#%d: %.0f s of storm, want at least 120 model seconds", arm, tr.Index, storm)
			}
		}
	}
}

// The partial-write investigation end to end: E's shedder sheds a secondary's $merge after it
// wrote; G's write-started flag never does.
func TestRunMergeWorkloadCountsUnsafeSheds(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	_, r, out := runWhileTheHostKeepsUp(t, "--workload", "merge_partial_write", "--arms", "E,G", "--n", "3")
	for arm, wantUnsafe := range map[string]bool{"E": true, "G": false} {
		if len(r.Valid(arm)) != 3 {
			t.Fatalf("%s: %d valid trials, want 3; the run said:\n%s", arm, len(r.Valid(arm)), out)
		}
		for _, tr := range r.Valid(arm) {
			m := tr.Metrics
			if got := m["unsafe_sheds"] > 0; got != wantUnsafe {
				t.Errorf("%s#%d: unsafe_sheds %v, want >0: %v", arm, tr.Index, m["unsafe_sheds"], wantUnsafe)
			}
			if m["unsafe_sheds_primary"] != 0 {
				t.Errorf("%s#%d: a $merge on the primary holds the write-intent latch, yet %v unsafe sheds there", arm, tr.Index, m["unsafe_sheds_primary"])
			}
		}
	}
}

func TestWorkloadsListShowAndBadFiles(t *testing.T) {
	out, code := qmlsab(t, "workloads", "list")
	if code != 0 || !strings.Contains(out, "spill_to_disk") || !strings.Contains(out, "merge_partial_write") {
		t.Fatalf("workloads list: exit %d\n%s", code, out)
	}
	out, code = qmlsab(t, "workloads", "show", "spill_to_disk")
	if code != 0 || !strings.Contains(out, "stormRate: 207") || !strings.Contains(out, "storm: 2m30s") {
		t.Fatalf("workloads show: exit %d\n%s", code, out)
	}
	// What show prints is a workload file run accepts.
	f := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(f, []byte(strings.Replace(out, "name: spill_to_disk", "name: mine", 1)), 0o644)
	if out, code := qmlsab(t, "workloads", "show", f); code != 0 || !strings.Contains(out, "name: mine") {
		t.Errorf("show of a file written from show: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: b\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: lots\n"), 0o644)
	out, code = qmlsab(t, "run", "--workload", bad, "--out", filepath.Join(t.TempDir(), "r"))
	if code != 1 || !strings.Contains(out, bad+":4:") {
		t.Errorf("bad workload file: exit %d, want 1 and %s:4 in\n%s", code, bad, out)
	}
}

func TestReportExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "2", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	out, code := qmlsab(t, "report", "--format", "html,json,perf,bench,md", dir)
	if code != 0 || !strings.Contains(out, "report: "+filepath.Join(dir, "report.html")) {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	for _, f := range []string{"report.html", "summary.json", "perf.json", "bench.txt", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Flags after the folder work too.
	pass := filepath.Join(t.TempDir(), "pass.yaml")
	os.WriteFile(pass, []byte("name: lenient\ngates:\n  - metric: availability\n    op: \">=\"\n    value: 0\n"), 0o644)
	if out, code := qmlsab(t, "report", dir, "--gates", pass, "--format", "json"); code != 0 || !strings.Contains(out, "pass") {
		t.Errorf("passing gates: exit %d\n%s", code, out)
	}
	strict := filepath.Join(t.TempDir(), "strict.yaml")
	os.WriteFile(strict, []byte("name: strict\ngates:\n  - metric: availability\n    op: \">\"\n    value: 1.5\n"), 0o644)
	if out, code := qmlsab(t, "report", "--gates", strict, "--format", "json", dir); code != 3 || !strings.Contains(out, "FAIL") {
		t.Errorf("failing gate: exit %d, want 3\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: b\ngates:\n  - metric: availability\n    op: \"=>\"\n"), 0o644)
	missing := filepath.Join(t.TempDir(), "nothing")
	// Gates that could only say "no data" or ignore what they say: exit 1
	// at their line, not a pass.
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	os.WriteFile(unknown, []byte("name: u\ngates:\n  - op: \">\"\n    metric: nope\n"), 0o644)
	both := filepath.Join(t.TempDir(), "both.yaml")
	os.WriteFile(both, []byte("name: b\ngates:\n  - metric: server_sheds_per_s\n    op: \">\"\n    than: admissions_per_s\n    value: 3\n"), 0o644)
	noArm := filepath.Join(t.TempDir(), "noarm.yaml")
	os.WriteFile(noArm, []byte("name: z\ngates:\n  - metric: availability\n    op: \">\"\n    value: 0.9\n    arms: [Z]\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--gates", bad, dir}, bad + ":3: op"},
		{[]string{"report", "--gates", unknown, dir}, unknown + `:4: metric "nope" is not a metric`},
		{[]string{"report", "--gates", both, dir}, both + ":6: value and than"},
		{[]string{"report", "--gates", noArm, dir}, noArm + `:6: gate "availability > 0.9": arms: "Z" is not an arm of this run (its arms: D, E)`},
		{[]string{"report", "--gates", "seed001", dir}, "seed001"},
		{[]string{"report", "--format", "pdf", dir}, `--format "pdf"`},
		{[]string{"report", "--baseline", "Q", dir}, `--baseline "Q"`},
		{[]string{"report", "--alpha", "2", dir}, "--alpha"},
		{[]string{"report", missing}, missing + ": not a run folder"},
		{[]string{"report", "--results", missing}, missing},
	} {
		out, code := qmlsab(t, tc.args...)
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want 1 naming %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}
