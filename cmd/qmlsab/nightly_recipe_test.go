package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// recipeMarker is the HTML comment that precedes the README's nightly
// recipe: the shell block after it is the job a nightly pipeline runs.
const recipeMarker = "<!-- nightly-recipe:"

// readmeRecipe is the README's nightly recipe: the lines of the first
// shell block after recipeMarker, as written.
func readmeRecipe(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), recipeMarker)
	if !ok {
		t.Fatalf("README.md has no %q marker before its nightly recipe", recipeMarker)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("README.md's nightly recipe marker is not followed by a ```sh block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md's nightly recipe block does not end")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// recipeRunner runs the README's recipe in a folder of its own, as a
// nightly pipeline would: with bin/qmlsab (this command, built), the
// night's date given to date(1), and nightly-arms.yaml in place.
type recipeRunner struct {
	t      testing.TB
	dir    string
	lines  []string
	shims  string
	lineOf map[string]int // "run", "report", "detect" → the recipe line
}

func newRecipeRunner(t testing.TB) *recipeRunner {
	t.Helper()
	r := &recipeRunner{t: t, dir: t.TempDir(), lines: readmeRecipe(t), shims: t.TempDir(), lineOf: map[string]int{}}
	for i, l := range r.lines {
		for _, cmd := range []string{"run", "report", "history detect"} {
			if strings.HasPrefix(l, "bin/qmlsab "+cmd+" ") {
				r.lineOf[strings.TrimPrefix(cmd, "history ")] = i
			}
		}
	}
	if len(r.lineOf) != 3 || !strings.HasPrefix(r.lines[0], "export QMLSAB_RUN_ID=") {
		t.Fatalf("the README's recipe is not export QMLSAB_RUN_ID=…, then run, report and history detect:\n%s", strings.Join(r.lines, "\n"))
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(buildQmlsab(t), filepath.Join(r.dir, "bin", "qmlsab")); err != nil {
		t.Fatal(err)
	}
	date, err := exec.LookPath("date")
	if err != nil {
		t.Skip("no date(1) to stand in for")
	}
	shim := fmt.Sprintf("#!/bin/sh\nexec %s -d \"$QMLSAB_TEST_NIGHT\" \"$@\"\n", date)
	if err := os.WriteFile(filepath.Join(r.shims, "date"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// armsAt writes nightly-arms.yaml: the built-in D with its killOp actor
// acting above pct % of the memory limit (the built-in's is 70).
func (r *recipeRunner) armsAt(pct int) {
	r.t.Helper()
	out, code := qmlsab(r.t, "arms", "show", "D")
	if code != 0 || !strings.Contains(out, "rssHighPercent: 70\n") {
		r.t.Fatalf("arms show D: exit %d:\n%s", code, out)
	}
	doc := strings.Replace(out, "rssHighPercent: 70\n", fmt.Sprintf("rssHighPercent: %d\n", pct), 1)
	if err := os.WriteFile(filepath.Join(r.dir, "nightly-arms.yaml"), []byte(doc), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// night runs the recipe's lines (the export line and those of cmds, in
// the recipe's order) on the given date, and returns each command's exit
// code and output.
func (r *recipeRunner) night(date string, cmds ...string) (map[string]int, map[string]string) {
	r.t.Helper()
	var script strings.Builder
	script.WriteString(r.lines[0] + "\n")
	for i, l := range r.lines[1:] {
		for _, c := range cmds {
			if r.lineOf[c] == i+1 {
				fmt.Fprintf(&script, "echo '@@begin %s'\n%s\necho \"@@end %s $?\"\n", c, l, c)
			}
		}
	}
	cmd := exec.Command("sh", "-c", script.String())
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "PATH="+r.shims+string(os.PathListSeparator)+os.Getenv("PATH"), "QMLSAB_TEST_NIGHT="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("the recipe's shell: %v\n%s", err, out)
	}
	codes, outs := map[string]int{}, map[string]string{}
	// Each command's output stands between "@@begin NAME" and
	// "@@end NAME CODE" lines.
	for rest := string(out); ; {
		_, block, ok := strings.Cut(rest, "@@begin ")
		if !ok {
			break
		}
		name, body, _ := strings.Cut(block, "\n")
		body, end, ok := strings.Cut(body, "@@end ")
		if !ok {
			break
		}
		endLine, after, _ := strings.Cut(end, "\n")
		if f := strings.Fields(endLine); len(f) == 2 && isDigits(f[1]) {
			codes[name], _ = strconv.Atoi(f[1])
			outs[name] = body
		}
		rest = after
	}
	if len(codes) != len(cmds) {
		r.t.Fatalf("ran %v, got the exit codes of %v:\n%s", cmds, codes, out)
	}
	return codes, outs
}

// runFolder is the run folder of a night's stamp, and its manifest.
func (r *recipeRunner) runFolder(stamp string) (string, store.Manifest) {
	r.t.Helper()
	dir, err := store.NewestRunOf(filepath.Join(r.dir, "results"), stamp)
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := store.ReadManifest(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return dir, m
}

// The README's nightly recipe, run as written: five unchanged nights each
// exit 0 at every step (the first with no baseline yet, F's predicted
// gates reported and not gating), each night its own seed and one id for
// its folder, manifest and history night; then a night whose arms file
// moves D's killOp actor from 70 % to 95 % RSS exits 4 at history detect,
// naming the change. (Issue 38 named 80 %: how often the job finds that
// change is BenchmarkNightlyRecipeFindsD's measurement, in docs/nightly.md,
// and these nights' sixth is one of the histories it misses.)
// Then it fails closed: a night whose run never started, one whose D
// measured nothing, and one whose run died part-way never pass.
func TestTheREADMEsNightlyRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("nine nights of the model")
	}
	// Model time on the CPU: it runs beside the other test of its kind
	// (TestWorstAcceptedCornerRunsUnderTheBudget) once the package's
	// real-time tests are done.
	t.Parallel()
	r := newRecipeRunner(t)
	all := []string{"run", "report", "detect"}
	seeds := map[uint64]string{}
	r.armsAt(70)
	for n := 1; n <= 5; n++ {
		date := fmt.Sprintf("2026-01-%02d", n)
		codes, outs := r.night(date, all...)
		for _, c := range all {
			if codes[c] != 0 {
				t.Fatalf("unchanged night %d: %s exit %d, want 0:\n%s", n, c, codes[c], outs[c])
			}
		}
		stamp := fmt.Sprintf("nightly-202601%02d", n)
		dir, m := r.runFolder(stamp)
		if filepath.Base(dir) != m.RunID || !strings.Contains(outs["report"], "as night "+m.RunID) {
			t.Errorf("night %d: folder %s, run id %s, report said:\n%s", n, dir, m.RunID, outs["report"])
		}
		if prev, ok := seeds[m.Seed]; ok {
			t.Errorf("night %d drew seed %d, as %s did", n, m.Seed, prev)
		}
		seeds[m.Seed] = stamp
		if n == 1 && !strings.Contains(strings.Join(strings.Fields(outs["detect"]), " "), "no baseline yet (the first night)") {
			t.Errorf("night 1's detect does not say it has no baseline yet:\n%s", outs["detect"])
		}
		if !strings.Contains(outs["report"], "reported, not gated") {
			t.Errorf("night %d: F's gates are not reported as predictions:\n%s", n, outs["report"])
		}
	}

	// Night 6: D's actor acts only above 95 % RSS. (At 80 %, the change
	// issue 38 named, these nights are among the histories that
	// BenchmarkNightlyRecipeFindsD measured the job to miss: detect exits
	// 0 on them. Other dates are not picked to make 80 % pass.)
	r.armsAt(95)
	codes, outs := r.night("2026-01-06", all...)
	if codes["run"] != 0 || codes["report"] != 0 {
		t.Fatalf("regression night: run exit %d, report exit %d:\n%s\n%s", codes["run"], codes["report"], outs["run"], outs["report"])
	}
	detect := strings.Join(strings.Fields(outs["detect"]), " ")
	if codes["detect"] != exitRegression || !strings.Contains(detect, "regression(s) tonight") ||
		!strings.Contains(detect, "arm D actors[0].killop.rssHighPercent 70 → 95") {
		t.Fatalf("regression night: detect exit %d, want %d naming tonight's regression and D's change:\n%s", codes["detect"], exitRegression, outs["detect"])
	}
	t.Logf("night 6, D at 95 %%:\n%s", outs["detect"])

	// Night 7: the run does not start (its arms file is gone); the report
	// and detect must not pass it as night 6.
	os.Remove(filepath.Join(r.dir, "nightly-arms.yaml"))
	codes, outs = r.night("2026-01-07", all...)
	if codes["run"] != 1 || codes["report"] != 1 || !strings.Contains(outs["report"], `no run of $QMLSAB_RUN_ID="nightly-20260107"`) ||
		codes["detect"] != 1 || !strings.Contains(outs["detect"], "not tonight's") {
		t.Errorf("a night whose run never started: exits %v:\n%s\n%s\n%s", codes, outs["run"], outs["report"], outs["detect"])
	}

	// Night 8: every trial of D invalid (the run finished, D measured
	// nothing): D's gates fail the report, and detect has no data.
	r.armsAt(70)
	if codes, outs = r.night("2026-01-08", "run"); codes["run"] != 0 {
		t.Fatalf("night 8: run exit %d:\n%s", codes["run"], outs["run"])
	}
	dir, m := r.runFolder("nightly-20260108")
	for i := range m.Trials {
		if m.Trials[i].Arm == "D" {
			m.Trials[i].Status, m.Trials[i].Reason = store.Invalid, "host saturated"
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	codes, outs = r.night("2026-01-08", "report", "detect")
	if codes["report"] != exitGateFailed || codes["detect"] != 1 || !strings.Contains(outs["detect"], "no valid trial of D") {
		t.Errorf("a night D measured nothing: report exit %d, detect exit %d:\n%s\n%s", codes["report"], codes["detect"], outs["report"], outs["detect"])
	}

	// Night 9: the run died part-way (trials left pending): the history
	// refuses it, and detect does not pass night 8 as tonight.
	if codes, outs = r.night("2026-01-09", "run"); codes["run"] != 0 {
		t.Fatalf("night 9: run exit %d:\n%s", codes["run"], outs["run"])
	}
	dir, m = r.runFolder("nightly-20260109")
	for i := range m.Trials[len(m.Trials)/2:] {
		m.Trials[len(m.Trials)/2+i].Status = store.Pending
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	codes, outs = r.night("2026-01-09", "report", "detect")
	if codes["report"] != 1 || !strings.Contains(outs["report"], "planned trials finished") || codes["detect"] != 1 {
		t.Errorf("a night whose run died: report exit %d, detect exit %d:\n%s\n%s", codes["report"], codes["detect"], outs["report"], outs["detect"])
	}
}

// How many independent histories BenchmarkNightlyRecipeFindsD measures,
// and at which trials a night.
var (
	recipeHistories = flag.Int("recipe.histories", 12, "BenchmarkNightlyRecipeFindsD: independent histories")
	recipeTrials    = flag.String("recipe.n", "5,10", "BenchmarkNightlyRecipeFindsD: trials a night, comma-separated")
)

// BenchmarkNightlyRecipeFindsD measures how often the README's nightly job
// finds the regression issue 38 named: five unchanged nights, then a sixth
// whose nightly-arms.yaml moves D's killOp actor from 70 % RSS to 80 %.
// It runs the job as the README writes it, with its -n 10 replaced by
// each of -recipe.n (default 5 and 10), on the same -recipe.histories
// histories (default 12): history h's nights are the 1st to the 6th of
// month h%12+1 of the year 2041+h/12, so each history has its own seeds
// and a larger study keeps the smaller one's histories. Reported: the
// share of histories whose sixth night's detect exits 4 (found), and the
// share of unchanged nights 2–5 whose detect does not exit 0 (false
// alarms). A history took 19 s at n=5, 34 s at n=10 and 65 s at n=20
// on 2 cores; docs/nightly.md has the figures of the second command (24
// histories, 47 minutes):
//
//	go test -run '^$' -bench BenchmarkNightlyRecipeFindsD -benchtime 1x -timeout 90m ./cmd/qmlsab
//	go test -run '^$' -bench BenchmarkNightlyRecipeFindsD -benchtime 1x -timeout 300m ./cmd/qmlsab -recipe.n 5,10,20 -recipe.histories 24
func BenchmarkNightlyRecipeFindsD(b *testing.B) {
	for _, n := range strings.Split(*recipeTrials, ",") {
		b.Run("n="+n, func(b *testing.B) {
			for range b.N {
				found, alarms, checked := 0, 0, 0
				for h := range *recipeHistories {
					r := newRecipeRunner(b)
					run := r.lines[r.lineOf["run"]]
					if !strings.Contains(run, " -n 10 ") {
						b.Fatalf("the README's nightly run is not -n 10: %s", run)
					}
					r.lines[r.lineOf["run"]] = strings.Replace(run, " -n 10 ", " -n "+n+" ", 1)
					r.armsAt(70)
					month := fmt.Sprintf("%d-%02d", 2041+h/12, h%12+1)
					for night := 1; night <= 5; night++ {
						codes, _ := r.night(fmt.Sprintf("%s-%02d", month, night), "run", "report", "detect")
						if night > 1 {
							checked++
							if codes["detect"] != 0 {
								alarms++
							}
						}
					}
					r.armsAt(80)
					codes, outs := r.night(month+"-06", "run", "report", "detect")
					if codes["detect"] == exitRegression {
						found++
					}
					b.Logf("n=%s, history %d: detect exit %d on the night D moved to 80 %%: %s", n, h+1, codes["detect"], strings.Join(strings.Fields(outs["detect"]), " "))
				}
				b.Logf("n=%s: found on %d of %d histories; %d of %d unchanged nights failed", n, found, *recipeHistories, alarms, checked)
				b.ReportMetric(float64(found)/float64(*recipeHistories), "found")
				b.ReportMetric(float64(alarms)/float64(checked), "false-alarms")
			}
		})
	}
}
