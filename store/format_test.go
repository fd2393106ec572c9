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

// The fixtures under testdata were written by qmlsab before the v2 format
// (`qmlsab run --arms D,E --n 1 --profile quick`, the merge workload with
// --arms E, and --shard 1/2 and 2/2 of --n 2 --seed 5), then cut down:
// fewer storm ops, canaries and samples; the shards keep only their
// manifests and trial.json files.

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	c, err := plan.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func TestOpenReadsAV1RunIntoTheSameTypes(t *testing.T) {
	r, err := store.Open("testdata/v1run")
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest
	if m.SourceSchema() != store.ManifestSchemaV1 || m.Schema != store.ManifestSchema {
		t.Errorf("schema %q read from %q; want the v1 file upgraded to %q", m.Schema, m.SourceSchema(), store.ManifestSchema)
	}
	if m.ToolVersion != "dev" || len(m.CommandLine) != 10 || m.WorkloadName != "spill_to_disk" || len(m.ArmList) != 2 || m.ArmList[1].Parameters["queryMemoryLoadSheddingHighMarkPercent"] != "70" {
		t.Errorf("v1 camelCase keys lost: tool %q, command line %q, workload %q, arms %+v", m.ToolVersion, m.CommandLine, m.WorkloadName, m.ArmList)
	}
	if len(m.Hosts) != 1 || m.Hosts[0].CPUModel != "AMD EPYC" || m.Hosts[0].MemoryBytes != 25275990016 {
		t.Errorf("v1 host keys lost: %+v", m.Hosts)
	} else if id := m.Hosts[0].WithID().ID; id != m.Hosts[0].ID || id != m.Trials[0].Host {
		t.Errorf("the v1 host's ID recomputes as %s, recorded %s: a resumed run would see the machine as a second host", id, m.Hosts[0].ID)
	}

	// The workload, upgraded, reads as the built-in storm of the day the
	// fixture was written (150 queries/s, before any fit moved it), at
	// --profile quick, with the client's settings the keys it lacks take
	// (the driver's defaults).
	var got workload.Spec
	if err := json.Unmarshal(m.Workload, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *want.SpillToDisk
	w.StormRate, w.ScanDocs, w.DocBytes, w.LoadBytes = 150, 80_000, 500, 20<<20
	w.MaxPoolSize = workload.DefaultMaxPoolSize
	w.Mix = []workload.StageShare{{Stage: "$setWindowFields", Weight: 0.7}, {Stage: "$sort", Weight: 0.15}, {Stage: "$group", Weight: 0.15}}
	want.SpillToDisk = &w
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want.Scaled(0.1))
	if g, w := canonical(t, gotJSON), canonical(t, wantJSON); g != w {
		t.Errorf("v1 workload upgraded to\n %s\nwant\n %s", g, w)
	}
	var spec workload.Spec
	if err := json.Unmarshal(m.Workload, &spec); err != nil || spec.Validate() != nil || spec.SpillToDisk.Phases.Storm != 15*time.Second || spec.SpillToDisk.CanarySLO != time.Second {
		t.Errorf("upgraded workload decodes to %+v (%v)", spec.SpillToDisk, err)
	}
	var head store.WorkloadHead
	if err := json.Unmarshal(m.Workload, &head); err != nil || head.SpillToDisk == nil || head.SpillToDisk.Phases.Warmup.Duration() != 3*time.Second || head.SpillToDisk.StormRate != 150 {
		t.Errorf("WorkloadHead of the upgraded workload: %+v (%v)", head.SpillToDisk, err)
	}

	d := r.Trials["D"]
	if len(d) != 1 || len(r.Trials["E"]) != 1 || d[0].Schema != store.TrialSchemaV1 || d[0].Metrics["storm_killed"] != 49 {
		t.Fatalf("trials %+v", r.Trials)
	}
	if v := d[0].Victims; v == nil || v.Count != 49 || len(v.Bins) != 8 || v.Bins[7] != 27 {
		t.Errorf("victims %+v: v1 bins8MiB lost", d[0].Victims)
	}

	dir := store.TrialDir(r.Dir, "D", 1)
	storm, err := store.ReadJSONLinesGz[store.StormOp](filepath.Join(dir, store.StormFile))
	if err != nil || len(storm) != 12 {
		t.Fatalf("storm: %d ops, %v", len(storm), err)
	}
	if storm[0].Latency != 15321745*time.Nanosecond {
		t.Errorf("first storm op's latency %v; the v1 file says 15321745 ns", storm[0].Latency)
	}
	if k := storm[8]; k.Outcome != store.Killed || k.TrackedBytes != 64816155 || k.Latency != 1725849057*time.Nanosecond {
		t.Errorf("killed op %+v: v1 trackedBytes or latencyNs lost", k)
	}
	canaries, err := store.ReadJSONLinesGz[store.CanaryOp](filepath.Join(dir, store.CanaryFile))
	if err != nil || len(canaries) != 12 || !canaries[1].Write {
		t.Errorf("canaries %+v, %v", canaries, err)
	}
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(dir, store.SamplesFile))
	if err != nil || len(samples) != 12 || samples[0].ProcessID != "process1" || !samples[0].Up || samples[0].At.IsZero() || samples[0].Values["read.totalTickets"] != 136 {
		t.Errorf("samples: %+v, %v", samples[:1], err)
	}
	series, err := store.ReadJSONLinesGz[store.Second](filepath.Join(dir, store.SeriesFile))
	if err != nil || len(series) == 0 || series[0].ReadTix == nil || *series[0].ReadTix != 65 || series[0].ResidentMB == nil || series[0].Admissions == nil {
		t.Errorf("series: %+v, %v", series, err)
	}
	outcomes, err := store.ReadJSONLinesGz[store.OutcomeSecond](filepath.Join(dir, store.OutcomesFile))
	if err != nil || len(outcomes) == 0 || len(outcomes[0].StormLatency) == 0 || len(outcomes[0].CanaryLatency) == 0 {
		t.Errorf("outcomes: %+v, %v", outcomes, err)
	}
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, store.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	kills := 0
	for _, e := range events {
		if e.Kind == "kill" {
			kills++
			if e.Kill == nil || e.Kill.AppName != "qmlsab-storm" || e.Kill.TrackedBytes <= 0 || e.Kill.ResidentMB <= 0 {
				t.Fatalf("kill event %+v: v1 appName, trackedBytes or residentMB lost", e.Kill)
			}
		}
	}
	if kills != 49 {
		t.Errorf("%d kill events, want 49", kills)
	}
}

func TestOpenReadsAV1MergeWorkloadRun(t *testing.T) {
	r, err := store.Open("testdata/v1merge")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := workload.Builtin(workload.KindMergePartialWrite)
	wantJSON, _ := json.Marshal(want)
	if got, w := canonical(t, r.Manifest.Workload), canonical(t, wantJSON); got != w {
		t.Errorf("v1 merge workload upgraded to\n %s\nwant\n %s", got, w)
	}
	ops, err := store.ReadJSONLinesGz[store.MergeOp](filepath.Join(store.TrialDir(r.Dir, "E", 1), store.MergeFile))
	if err != nil || len(ops) != 10 {
		t.Fatalf("merge ops %d, %v", len(ops), err)
	}
	if o := ops[1]; o.ReadPreference != "secondary" || o.Latency != 92922389*time.Nanosecond || o.Outcome != store.Shed || !o.Unsafe || o.Written != 100 {
		t.Errorf("op 1 %+v: v1 readPreference or latencyNs lost", o)
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
		Seed: 3, Target: "embedded", Simulated: true, Clock: "virtual", Hosts: []store.Host{host},
		Plan:   &store.Plan{Digest: "d", Units: 1, Arms: []string{"E"}},
		Trials: []store.TrialStatus{{Arm: "E", Index: 1, Status: store.Valid, Host: host.ID}}}
	victims := &store.Victims{}
	victims.Add(20<<20, "$sort")
	kill := &store.Kill{At: at, OpID: 9, AppName: "qmlsab-storm", TrackedBytes: 5 << 20, Queued: true, Stage: "$sort", ResidentMB: 900}
	files := store.TrialFiles{
		Trial: store.Trial{Schema: store.TrialSchema, Arm: "E", Index: 1, Started: at, Phases: map[string]float64{"warmup": 0, "storm": 30},
			Metrics: map[string]float64{"storm_shed": 1}, Simulated: true, Clock: "virtual", Victims: victims},
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
	if r.Manifest.SourceSchema() != store.ManifestSchema || canonical(t, r.Manifest.Workload) != canonical(t, wl) || !reflect.DeepEqual(r.Manifest.Hosts, m.Hosts) || !reflect.DeepEqual(r.Manifest.ArmList, m.ArmList) || r.Manifest.ToolVersion != "t" {
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

// rewrite reads a run folder's manifest and writes it back as this qmlsab
// does (a resume), after change.
func rewrite(t *testing.T, dir string, change func(*store.Manifest)) {
	t.Helper()
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	change(&r.Manifest)
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), r.Manifest); err != nil {
		t.Fatal(err)
	}
}

func TestMergeOfV1Shards(t *testing.T) {
	tmp := t.TempDir()
	s1, s2 := filepath.Join(tmp, "s1"), filepath.Join(tmp, "s2")
	copyTree(t, "testdata/v1shard1", s1)
	copyTree(t, "testdata/v1shard2", s2)
	merge := func(out string) (store.Manifest, error) {
		m, _, err := store.MergeShards(context.Background(), store.MergeOptions{Dirs: []string{s1, s2}, Expect: 2, Out: filepath.Join(tmp, out), ToolVersion: "test"})
		return m, err
	}

	// Two v1 shards of one plan merge into a v2 run.
	if _, err := merge("both-v1"); err != nil {
		t.Fatalf("merging two v1 shards: %v", err)
	}
	r, err := store.Open(filepath.Join(tmp, "both-v1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.SourceSchema() != store.ManifestSchema || len(r.Manifest.Hosts) != 1 || len(r.Trials["D"]) != 2 || len(r.Trials["E"]) != 2 {
		t.Errorf("merged run: schema %s, hosts %+v, trials %d+%d", r.Manifest.SourceSchema(), r.Manifest.Hosts, len(r.Trials["D"]), len(r.Trials["E"]))
	}

	// A v1 shard resumed by this qmlsab (its manifest now v2, its plan the
	// v1 one) still merges with its v1 sibling.
	rewrite(t, s2, func(*store.Manifest) {})
	if b, _ := os.ReadFile(filepath.Join(s2, store.ManifestFile)); !strings.Contains(string(b), store.ManifestSchema) {
		t.Fatalf("rewritten manifest is not v2:\n%s", b)
	}
	if _, err := merge("resumed"); err != nil {
		t.Fatalf("merging a v1 shard with a resumed one: %v", err)
	}

	// A shard begun in v2 has a plan digest over the v2 encoding: refused,
	// saying why and what to do.
	rewrite(t, s2, func(m *store.Manifest) { m.Plan.Digest = strings.Repeat("f", 64) })
	_, err = merge("mixed")
	if err == nil || !strings.Contains(err.Error(), "v1 format") || !strings.Contains(err.Error(), s1) || !strings.Contains(err.Error(), "run the v1 shard again") {
		t.Errorf("merging a v1 shard with a v2 one: %v; want a refusal naming the v1 shard and the way out", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "mixed")); !os.IsNotExist(err) {
		t.Errorf("a refused merge wrote its folder (%v)", err)
	}
}
