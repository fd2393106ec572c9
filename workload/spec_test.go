package workload

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBuiltinsRoundTripThroughYAML(t *testing.T) {
	for _, name := range Names() {
		want, _ := Builtin(name)
		b, err := Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(name+".yaml", b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip changed the spec:\n got %+v\nwant %+v\n%s", name, got, want, b)
		}
	}
}

func TestFileOverridesOnlyWhatItSays(t *testing.T) {
	s, err := Parse("light.yaml", []byte("name: light\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 75\n  phases: {storm: 90s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultSpillToDisk()
	w := s.SpillToDisk
	if s.Name != "light" || w.StormRate != 75 || w.Phases.Storm != 90*time.Second {
		t.Errorf("overrides not applied: %+v", w)
	}
	if w.Phases.Warmup != def.Phases.Warmup || w.CanaryRate != def.CanaryRate || len(w.Mix) != len(def.Mix) {
		t.Errorf("defaults lost: %+v", w)
	}
}

func TestBadWorkloadFilesNameTheLine(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRat: 3\n", "w.yaml:4: "},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: fast\n", "w.yaml:4: "},
		{"name: x\nkind: storm\n", "w.yaml:2: kind \"storm\""},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: -1\n", "w.yaml:4: spill_to_disk.stormRate: -1 is outside [0.001, 1000]"},
		// The offending key's own line, not its parent's.
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  appName: a\n  canaryAppName: b\n  canaryRate: 20\n  mix:\n    - {stage: $sort, weight: 1}\n  phases:\n    warmup: 1s\n    storm: 10s\n  stormRate: -5\n", "w.yaml:12: spill_to_disk.stormRate"},
		// What no engine can run in bounded memory, or MongoDB allows.
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 1e12\n", "w.yaml:4: spill_to_disk.stormRate: 1e+12 is outside [0.001, 1000]"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 5000\n", "w.yaml:4: spill_to_disk.stormRate: 5000 is outside"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 1000\n  phases: {storm: 10m}\n", "w.yaml:4: spill_to_disk.stormRate: 1000 queries/s over a 10m0s storm is 600000 queries; at most 300000"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  docBytes: 99999999999\n", "w.yaml:4: spill_to_disk.docBytes: 99999999999B is outside [1B, 16MiB]"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  phases:\n    recovery: 3h\n", "w.yaml:5: spill_to_disk.phases.recovery"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  mix:\n    - {stage: $sort, weight: 1}\n    - {stage: $lookup, weight: 1}\n", "w.yaml:6: spill_to_disk.mix.1"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  phases: {storm: soon}\n", "w.yaml:4: "},
		{"name: x\nkind: spill_to_disk\nmerge_partial_write: {ops: 3}\n", "settings of another kind"},
		{"kind: merge_partial_write\n", "missing name"},
		{"name: x\nkind: merge_partial_write\nmerge_partial_write: {ops: 0}\n", "merge_partial_write.ops"},
		// Within each bound, beyond the trial's memory together (the
		// review's spec): the key whose lowering helps is named, on its
		// line.
		{"name: x\nkind: merge_partial_write\nmerge_partial_write:\n  ops: 10000\n  sourceDocs: 1000000\n",
			"w.yaml:5: merge_partial_write.sourceDocs: 1000000 source documents: even one op over them needs ~5.06 GiB, the budget is 1 GiB a trial"},
		{"name: x\nkind: merge_partial_write\nmerge_partial_write:\n  ops: 10000\n  sourceDocs: 1000\n",
			"w.yaml:4: merge_partial_write.ops: 10000 ops over 1000 source documents (an op that is not shed writes them all: 10000000 documents): a trial needs ~21.5 GiB"},
		// The client's settings: the driver's meanings (0 connections is
		// no limit; at least one connection made at a time).
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  maxPoolSize: -1\n", "w.yaml:4: spill_to_disk.maxPoolSize: -1 is outside [0, 1000000]"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  maxConnecting: 0\n", "w.yaml:4: spill_to_disk.maxConnecting: 0 is outside [1, 1000000]"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  timeout: 2h\n", "w.yaml:4: spill_to_disk.timeout: 2h0m0s is outside [0s, 1h0m0s]"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  maxPoolSize: many\n", "w.yaml:4: "},
		{"- a\n- b\n", "w.yaml:1: want a mapping"},
		{"name: [\n", "w.yaml:"},
		// A second document is refused, not dropped (yaml.v3 reads the first).
		{"name: x\nkind: spill_to_disk\n---\nspill_to_disk: {stormRate: 5}\n", "w.yaml:3: a second YAML document"},
		// NaN and ±Inf in every float the workload takes.
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: .nan\n", "w.yaml:4: spill_to_disk.stormRate"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  canaryRate: .inf\n", "w.yaml:4: spill_to_disk.canaryRate"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  scanSpread: .nan\n", "w.yaml:4: spill_to_disk.scanSpread"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  loadSpread: -.inf\n", "w.yaml:4: spill_to_disk.loadSpread"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  outputShare: .nan\n", "w.yaml:4: spill_to_disk.outputShare"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  mix:\n    - {stage: $sort, weight: .nan}\n", "w.yaml:5: spill_to_disk.mix.0"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  mix:\n    - {stage: $sort, weight: .inf}\n", "w.yaml:5: spill_to_disk.mix.0"},
		{"name: x\nkind: merge_partial_write\nmerge_partial_write: {pressurePercent: .nan}\n", "merge_partial_write.pressurePercent"},
		{"name: x\nkind: merge_partial_write\nmerge_partial_write: {pressurePercent: .inf}\n", "merge_partial_write.pressurePercent"},
	} {
		_, err := Parse("w.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		s, _ := Builtin(name)
		b, _ := Marshal(s)
		f.Add(b)
	}
	f.Add([]byte("name: x\nkind: spill_to_disk\nspill_to_disk: {phases: {storm: 1s}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted a spec Validate rejects: %v", err)
		}
		b, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("again.yaml", b); err != nil {
			t.Fatalf("a parsed spec does not parse back: %v\n%s", err, b)
		}
	})
}
