package store

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeRun(t *testing.T, dir string) {
	t.Helper()
	m := Manifest{Schema: ManifestSchema, ToolVersion: "test", Created: time.Unix(1, 0).UTC(), Seed: 7, Target: "embedded", Simulated: true,
		Trials: []TrialStatus{{Arm: "D", Index: 1, Status: Valid}, {Arm: "E", Index: 1, Status: Valid}, {Arm: "D", Index: 2, Status: Interrupted}, {Arm: "E", Index: 2, Status: Pending}}}
	for _, ts := range m.Trials[:2] {
		tr := Trial{Schema: TrialSchema, Arm: ts.Arm, Index: ts.Index, Metrics: map[string]float64{"availability": 0.97}, Simulated: true}
		if err := WriteJSON(filepath.Join(TrialDir(dir, ts.Arm, ts.Index), "trial.json"), tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteJSON(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
}

func TestRunRoundTripReadsOnlyFinishedTrials(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir)
	// A trial still being written has a partial folder; it must be ignored.
	os.MkdirAll(TrialDir(dir, "D", 2), 0o755)
	os.WriteFile(filepath.Join(TrialDir(dir, "D", 2), "trial.json"), []byte(`{"schema":"qmlsab/tri`), 0o644)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials["D"]) != 1 || len(r.Trials["E"]) != 1 || r.Trials["D"][0].Metrics["availability"] != 0.97 {
		t.Fatalf("trials read: %+v", r.Trials)
	}
}

// A trial invalidated after its trial.json was written stands in Trials
// (its figures stay readable) but not in Valid.
func TestValidIsWhatTheManifestMarksValid(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Trials[0].Status, m.Trials[0].Reason = Invalid, "host saturated: test"
	if err := WriteJSON(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials["D"]) != 1 || len(r.Valid("D")) != 0 {
		t.Errorf("D: %d trials read, %d valid; want 1 read, 0 valid", len(r.Trials["D"]), len(r.Valid("D")))
	}
	if v := r.Valid("E"); len(v) != 1 || v[0].Index != 1 {
		t.Errorf("E's valid trials: %+v, want #1", v)
	}
}

func TestOpenNamesTheBadFile(t *testing.T) {
	for name, breakIt := range map[string]func(dir string) string{
		"truncated manifest": func(dir string) string {
			p := filepath.Join(dir, "manifest.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			return p
		},
		"truncated trial": func(dir string) string {
			p := filepath.Join(TrialDir(dir, "E", 1), "trial.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-5], 0o644)
			return p
		},
		"other schema version": func(dir string) string {
			p := filepath.Join(dir, "manifest.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), ManifestSchema, "qmlsab/run/v9", 1)), 0o644)
			return p
		},
		"missing trial file": func(dir string) string {
			p := filepath.Join(TrialDir(dir, "D", 1), "trial.json")
			os.Remove(p)
			return p
		},
	} {
		dir := t.TempDir()
		writeRun(t, dir)
		bad := breakIt(dir)
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: error %v does not name %s", name, err, bad)
		}
	}
}

func TestJSONLinesGzRoundTripAndTruncation(t *testing.T) {
	type rec struct {
		At int     `json:"at"`
		V  float64 `json:"v"`
	}
	p := filepath.Join(t.TempDir(), "samples.jsonl.gz")
	var in []rec
	for i := range 5000 {
		in = append(in, rec{i, float64(i) / 3})
	}
	if err := WriteJSONLinesGz(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadJSONLinesGz[rec](p)
	if err != nil || len(out) != 5000 || out[4999] != in[4999] {
		t.Fatalf("round trip: %d records, %v", len(out), err)
	}
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := ReadJSONLinesGz[rec](p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("truncated file: %v", err)
	}
}

func TestAtomicWriteThatFailsLeavesWhatWasThere(t *testing.T) {
	// The final rename cannot replace a non-empty directory (even for
	// root): the write fails, what was there stays whole, and no temporary
	// file is left behind.
	dir := t.TempDir()
	p := filepath.Join(dir, "trial.json")
	os.MkdirAll(filepath.Join(p, "inside"), 0o755)
	if err := WriteFileAtomic(p, []byte("new")); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("write over a directory: %v (must fail naming %s)", err, p)
	}
	if st, err := os.Stat(filepath.Join(p, "inside")); err != nil || !st.IsDir() {
		t.Fatalf("what was there was damaged: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary left behind: %v", entries)
	}
}

func TestAtomicWriteReplacesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.json")
	for i := range 20 {
		if err := WriteFileAtomic(p, []byte(strings.Repeat(strconv.Itoa(i%10), 1000))); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLockRefusesASecondWriterButNotADeadOne(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(dir); err == nil || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("second writer: %v", err)
	}
	l.Release()
	// A writer killed with SIGKILL leaves its lock; its pid is gone.
	cmd := exec.Command("true")
	cmd.Run()
	os.WriteFile(filepath.Join(dir, "run.lock"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("a dead writer's lock must not block: %v", err)
	}
	l2.Release()
}

func TestTrialDirKeepsArmsInsideTheRun(t *testing.T) {
	run := filepath.Join("r", "run1")
	for arm, want := range map[string]string{
		"D":                         "D",
		"my-arm_2":                  "my-arm_2",
		"../../etc":                 "%2E%2E%2F%2E%2E%2Fetc",
		"<script>alert(1)</script>": "%3Cscript%3Ealert%281%29%3C%2Fscript%3E",
		"a/b":                       "a%2Fb",
		"..":                        "%2E%2E",
	} {
		got := TrialDir(run, arm, 1)
		if got != filepath.Join(run, want, "trial-1") {
			t.Errorf("%q: %s", arm, got)
		}
		if rel, err := filepath.Rel(run, got); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("%q escapes the run folder: %s", arm, got)
		}
	}
}

// A trial that failed before it wrote anything (provisioning, say) is
// invalid without a trial.json; the run stays readable.
func TestInvalidTrialWithoutFilesKeepsTheRunReadable(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir)
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.Replace(string(b), `"status": "pending"`, `"status": "invalid", "reason": "provisioning: refused"`, 1)), 0o644)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.Trials[3].Status != Invalid || len(r.Trials["E"]) != 1 {
		t.Fatalf("manifest %+v trials %+v", r.Manifest.Trials, r.Trials)
	}
}

// A victim's size decides its bin, never the histogram's length: a
// trackedBytes of 2^63−1 (a hostile import record or server) lands in the
// overflow bin, where a bin per 8 MiB up to it would need 2^40 of them; a
// summary written before the cap with more bins folds its tail into the
// overflow bin when pooled.
func TestVictimsHistogramIsBoundedWhateverTheSizes(t *testing.T) {
	var v Victims
	for _, n := range []int64{math.MaxInt64, MaxTrackedBytes, VictimBins * VictimBinBytes, (VictimBins-1)*VictimBinBytes - 1, 1} {
		v.Add(n, "$sort")
	}
	if len(v.Bins) != VictimBins || v.Bins[VictimBins-1] != 3 || v.Bins[VictimBins-2] != 1 || v.Bins[0] != 1 || v.Sized != 5 {
		t.Fatalf("%d bins, last two %v, first %d, sized %d", len(v.Bins), v.Bins[len(v.Bins)-2:], v.Bins[0], v.Sized)
	}
	old := Victims{Count: 2, Sized: 2, Bins: make([]int, VictimBins+10)}
	old.Bins[VictimBins+9], old.Bins[3] = 1, 1
	var pooled Victims
	pooled.Merge(&old)
	pooled.Merge(&v)
	if len(pooled.Bins) != VictimBins || pooled.Bins[VictimBins-1] != 4 || pooled.Bins[3] != 1 || pooled.Sized != 7 {
		t.Errorf("pooled: %d bins, overflow %d, bin 3 %d, sized %d", len(pooled.Bins), pooled.Bins[len(pooled.Bins)-1], pooled.Bins[3], pooled.Sized)
	}
	for n, want := range map[int64]int64{-5: 0, 0: 0, 7: 7, MaxTrackedBytes: MaxTrackedBytes, math.MaxInt64: MaxTrackedBytes} {
		if got := ClampTrackedBytes(n); got != want {
			t.Errorf("ClampTrackedBytes(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestVictimsMergeEqualsAddingAll(t *testing.T) {
	var a, b, all Victims
	for i, v := range []struct {
		bytes int64
		stage string
	}{{0, "$sort"}, {3 << 20, "$group"}, {30 << 20, "$setWindowFields"}, {90 << 20, "$setWindowFields"}, {9 << 20, ""}} {
		if i%2 == 0 {
			a.Add(v.bytes, v.stage)
		} else {
			b.Add(v.bytes, v.stage)
		}
		all.Add(v.bytes, v.stage)
	}
	var pooled Victims
	pooled.Merge(&a)
	pooled.Merge(&b)
	if fmt.Sprint(pooled) != fmt.Sprint(all) {
		t.Errorf("merged %+v, want %+v", pooled, all)
	}
}

// A manifest that lists one trial twice is refused, naming the file and
// the trial: a report counted it twice (n = 4 from 2 trials).
func TestOpenRefusesATrialListedTwice(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Trials = append(m.Trials, m.Trials[0])
	if err := WriteJSON(filepath.Join(dir, ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, ManifestFile) + `: arm D's trial 1 is listed twice (trials[0] and trials[4])`
	r, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), want) {
		n := 0
		if r != nil {
			n = len(r.Valid("D"))
		}
		t.Errorf("Open of a manifest listing D 1 twice: %v (%d valid D trials); want %q", err, n, want)
	}
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadManifest of a manifest listing D 1 twice: %v; want %q", err, want)
	}
}

// A trial.json that says it is another trial than the one whose folder
// it is in is refused, naming it: it was silently left out of the report.
func TestOpenRefusesATrialJSONOfAnotherTrial(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Trial)
		says string
	}{
		{"another index", func(tr *Trial) { tr.Index = 7 }, `arm "D"'s trial 7`},
		{"another arm", func(tr *Trial) { tr.Arm = "E" }, `arm "E"'s trial 1`},
	} {
		dir := t.TempDir()
		writeRun(t, dir)
		p := filepath.Join(TrialDir(dir, "D", 1), TrialFile)
		tr := Trial{Schema: TrialSchema, Arm: "D", Index: 1, Metrics: map[string]float64{}}
		c.edit(&tr)
		if err := WriteJSON(p, tr); err != nil {
			t.Fatal(err)
		}
		want := p + ": the file is " + c.says + `, but it stands in the folder of arm "D"'s trial 1`
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Open = %v; want %q", c.name, err, want)
		}
	}
}
