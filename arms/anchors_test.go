package arms

import (
	"fmt"
	"strings"
	"testing"
)

// Arms share parameters through an anchor on a top-level definition, an
// alias and a merge key; errors inside shared values keep their file:line;
// an alias bomb is refused naming the file.
func TestArmsFileSharesSettingsThroughAnchors(t *testing.T) {
	src := `common: &common
  queryMemoryLoadSheddingLowMarkPercent: "12"
  executionControlDeprioritizationGate: true
arms:
  - name: X
    setParameters: *common
  - name: Y
    setParameters:
      <<: *common
      queryMemoryLoadSheddingLowMarkPercent: "30"
  - &z
    name: Z
    setParameters: {<<: *common, extra: "1"}
`
	got, err := Parse("shared.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"X": "map[executionControlDeprioritizationGate:true queryMemoryLoadSheddingLowMarkPercent:12]",
		"Y": "map[executionControlDeprioritizationGate:true queryMemoryLoadSheddingLowMarkPercent:30]",
		"Z": "map[executionControlDeprioritizationGate:true extra:1 queryMemoryLoadSheddingLowMarkPercent:12]",
	}
	if len(got) != 3 {
		t.Fatalf("arms %+v, want X, Y, Z", got)
	}
	for _, a := range got {
		if fmt.Sprint(a.SetParameters) != want[a.Name] {
			t.Errorf("arm %s: setParameters %v, want %s", a.Name, a.SetParameters, want[a.Name])
		}
	}
	for _, c := range []struct{ src, want string }{
		// An alias of an arm is a duplicate name, at the alias's line.
		{src + "  - *z\n", "shared.yaml:14: duplicate arm name \"Z\""},
		// A bad value in the shared mapping is reported where it is written.
		{"common: &c {a: [1]}\narms:\n  - {name: X, setParameters: *c}\n", "bad.yaml:1: setParameters.a"},
		// A key without an anchor is still unknown.
		{"commn: {a: 1}\narms:\n  - {name: X}\n", "bad.yaml:1: unknown key \"commn\""},
		{"arms:\n  - {name: X, setParameters: {<<: [1]}}\n", "bad.yaml:2: <<: merges mappings"},
	} {
		file := "bad.yaml"
		if strings.HasPrefix(c.src, "common: &common") {
			file = "shared.yaml"
		}
		if _, err := Parse(file, []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.src, err, c.want)
		}
	}

	var b strings.Builder
	b.WriteString("l0: &l0 {p: lol}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("arms:\n  - {name: X, setParameters: *l9}\n")
	if _, err := Parse("laughs.yaml", []byte(b.String())); err == nil || !strings.HasPrefix(err.Error(), "laughs.yaml:") || !strings.Contains(err.Error(), "expands past") {
		t.Errorf("a billion laughs: %v; want a refusal naming laughs.yaml and the limit", err)
	}
}
