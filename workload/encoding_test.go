package workload

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every field of the spec types has a snake_case JSON key (a field
// without one would be written under its Go name, as the v1 manifest
// did), and a duration's key says it is seconds.
func TestSpecTypesHaveSnakeCaseJSONKeys(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	durationType := reflect.TypeFor[time.Duration]()
	for _, typ := range []reflect.Type{reflect.TypeFor[Spec](), reflect.TypeFor[SpillToDisk](), reflect.TypeFor[Phases](), reflect.TypeFor[StageShare](), reflect.TypeFor[MergePartialWrite]()} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !snake.MatchString(key) {
				t.Errorf("%s.%s: JSON key %q is not snake_case", typ.Name(), f.Name, key)
			}
			if f.Type == durationType && !strings.HasSuffix(key, "_s") {
				t.Errorf("%s.%s: a duration's JSON key %q lacks _s", typ.Name(), f.Name, key)
			}
		}
	}
}

func TestBuiltinsRoundTripThroughJSONInSeconds(t *testing.T) {
	for _, name := range Names() {
		want, _ := Builtin(name)
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: JSON round trip changed the spec:\n got %+v\nwant %+v\n%s", name, got, want, b)
		}
	}
	s, _ := Builtin(KindSpillToDisk)
	s.SpillToDisk.CanarySLO = 1500 * time.Millisecond
	b, _ := json.Marshal(s)
	for _, want := range []string{`"phases":{"warmup_s":30,"storm_s":150,"recovery_s":60}`, `"canary_slo_s":1.5`, `"server_selection_timeout_s":30`, `"storm_rate":207`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("spec JSON lacks %s:\n%s", want, b)
		}
	}
}

// A manifest written before the client's pool settings existed has no
// max_pool_size, max_connecting or timeout_s: it reads with the driver's
// defaults (no timeout), so that a run begun then can be resumed and
// reported, and the workload it records is still valid.
func TestAWorkloadWithoutTheClientKeysReadsTheDriversDefaults(t *testing.T) {
	s, _ := Builtin(KindSpillToDisk)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	w := doc[KindSpillToDisk].(map[string]any)
	for _, k := range []string{"max_pool_size", "max_connecting", "timeout_s"} {
		if _, ok := w[k]; !ok {
			t.Fatalf("the spec's JSON lacks %s:\n%s", k, b)
		}
		delete(w, k)
	}
	old, _ := json.Marshal(doc)
	var got Spec
	if err := json.Unmarshal(old, &got); err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("a workload without the client keys: %v", err)
	}
	c := got.SpillToDisk
	if c.MaxPoolSize != 100 || c.MaxConnecting != 2 || c.Timeout != 0 || c.ServerSelectionTimeout != 30*time.Second {
		t.Errorf("read as maxPoolSize %d, maxConnecting %d, timeout %v, serverSelectionTimeout %v; want the driver's 100, 2, none, 30s",
			c.MaxPoolSize, c.MaxConnecting, c.Timeout, c.ServerSelectionTimeout)
	}
	// Written with them, they are kept, 0 (no limit) included.
	s.SpillToDisk.MaxPoolSize, s.SpillToDisk.MaxConnecting, s.SpillToDisk.Timeout = 0, 8, 1500*time.Millisecond
	b, _ = json.Marshal(s)
	got = Spec{}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if c := got.SpillToDisk; c.MaxPoolSize != 0 || c.MaxConnecting != 8 || c.Timeout != 1500*time.Millisecond {
		t.Errorf("round trip gave maxPoolSize %d, maxConnecting %d, timeout %v; want 0, 8, 1.5s\n%s", c.MaxPoolSize, c.MaxConnecting, c.Timeout, b)
	}
	if !strings.Contains(string(b), `"timeout_s":1.5`) {
		t.Errorf("the timeout is not written in seconds:\n%s", b)
	}
}
