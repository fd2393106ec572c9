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
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: -1\n", "w.yaml:3: spill_to_disk.stormRate: must be positive"},
		{"name: x\nkind: spill_to_disk\nspill_to_disk:\n  phases: {storm: soon}\n", "w.yaml:4: "},
		{"name: x\nkind: spill_to_disk\nmerge_partial_write: {ops: 3}\n", "settings of another kind"},
		{"kind: merge_partial_write\n", "missing name"},
		{"name: x\nkind: merge_partial_write\nmerge_partial_write: {ops: 0}\n", "merge_partial_write.ops"},
		{"- a\n- b\n", "w.yaml:1: want a mapping"},
		{"name: [\n", "w.yaml:"},
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
