package arms

import "testing"

// Arms files are user input: no document may crash the parser, and what
// it accepts must survive a round trip through Marshal.
func FuzzParse(f *testing.F) {
	b, _ := Marshal(Builtin())
	f.Add(b)
	f.Add([]byte("arms:\n  - name: U\n    target: uri\n    uri: mongodb://bob:pw@127.0.0.1:27017/?replicaSet=rs0\n"))
	f.Add([]byte("arms:\n  - name: L\n    target: local\n    mongod: /usr/bin/mongod\n    actors:\n      - killop: {rssHighPercent: 70, interval: 100ms}\n"))
	f.Add([]byte("arms: [{name: X, target: embedded, setParameters: {a: 1}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		out, err := Marshal(list)
		if err != nil {
			t.Fatalf("Marshal of a parsed arms file: %v", err)
		}
		again, err := Parse("again.yaml", out)
		if err != nil {
			t.Fatalf("a parsed arms file does not parse back: %v\n%s", err, out)
		}
		if len(again) != len(list) {
			t.Fatalf("%d arms became %d", len(list), len(again))
		}
	})
}
