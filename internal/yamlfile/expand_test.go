package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type gate struct {
	Metric string  `yaml:"metric"`
	Op     string  `yaml:"op"`
	Value  float64 `yaml:"value"`
}

type gateFile struct {
	Name  string `yaml:"name"`
	Gates []gate `yaml:"gates"`
}

// Anchors, aliases and merge keys decode as YAML defines them, a top-level
// key that only defines an anchor is not an unknown key, and unknown keys
// and wrong types elsewhere are still errors at their line.
func TestDecodeStrictTakesAnchorsAliasesAndMergeKeys(t *testing.T) {
	src := "common: &avail {metric: availability, op: '>='}\n" +
		"name: shared\n" +
		"gates:\n" +
		"  - <<: *avail\n" +
		"    value: 0.9\n" +
		"  - {<<: *avail, op: '>', value: 0.5}\n" +
		"  - &fail {metric: failovers, op: '==', value: 0}\n" +
		"  - *fail\n"
	var g gateFile
	root, err := DecodeStrict("g.yaml", []byte(src), &g)
	if err != nil {
		t.Fatal(err)
	}
	want := []gate{{"availability", ">=", 0.9}, {"availability", ">", 0.5}, {"failovers", "==", 0}, {"failovers", "==", 0}}
	if g.Name != "shared" || fmt.Sprint(g.Gates) != fmt.Sprint(want) {
		t.Fatalf("decoded %+v, want gates %v", g, want)
	}
	if l := Line(root, "gates", "3"); l != 8 {
		t.Errorf("the alias's line is %d, want 8 (where *fail is written)", l)
	}
	for _, c := range []struct{ src, want string }{
		{"name: x\ngates: []\ncolour: blue\n", "g.yaml:3: field colour not found"},                                  // not a definition: no anchor
		{"name: x\ngates: []\ncommon: &c {a: 1}\ngatez: *c\n", "g.yaml:4: field gatez not found"},                   // an alias does not make a key known
		{"common: &c {metric: m, op: '>', value: high}\nname: x\ngates: [*c]\n", "g.yaml:1: `high`: want a number"}, // the value's own line, said without Go types
	} {
		var g gateFile
		if _, err := DecodeStrict("g.yaml", []byte(c.src), &g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want …%s…", c.src, err, c.want)
		}
	}
}

// A billion laughs: nine levels of ten aliases each would be 10⁹ nodes. It
// is refused naming the file, and so is a merge of something that is not a
// mapping; nodes up to the limit are fine.
func TestExpandRefusesAnAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	bomb := b.String()
	var v map[string]any
	_, err := DecodeStrict("bomb.yaml", []byte(bomb), &v)
	var ye *Error
	if !errors.As(err, &ye) || ye.File != "bomb.yaml" || !strings.Contains(err.Error(), "expands past 100000 nodes") {
		t.Fatalf("the bomb: %v; want an error naming bomb.yaml and the limit", err)
	}
	if _, err := DecodeStrict("m.yaml", []byte("x: &x [1]\ny: {<<: *x}\n"), &v); err == nil || !strings.Contains(err.Error(), `m.yaml:2: <<: merges mappings, got "1"`) {
		t.Errorf("merging a list: %v", err)
	}
	// Three levels of ten: 1 111 nodes, within the limits (Expand's, and
	// the alias ratio yaml.v3 checks itself when decoding).
	small := strings.Join(strings.Split(bomb, "\n")[:4], "\n") + "\n"
	if _, err := DecodeStrict("ok.yaml", []byte(small), &v); err != nil || len(v) != 4 {
		t.Errorf("a document of 1111 expanded nodes: %v, %v", v, err)
	}
}
