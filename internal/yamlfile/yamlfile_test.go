package yamlfile

import (
	"strings"
	"testing"
)

// A file holds one YAML document: a second one after "---" (even an empty
// one) is an error at the line of its "---", where yaml.v3 alone would read
// the first document and drop the rest; a "---" before the only document,
// a "..." after it, and comments are fine.
func TestOneDocumentPerFile(t *testing.T) {
	for _, src := range []string{"name: x\ngates: []\n", "---\nname: x\ngates: []\n", "name: x\ngates: []\n...\n", "# a gate file\nname: x\ngates: []\n# end\n"} {
		var g gateFile
		if _, err := DecodeStrict("g.yaml", []byte(src), &g); err != nil || g.Name != "x" {
			t.Errorf("%q: %v (%+v)", src, err, g)
		}
	}
	for src, want := range map[string]string{
		"name: x\ngates: []\n---\nname: y\ngates: []\n": "g.yaml:3: a second YAML document",
		"name: x\ngates: []\n---\n":                     "g.yaml:3: a second YAML document",
		"name: x\n---\n---\n":                           "g.yaml:2: a second YAML document",
		"name: x\n---\n[\n":                             "g.yaml:3: did not find expected node content",
	} {
		if _, err := ParseDocument("g.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDocument(%q): %v, want …%s…", src, err, want)
		}
		var g gateFile
		if _, err := DecodeStrict("g.yaml", []byte(src), &g); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeStrict(%q): %v, want …%s…", src, err, want)
		}
	}
	for _, src := range []string{"", "# nothing\n"} {
		if doc, err := ParseDocument("e.yaml", []byte(src)); err != nil || len(doc.Content) != 0 {
			t.Errorf("%q: %v, %+v; want an empty document for the caller to refuse", src, err, doc)
		}
	}
}

// Find follows mapping keys and list indices from a document or any node
// below it, and is nil where the path leaves the document.
func TestFind(t *testing.T) {
	doc, err := ParseDocument("g.yaml", []byte("name: x\ngates:\n  - metric: a\n    value: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := Find(doc, "gates", "0", "value"); n == nil || n.Value != "1" || n.Line != 4 {
		t.Errorf("gates.0.value: %+v", n)
	}
	if n := Find(Find(doc, "gates", "0"), "metric"); n == nil || n.Value != "a" {
		t.Errorf("metric under the gate's node: %+v", n)
	}
	for _, path := range [][]string{{"gates", "0", "than"}, {"gates", "1"}, {"name", "x"}, {"nope"}} {
		if n := Find(doc, path...); n != nil {
			t.Errorf("%v: %+v, want nil", path, n)
		}
	}
}
