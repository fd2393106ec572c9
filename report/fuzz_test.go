package report

import (
	"testing"

	"github.com/qmlsab/qmlsab/metric"
)

// Gate files are user input: no document may crash the parser, an
// accepted set names only metrics of the registry (a misspelt one would
// say "no data" and pass), and it evaluates on any summaries without
// panicking.
func FuzzParseGates(f *testing.F) {
	f.Add([]byte("name: mine\ngates:\n  - metric: availability\n    op: \">\"\n    value: 0.9\n"))
	f.Add([]byte("name: m\ngates:\n  - {metric: sheds_per_s, op: \">\", than: admissions_per_s, of: max}\n"))
	f.Add([]byte("name: m\ngates: [{metric: a, op: \"==\", value: .nan}]\n"))
	f.Add([]byte("name: m\ngates: [{metric: failovers, op: \"==\", value: 0, than: restarts}]\n"))
	f.Add([]byte("name: m\ngates: [{metric: failovers, op: \"==\", arms: [Z, \"*\"]}]\n---\nname: n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := ParseGates("fuzz.yaml", data)
		if err != nil {
			return
		}
		sums := map[string]Summary{"availability": Summarize([]float64{0.9, 1}, 0.95)}
		for _, g := range gs.Gates {
			if !metric.Known(g.Metric) || (g.Than != "" && !metric.Known(g.Than)) {
				t.Fatalf("accepted a gate on an unknown metric: %+v", g)
			}
			_ = g.Evaluate("X", sums)
			_ = g.String()
		}
		_ = gs.CheckArms([]string{"X"})
	})
}
