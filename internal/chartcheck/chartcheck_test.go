package chartcheck

import (
	"strings"
	"testing"
)

// Problems reports each thing a series gets wrong, naming the series: no
// data, a value or a horizontal mark outside its unit's range, a point the
// page's place check refuses; a series that holds has none.
func TestSeriesProblems(t *testing.T) {
	share := Range{Min: 0, Max: 1}
	beyondOne := func(p Point) string {
		if x, _ := p.X.(float64); x > 1 {
			return "x past 1"
		}
		return ""
	}
	cases := []struct {
		name string
		s    Series
		want []string // a substring of each problem, in order
	}{
		{"holds", Series{Name: "a", Points: []Point{{X: 0.0, Y: 0.5}, {Absent: true}}, MarkYs: []float64{1}}, nil},
		{"no data", Series{Name: "b", Points: []Point{{Absent: true}}}, []string{`series "b" has no data`}},
		{"value out of range", Series{Name: "c", Points: []Point{{X: 0.0, Y: 50}}}, []string{`series "c": 1 value(s) outside [0, 1]: 50`}},
		{"mark out of range", Series{Name: "d", Points: []Point{{X: 0.0, Y: 0.5}}, MarkYs: []float64{2}}, []string{`series "d": 1 value(s) outside [0, 1]: 2`}},
		{"misplaced point", Series{Name: "e", Points: []Point{{X: 3.0, Y: 0.5}}}, []string{`series "e": x past 1`}},
	}
	for _, c := range cases {
		got := c.s.Problems(share, beyondOne)
		if len(got) != len(c.want) {
			t.Errorf("%s: problems %q, want %d", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %q, want it to say %q", c.name, got[i], w)
			}
		}
	}
	if got := (Series{Name: "f", Points: []Point{{X: 9.0, Y: 0.5}}}).Problems(share, nil); len(got) != 0 {
		t.Errorf("no place check: problems %q, want none", got)
	}
}
