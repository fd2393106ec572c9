package store_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	c, err := plan.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// testdata/v1run is a run folder of the v1 format, which qmlsab wrote for
// two days before v2 (`qmlsab run --arms D,E --n 1 --profile quick`, cut
// down to its manifest and one trial.json). This qmlsab does not read it:
// every way in (report and resume through Open, merge, a v1 trial under a
// manifest a later qmlsab rewrote) refuses it, naming the file and saying
// what to do.
func TestAV1FolderIsRefusedSayingWhatToDo(t *testing.T) {
	const v1 = "testdata/v1run"
	tmp := t.TempDir()
	// A v1 run resumed by a qmlsab of the time has a v2 manifest over v1
	// trials.
	resumed := filepath.Join(tmp, "resumed")
	copyTree(t, v1, resumed)
	m := store.Manifest{Schema: store.ManifestSchema, Trials: []store.TrialStatus{{Arm: "D", Index: 1, Status: store.Valid}}}
	if err := store.WriteJSON(filepath.Join(resumed, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	_, _, mergeErr := store.MergeShards(context.Background(), store.MergeOptions{Dirs: []string{v1, v1}, Expect: 2, Out: filepath.Join(tmp, "merged"), ToolVersion: "test"})
	_, openErr := store.Open(v1)
	_, readErr := store.ReadManifest(v1)
	_, resumedErr := store.Open(resumed)
	for _, c := range []struct {
		how  string
		err  error
		file string
	}{
		{"Open", openErr, filepath.Join(v1, store.ManifestFile)},
		{"ReadManifest", readErr, filepath.Join(v1, store.ManifestFile)},
		{"MergeShards", mergeErr, filepath.Join(v1, store.ManifestFile)},
		{"Open of a resumed v1 run", resumedErr, filepath.Join(resumed, "D", "trial-1", store.TrialFile)},
	} {
		if c.err == nil {
			t.Errorf("%s of a v1 folder: no error", c.how)
			continue
		}
		for _, want := range []string{c.file, "v1", "no longer read", "run the experiment again with this qmlsab", "commit 2228711"} {
			if !strings.Contains(c.err.Error(), want) {
				t.Errorf("%s of a v1 folder: %q does not say %q", c.how, c.err, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "merged")); !os.IsNotExist(err) {
		t.Errorf("a refused merge wrote its folder (%v)", err)
	}
}

// dataKeys are the objects whose keys are data (server field paths,
// parameter names, stage and arm names), not this format's keys.
var dataKeys = map[string]bool{"values": true, "parameters": true, "stages": true, "missing": true, "metrics": true}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// checkKeys fails on any key of a JSON document not in snake_case.
func checkKeys(t *testing.T, file string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !snake.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", file, k)
			}
			if !dataKeys[k] {
				checkKeys(t, file, x)
			}
		}
	case []any:
		for _, x := range v {
			checkKeys(t, file, x)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func TestV2RunIsSnakeCaseInSecondsAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	wl, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	host := store.Host{Hostname: "h", CPUModel: "cpu", Cores: 2, MemoryBytes: 1 << 30, Kernel: "k", Target: "embedded"}.WithID()
	m := store.Manifest{Schema: store.ManifestSchema, ToolVersion: "t", Created: at, Host: "h", CommandLine: []string{"qmlsab", "run"},
		WorkloadName: spec.Name, Workload: wl, ArmList: []store.ArmInfo{{Name: "E", Build: "b", Parameters: map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30"}}},
		Seed: 3, Target: "embedded", Simulated: true, Clock: store.ClockVirtual, Hosts: []store.Host{host},
		Plan:   &store.Plan{Digest: "d", Units: 1, Arms: []string{"E"}},
		Trials: []store.TrialStatus{{Arm: "E", Index: 1, Status: store.Valid, Host: host.ID}}}
	victims := &store.Victims{}
	victims.Add(20<<20, "$sort")
	kill := &store.Kill{At: at, OpID: 9, AppName: "qmlsab-storm", TrackedBytes: 5 << 20, Queued: true, Stage: "$sort", ResidentMB: 900}
	files := store.TrialFiles{
		Trial: store.Trial{Schema: store.TrialSchema, Arm: "E", Index: 1, Started: at, Phases: map[store.Phase]float64{"warmup": 0, "storm": 30},
			Metrics: map[string]float64{"storm_shed": 1}, Simulated: true, Clock: store.ClockVirtual, Victims: victims},
		Samples:  []store.Sample{{At: at, Member: "m0", Up: true, Primary: true, ProcessID: "p1", Values: map[string]float64{"queues.execution.read.totalTickets": 128}, FromFTDC: true}},
		Series:   []store.Second{{T: 1, Primary: "m0", ReadTix: ptr(64), LowQueue: ptr(3), Admissions: ptr(2), Kills: ptr(0), Sheds: ptr(1), ResidentMB: ptr(900), LowMark: ptr(1), HighMark: ptr(2), MemLimit: ptr(3), FTDC: true}},
		Storm:    []store.StormOp{{Scheduled: at, Latency: 1500 * time.Millisecond, Stage: "$sort", Outcome: store.Shed, Code: "QueryMemoryLimitExceeded", TrackedBytes: 20 << 20}},
		Canaries: []store.CanaryOp{{Scheduled: at, Latency: 7 * time.Nanosecond, Write: true, OK: true}},
		Outcomes: []store.OutcomeSecond{{T: 1, Storm: map[string]int{"shed": 1}, Canary: map[string]int{"ok": 1}, StormLatency: []int{0, 1}, CanaryLatency: []int{1}}},
		Events:   []store.Event{{At: at, Kind: "kill", Kill: kill}, {At: at, Kind: "phase", Phase: "storm"}},
	}
	tdir := store.TrialDir(dir, "E", 1)
	if err := store.WriteTrial(tdir, files); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteJSONLinesGz(filepath.Join(tdir, store.MergeFile), []store.MergeOp{{Op: 1, ReadPreference: "secondary", Scheduled: at, Latency: 2 * time.Second, Outcome: store.Shed, Written: 100, Unsafe: true}}); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}

	// Every key of every file is snake_case, and durations are seconds.
	raw := map[string]string{}
	for _, name := range []string{store.ManifestFile, "E/trial-1/" + store.TrialFile} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		checkKeys(t, name, v)
		raw[name] = string(b)
	}
	for _, name := range []string{store.SamplesFile, store.SeriesFile, store.StormFile, store.CanaryFile, store.OutcomesFile, store.EventsFile, store.MergeFile} {
		lines, err := store.ReadJSONLinesGz[json.RawMessage](filepath.Join(tdir, name))
		if err != nil || len(lines) == 0 {
			t.Fatalf("%s: %v", name, err)
		}
		for _, l := range lines {
			var v any
			json.Unmarshal(l, &v)
			checkKeys(t, name, v)
			raw[name] += string(l)
		}
	}
	for file, want := range map[string]string{
		store.ManifestFile: `"schema": "qmlsab/run/v2"`, "E/trial-1/" + store.TrialFile: `"schema": "qmlsab/trial/v2"`,
		store.StormFile: `"latency_s":1.5`, store.CanaryFile: `"latency_s":7e-9`, store.MergeFile: `"latency_s":2`,
	} {
		if !strings.Contains(raw[file], want) {
			t.Errorf("%s lacks %s:\n%s", file, want, raw[file])
		}
	}
	for _, want := range []string{`"warmup_s": 30`, `"storm_s": 150`, `"canary_slo_s": 1`, `"server_selection_timeout_s": 30`} {
		if !strings.Contains(raw[store.ManifestFile], want) {
			t.Errorf("manifest's workload lacks %s", want)
		}
	}

	// And everything reads back as it was.
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.Schema != store.ManifestSchema || canonical(t, r.Manifest.Workload) != canonical(t, wl) || !reflect.DeepEqual(r.Manifest.Hosts, m.Hosts) || !reflect.DeepEqual(r.Manifest.ArmList, m.ArmList) || r.Manifest.ToolVersion != "t" {
		t.Errorf("manifest read back: %+v", r.Manifest)
	}
	var back workload.Spec
	if err := json.Unmarshal(r.Manifest.Workload, &back); err != nil || !reflect.DeepEqual(back, spec) {
		t.Errorf("workload read back %+v, want %+v (%v)", back.SpillToDisk, spec.SpillToDisk, err)
	}
	if got := r.Trials["E"]; len(got) != 1 || !reflect.DeepEqual(got[0], files.Trial) {
		t.Errorf("trial read back %+v, want %+v", got, files.Trial)
	}
	readsBack(t, tdir, store.SamplesFile, files.Samples)
	readsBack(t, tdir, store.SeriesFile, files.Series)
	readsBack(t, tdir, store.StormFile, files.Storm)
	readsBack(t, tdir, store.CanaryFile, files.Canaries)
	readsBack(t, tdir, store.OutcomesFile, files.Outcomes)
	readsBack(t, tdir, store.EventsFile, files.Events)
}

// readsBack checks that a trial's JSON-lines file in dir reads back as
// the records written to it.
func readsBack[T any](t *testing.T, dir, file string, want []T) {
	t.Helper()
	got, err := store.ReadJSONLinesGz[T](filepath.Join(dir, file))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s read back %+v, want %+v (%v)", file, got, want, err)
	}
}

func TestSecondsRoundTripToTheNanosecond(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, 15321745, 1725849057, 30 * time.Second, 2*time.Hour + 1, -time.Millisecond} {
		b, err := json.Marshal(store.Seconds(d))
		if err != nil {
			t.Fatal(err)
		}
		var back store.Seconds
		if err := json.Unmarshal(b, &back); err != nil || back.Duration() != d {
			t.Errorf("%v → %s → %v (%v)", d, b, back.Duration(), err)
		}
	}
	if b, _ := json.Marshal(store.Seconds(30 * time.Second)); string(b) != "30" {
		t.Errorf("30 s marshals as %s", b)
	}
	var s store.Seconds
	if err := json.Unmarshal([]byte("1e300"), &s); err == nil {
		t.Errorf("1e300 seconds read as %v; want an out-of-range error", s.Duration())
	}
}

// A host fingerprint may name the CPU and memory in camelCase
// (QMLSAB_HOST_FINGERPRINT's documented aliases): one host, one ID.
func TestHostReadsEitherStyleAndKeepsItsID(t *testing.T) {
	var old, cur store.Host
	if err := json.Unmarshal([]byte(`{"hostname":"h","cpuModel":"c","cores":2,"memoryBytes":5}`), &old); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"hostname":"h","cpu_model":"c","cores":2,"memory_bytes":5}`), &cur); err != nil {
		t.Fatal(err)
	}
	if old != cur || cur.CPUModel != "c" || cur.MemoryBytes != 5 || old.WithID().ID != cur.WithID().ID {
		t.Errorf("v1 host %+v, v2 host %+v: want one host, one ID", old, cur)
	}
	// A fingerprint (QMLSAB_HOST_FINGERPRINT) overrides only what it names,
	// and a misspelt field is an error.
	if err := json.Unmarshal([]byte(`{"cores":4}`), &cur); err != nil || cur.Hostname != "h" || cur.CPUModel != "c" || cur.Cores != 4 {
		t.Errorf("overriding cores gave %+v (%v)", cur, err)
	}
	if err := json.Unmarshal([]byte(`{"cpu":"x"}`), &cur); err == nil {
		t.Errorf("an unknown host field was accepted: %+v", cur)
	}
}

// copyTree copies a fixture folder, so a test may rewrite it.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
