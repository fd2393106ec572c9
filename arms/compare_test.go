package arms

import (
	"reflect"
	"strings"
	"testing"
)

// A sharded arm survives the round trip a run's manifest puts it through
// (Marshal, then Parse): its topology and the cluster's size are part of
// what the manifest records, so a resumed run starts the same cluster.
func TestShardedArmsRoundTripThroughYAML(t *testing.T) {
	in := []Arm{
		{Name: "L", Target: TargetLocal, Mongod: "/bin/mongod", Topology: TopologySharded,
			Sharded: Sharded{Shards: 3, MembersPerShard: 1, ConfigMembers: 1, Routers: 2, Mongos: "/bin/mongos"}, SetParameters: map[string]string{}},
		{Name: "S", Target: TargetEmbedded, Topology: TopologySharded, Sharded: Sharded{}.WithDefaults(), SetParameters: map[string]string{"a": "1"}},
		{Name: "U", Target: TargetURI, URI: "mongodb://h:1/", Topology: TopologySharded, Sharded: Sharded{}.WithDefaults(), SetParameters: map[string]string{}},
		{Name: "R", Target: TargetEmbedded, Topology: TopologyReplicaSet, SetParameters: map[string]string{}},
	}
	out, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("m.yaml", out)
	if err != nil {
		t.Fatalf("parsing our own output: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(in, back) {
		t.Fatalf("round trip changed the arms:\n%s\nin   %+v\nback %+v", out, in, back)
	}
}

func TestDifferencesNameEachFieldThatRunsDifferently(t *testing.T) {
	d, _ := Lookup("D")
	if diff, err := Differences(d, d); err != nil || len(diff) != 0 {
		t.Fatalf("an arm against itself: %v %v", diff, err)
	}
	// The arm as a manifest records it (Marshal, Parse) is the same arm.
	rec, err := canonical(d)
	if err != nil {
		t.Fatal(err)
	}
	if diff, err := Differences(rec, d); err != nil || len(diff) != 0 {
		t.Fatalf("D as recorded against D: %v %v", diff, err)
	}
	noActor := d
	noActor.Actors = nil
	noActor.Description = "another description changes nothing that runs"
	diff, err := Differences(noActor, d)
	if err != nil || len(diff) != 1 || !strings.HasPrefix(diff[0], "actors: recorded (none), given killop{rssHighPercent: 70, interval: 100ms") {
		t.Fatalf("D without its actor against D: %q %v", diff, err)
	}
	e, _ := Lookup("E")
	e.Name = "D"
	diff, _ = Differences(d, e)
	joined := strings.Join(diff, "\n")
	for _, want := range []string{"build: recorded 472d159296b6, given 6ab306ad", `setParameters.queryMemoryLoadSheddingHighMarkPercent: recorded (unset), given "70"`, "actors: recorded killop{"} {
		if !strings.Contains(joined, want) {
			t.Errorf("D against E's definition: no %q in\n%s", want, joined)
		}
	}
	sharded := d
	sharded.Topology, sharded.Sharded = TopologySharded, Sharded{}.WithDefaults()
	if diff, _ := Differences(d, sharded); len(diff) != 1 || diff[0] != "topology: recorded replset, given sharded" {
		t.Errorf("replset against sharded: %q", diff)
	}
	bigger := sharded
	bigger.Sharded.Shards = 4
	if diff, _ := Differences(sharded, bigger); len(diff) != 1 || !strings.HasPrefix(diff[0], "sharded: recorded {Shards:2") {
		t.Errorf("2 shards against 4: %q", diff)
	}
}

// A uri arm's password is not part of its definition: the recorded
// (redacted) arm equals the file's, and says it needs the file's
// credentials; another host does not.
func TestURIArmsCompareRedacted(t *testing.T) {
	u := Arm{Name: "U", Target: TargetURI, URI: "mongodb://bob:s3cret@h1:27017/?replicaSet=rs0", SetParameters: map[string]string{}}
	rec, err := canonical(u)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec.URI, "s3cret") || !NeedsCredentials(rec) {
		t.Fatalf("recorded uri %q: want it redacted and needing credentials", rec.URI)
	}
	if diff, err := Differences(rec, u); err != nil || len(diff) != 0 {
		t.Fatalf("recorded U against the file's U: %v %v", diff, err)
	}
	other := u
	other.URI = "mongodb://bob:s3cret@h2:27017/?replicaSet=rs0"
	diff, _ := Differences(rec, other)
	if len(diff) != 1 || !strings.HasPrefix(diff[0], "uri: recorded mongodb://bob:<redacted>@h1") || strings.Contains(diff[0], "s3cret") {
		t.Errorf("another host: %q", diff)
	}
	if NeedsCredentials(Arm{Name: "V", Target: TargetURI, URI: "mongodb://h1:27017/"}) {
		t.Error("a uri without credentials needs none")
	}
}
