package arms

import (
	"strings"
	"testing"
)

// TestParseTopology: a sharded: block sizes a sharded arm (defaults for
// what it leaves out) and implies topology sharded; bad values and
// combinations are errors naming the file and line.
func TestParseTopology(t *testing.T) {
	got, err := Parse("a.yaml", []byte("arms:\n  - name: L\n    target: local\n    mongod: /bin/mongod\n    sharded:\n      shards: 3\n      mongos: /bin/mongos\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := got[0]; !a.IsSharded() || a.Sharded != (Sharded{Shards: 3, MembersPerShard: 1, ConfigMembers: 1, Routers: 1, Mongos: "/bin/mongos"}) {
		t.Fatalf("parsed %+v", a)
	}
	for doc, want := range map[string]string{
		"arms:\n  - name: X\n    topology: ring\n":                                                "a.yaml:3:",
		"arms:\n  - name: X\n    sharded:\n      shards: 0\n":                                     "a.yaml:4:",
		"arms:\n  - name: X\n    topology: replset\n    sharded: {shards: 2}\n":                   "a.yaml:4:",
		"arms:\n  - name: X\n    target: local\n    mongod: /m\n    topology: sharded\n":          "a.yaml:2:",
		"arms:\n  - name: X\n    target: uri\n    uri: mongodb://h/\n    sharded: {routers: 1}\n": "a.yaml:5:",
		"arms:\n  - name: X\n    sharded: {mongos: /m}\n":                                         "a.yaml:3:",
	} {
		_, err := Parse("a.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it at %s", doc, err, want)
		}
	}
}
