package report

import "testing"

// Gate files are user input: no document may crash the parser, and an
// accepted set evaluates on any summaries without panicking.
func FuzzParseGates(f *testing.F) {
	f.Add([]byte("name: mine\ngates:\n  - metric: availability\n    op: \">\"\n    value: 0.9\n"))
	f.Add([]byte("name: m\ngates:\n  - {metric: sheds_per_s, op: \">\", than: admissions_per_s, of: max}\n"))
	f.Add([]byte("name: m\ngates: [{metric: a, op: \"==\", value: .nan}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := ParseGates("fuzz.yaml", data)
		if err != nil {
			return
		}
		sums := map[string]Summary{"availability": Summarize([]float64{0.9, 1}, 0.95)}
		for _, g := range gs.Gates {
			_ = g.Evaluate("X", sums)
			_ = g.String()
		}
	})
}
