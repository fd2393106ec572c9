package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
)

// runBin runs the built binary with extra environment and returns its
// output and error.
func runBin(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// trialFigures are a run's trials: their metrics and seeds, by arm#index.
func trialFigures(t *testing.T, dir string) map[string]map[string]float64 {
	t.Helper()
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for arm, ts := range r.Trials {
		for _, tr := range ts {
			var meta struct{ Seed float64 }
			json.Unmarshal(tr.Metadata, &meta)
			m := map[string]float64{"(seed)": meta.Seed}
			for k, v := range tr.Metrics {
				m[k] = v
			}
			out[plan.Key(arm, tr.Index)] = m
		}
	}
	return out
}

// armFigures are summary.json's per-arm statistics and comparisons.
func armFigures(t *testing.T, dir string) (arms, comparisons any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Arms        any `json:"arms"`
		Comparisons any `json:"comparisons"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Arms, doc.Comparisons
}

// nothingWritten fails when --out exists or a merge left anything beside
// it.
func nothingWritten(t *testing.T, out string, before []os.DirEntry) {
	t.Helper()
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written although the merge failed", out)
	}
	after, _ := os.ReadDir(filepath.Dir(out))
	if len(after) != len(before) {
		t.Errorf("the failed merge left %d entries beside --out (had %d)", len(after), len(before))
	}
}

// Three shard processes, each its own (fake) host, merged, give exactly
// the trials of one unsharded run with the same seed, trial for trial,
// and the same per-arm figures; the report of the shard folders is the
// same run. A missing shard, a shard of another plan, a shard given twice
// and a half-finished shard are each refused, naming the folder, and
// nothing is written.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs shards as processes")
	}
	bin := buildQmlsab(t)
	root := t.TempDir()
	exp := []string{"--arms", "D,E,F", "--n", "4", "--seed", "17", "--profile", "quick"}
	shard := func(i int) string { return filepath.Join(root, fmt.Sprintf("shard-%d", i)) }
	var wg sync.WaitGroup
	outs, errs := make([]string, 4), make([]error, 4)
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			outs[i], errs[i] = runBin(bin, []string{hostEnv(fmt.Sprintf("host-%d", i))},
				append([]string{"run", "--shard", fmt.Sprintf("%d/3", i), "--out", shard(i)}, exp...)...)
		})
	}
	wg.Go(func() {
		outs[0], errs[0] = runBin(bin, []string{hostEnv("host-whole")}, append([]string{"run", "--out", filepath.Join(root, "whole")}, exp...)...)
	})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, outs[i])
		}
	}
	merged := filepath.Join(root, "merged")
	if out, err := runBin(bin, nil, "merge", "--expect", "3", "--out", merged, shard(1), shard(2), shard(3)); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	whole := trialFigures(t, filepath.Join(root, "whole"))
	got := trialFigures(t, merged)
	if len(whole) != 12 || !reflect.DeepEqual(got, whole) {
		t.Fatalf("merged trials differ from the unsharded run's:\n merged %v\n whole  %v", got, whole)
	}
	m, _ := store.Open(merged)
	if len(m.Manifest.Shards) != 3 || len(m.Manifest.Hosts) != 3 || m.Manifest.Plan == nil || m.Manifest.Plan.Units != 4 {
		t.Errorf("merged manifest: shards %+v hosts %+v plan %+v", m.Manifest.Shards, m.Manifest.Hosts, m.Manifest.Plan)
	}
	for _, ts := range m.Manifest.Trials {
		if want := fmt.Sprintf("host-%d", (ts.Index-1)%3+1); m.Manifest.HostOf(ts).Hostname != want {
			t.Errorf("%s#%d ran on %q, want %s", ts.Arm, ts.Index, m.Manifest.HostOf(ts).Hostname, want)
		}
	}
	// The same per-arm figures from the merged run, from the shard folders
	// reported directly, and from the unsharded run.
	direct := filepath.Join(root, "direct")
	for _, args := range [][]string{{filepath.Join(root, "whole")}, {merged}, {"--out", direct, shard(1), shard(2), shard(3)}} {
		if out, err := runBin(bin, nil, append([]string{"report", "--format", "json,md"}, args...)...); err != nil {
			t.Fatalf("report %v: %v\n%s", args, err, out)
		}
	}
	wa, wc := armFigures(t, filepath.Join(root, "whole"))
	for _, dir := range []string{merged, direct} {
		a, c := armFigures(t, dir)
		if !reflect.DeepEqual(a, wa) || !reflect.DeepEqual(c, wc) {
			t.Errorf("%s: per-arm figures differ from the unsharded run's", dir)
		}
		md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		if strings.Contains(string(md), "runs combined") || !strings.Contains(string(md), "The trials ran on 3 hosts") {
			t.Errorf("%s: the report should be one run on 3 hosts:\n%s", dir, md)
		}
	}

	// Refusals: each names the folder (or the missing shard) and writes
	// nothing.
	other := filepath.Join(root, "other-plan")
	if out, err := runBin(bin, nil, "run", "--shard", "2/3", "--out", other, "--arms", "D,E,F", "--n", "4", "--seed", "18", "--profile", "quick"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	twin := filepath.Join(root, "shard-1-copy")
	half := filepath.Join(root, "shard-2-half")
	for src, dst := range map[string]string{shard(1): twin, shard(2): half} {
		if err := copyTree(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	mb, _ := os.ReadFile(filepath.Join(half, store.ManifestFile))
	os.WriteFile(filepath.Join(half, store.ManifestFile), []byte(strings.Replace(string(mb), `"status": "valid"`, `"status": "interrupted"`, 1)), 0o644)
	wholeDir := filepath.Join(root, "whole")
	out := filepath.Join(root, "refused", "merged")
	os.MkdirAll(filepath.Dir(out), 0o755)
	before, _ := os.ReadDir(filepath.Dir(out))
	for _, c := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"missing shard", []string{shard(1), shard(3)}, []string{"shard 2/3 is missing", "units 2"}},
		{"another plan", []string{shard(1), other, shard(3)}, []string{other + ": plan", "another experiment"}},
		{"shard given twice", []string{shard(1), twin, shard(2), shard(3)}, []string{shard(1) + " and " + twin + " are both shard 1/3"}},
		{"half-finished shard", []string{shard(1), half, shard(3)}, []string{half + ": shard 2/3 is unfinished", "qmlsab run --resume " + half}},
		{"a whole run", []string{wholeDir}, []string{wholeDir + " is a whole run, not a shard"}},
		{"a missing folder", []string{shard(1), filepath.Join(root, "nope"), shard(3)}, []string{filepath.Join(root, "nope") + ": not a run folder"}},
	} {
		msg, err := runBin(bin, nil, append([]string{"merge", "--expect", "3", "--out", out}, c.dirs...)...)
		if code := exitCode(err); code != 1 {
			t.Errorf("%s: exit %d, want 1:\n%s", c.name, code, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the error does not say %q:\n%s", c.name, w, msg)
			}
		}
		nothingWritten(t, out, before)
	}
	if msg, err := runBin(bin, nil, "report", "--format", "json", "--out", filepath.Join(root, "r"), shard(1), twin); exitCode(err) != 1 ||
		!strings.Contains(msg, "are both shard 1/3") {
		t.Errorf("report of a shard given twice: %v\n%s", err, msg)
	}
	// --allow-partial merges what there is; the missing trials are pending.
	msg, err := runBin(bin, nil, "merge", "--expect", "3", "--allow-partial", "--out", out, shard(1), half)
	if err != nil || !strings.Contains(msg, "warning: shard 3/3 is missing") {
		t.Fatalf("--allow-partial: %v\n%s", err, msg)
	}
	p, err := store.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, ts := range p.Manifest.Trials {
		if ts.Status == store.Pending {
			pending++
		}
	}
	if len(p.Manifest.Trials) != 12 || pending != 4 {
		t.Errorf("partial merge: %d trials, %d pending; want 12 and 4 (shard 3's three and the interrupted one)", len(p.Manifest.Trials), pending)
	}
	if msg, err := runBin(bin, nil, "run", "--resume", out); exitCode(err) != 1 || !strings.Contains(msg, "is a merged run") {
		t.Errorf("resuming a merged run: %v\n%s", err, msg)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// Five shards, one SIGKILLed in the middle of its second trial and then
// resumed, merge to exactly n valid trials per arm, none twice.
func TestSIGKILLedShardResumesAndMergesToExactlyN(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills a shard")
	}
	bin := buildQmlsab(t)
	root := t.TempDir()
	exp := []string{"--arms", "D,E", "--n", "5", "--seed", "3", "--parallel", "1"}
	shard := func(i int) string { return filepath.Join(root, fmt.Sprintf("shard-%d", i)) }
	var wg sync.WaitGroup
	errs := make([]error, 6)
	outs := make([]string, 6)
	for i := 1; i <= 5; i++ {
		if i == 3 {
			continue
		}
		wg.Go(func() {
			outs[i], errs[i] = runBin(bin, []string{hostEnv(fmt.Sprintf("host-%d", i))}, append([]string{"run", "--shard", fmt.Sprintf("%d/5", i), "--out", shard(i)}, exp...)...)
		})
	}
	cmd := exec.Command(bin, append([]string{"run", "--shard", "3/5", "--out", shard(3)}, exp...)...)
	cmd.Env = append(os.Environ(), hostEnv("host-3"))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	started, killed := 0, false
	for sc.Scan() {
		if strings.Contains(sc.Text(), ": started") {
			if started++; started == 2 { // the first trial is done, the second running
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				break
			}
		}
	}
	cmd.Wait()
	wg.Wait()
	if !killed {
		t.Fatal("shard 3 ended before it could be killed")
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, outs[i])
		}
	}
	all := []string{shard(1), shard(2), shard(3), shard(4), shard(5)}
	merged := filepath.Join(root, "merged")
	if msg, err := runBin(bin, nil, append([]string{"merge", "--expect", "5", "--out", merged}, all...)...); exitCode(err) != 1 || !strings.Contains(msg, shard(3)+": shard 3/5 is unfinished") {
		t.Fatalf("merge with the killed shard: %v; want a refusal naming %s\n%s", err, shard(3), msg)
	}
	if out, err := runBin(bin, []string{hostEnv("host-3b")}, "run", "--resume", shard(3)); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	} else if n := strings.Count(out, ": started"); n < 1 || n > 2 {
		t.Errorf("the resume ran %d trials, want the unfinished one(s):\n%s", n, out)
	}
	if out, err := runBin(bin, nil, append([]string{"merge", "--expect", "5", "--out", merged}, all...)...); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	r, err := store.Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"D", "E"} {
		seen := map[int]int{}
		for _, ts := range r.Manifest.Trials {
			if ts.Arm == arm && ts.Status == store.Valid {
				seen[ts.Index]++
			}
		}
		for i := 1; i <= 5; i++ {
			if seen[i] != 1 {
				t.Errorf("%s#%d valid %d times in the merged run, want once", arm, i, seen[i])
			}
		}
		if len(seen) != 5 || len(r.Trials[arm]) != 5 {
			t.Errorf("%s: %d valid trials, want 5", arm, len(r.Trials[arm]))
		}
	}
}

// --shard and --shards are checked, naming the flag or the variable.
func TestShardFlagsAreChecked(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "")
	os.Unsetenv("JOB_COMPLETION_INDEX")
	dir := filepath.Join(t.TempDir(), "run")
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--shard", "0/3"}, "", `--shard "0/3"`},
		{[]string{"--shard", "4/3"}, "", `--shard "4/3"`},
		{[]string{"--shard", "x"}, "", `--shard "x"`},
		{[]string{"--shard", "1/3", "--shards", "3"}, "", "--shard and --shards"},
		{[]string{"--shards", "3"}, "", "$JOB_COMPLETION_INDEX is not set"},
		{[]string{"--shards", "3"}, "3", `$JOB_COMPLETION_INDEX="3" is not an index 0..2`},
		{[]string{"--shard", "6/6", "--n", "5"}, "", "--shard 6/6: the plan has 5 units"},
	} {
		if c.env != "" {
			t.Setenv("JOB_COMPLETION_INDEX", c.env)
		}
		out, code := qmlsab(t, append([]string{"run", "--out", dir}, c.args...)...)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d %q; want exit 1 saying %q", c.args, code, out, c.want)
		}
		os.Unsetenv("JOB_COMPLETION_INDEX")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", "--out", dir, "a"}, "--expect N"},
		{[]string{"merge", "--expect", "2", "a"}, "--out DIR"},
		{[]string{"merge", "--expect", "2", "--out", dir}, "give the shard folders"},
		{[]string{"merge", "--expect", "0", "--out", dir, "a"}, "--expect 0"},
	} {
		out, code := qmlsab(t, c.args...)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d %q; want exit 1 saying %q", c.args, code, out, c.want)
		}
	}
}
