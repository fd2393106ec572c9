package specdiff

import (
	"strings"
	"testing"
)

// A workload whose storm rate and storm phase changed says so key by key,
// named without its kind's section; key order, spacing and the
// description do not count.
func TestDiffNamesEachChangedKey(t *testing.T) {
	old := `{"name":"spill_to_disk","kind":"spill_to_disk","description":"a","spill_to_disk":{"storm_rate":271.5,"phases":{"warmup_s":30,"storm_s":150},"mix":[{"stage":"$sort","weight":0.5}]}}`
	new := `{"kind":"spill_to_disk", "name":"spill_to_disk","description":"b","spill_to_disk":{"phases":{"storm_s":300,"warmup_s":30},"storm_rate":320,"mix":[{"weight":0.5,"stage":"$sort"}],"extra":true}}`
	got, err := Diff([]byte(old), []byte(new), Options{Ignore: []string{"description"}, Strip: "spill_to_disk"})
	if err != nil {
		t.Fatal(err)
	}
	want := "extra (unset) → true, phases.storm_s 150 → 300, storm_rate 271.5 → 320"
	if s := Describe(got, 0); s != want {
		t.Errorf("Describe = %q, want %q", s, want)
	}
	if s := Describe(got, 1); s != "extra (unset) → true, … and 2 more" {
		t.Errorf("Describe(1) = %q", s)
	}
	same, err := Diff([]byte(old), []byte(strings.ReplaceAll(old, `"description":"a"`, `"description":"c"`)), Options{Ignore: []string{"description"}})
	if err != nil || len(same) != 0 {
		t.Errorf("a description change: %v %v, want no change", same, err)
	}
	if _, err := Diff([]byte(old), []byte(`{`), Options{}); err == nil {
		t.Error("a malformed document compared without an error")
	}
}

// An arms document gives each arm's definition without its name and
// description; a changed actor threshold is named by its path.
func TestArmsDefinitionsDiffByPath(t *testing.T) {
	doc := func(pct string) string {
		return "arms:\n  - name: D\n    description: x\n    build: b1\n    actors:\n      - killop:\n          rssHighPercent: " + pct + "\n          interval: 100ms\n  - name: E\n    build: b2\n"
	}
	a, err := Arms(doc("70"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Arms(strings.Replace(doc("80"), "description: x", "description: y", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || string(a["E"]) != `{"build":"b2"}` {
		t.Fatalf("arms = %s", a)
	}
	got, err := Diff(a["D"], b["D"], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := Describe(got, 0); s != "actors[0].killop.rssHighPercent 70 → 80" {
		t.Errorf("D's change: %q", s)
	}
	if _, err := Arms("arms:\n  - build: x\n"); err == nil {
		t.Error("an arm without a name was read")
	}
	c, err := Canonical([]byte(`{"b": 1, "a": [2, {"d":1,"c":2}]}`))
	if err != nil || string(c) != `{"a":[2,{"c":2,"d":1}],"b":1}` {
		t.Errorf("Canonical = %s, %v", c, err)
	}
}
