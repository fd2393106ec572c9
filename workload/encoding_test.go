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
	for _, want := range []string{`"phases":{"warmup_s":30,"storm_s":150,"recovery_s":60}`, `"canary_slo_s":1.5`, `"server_selection_timeout_s":30`, `"storm_rate":271.5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("spec JSON lacks %s:\n%s", want, b)
		}
	}
}
