package target

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

// TestShardedEmbeddedAndDiscoveredByURI: an arm of topology sharded gets
// the embedded cluster, whose URI the Go driver discovers as Sharded, its
// members labelled by shard; a uri target naming its router discovers the
// same members and shards through listShards, and refuses topology
// sharded on a replica set.
func TestShardedEmbeddedAndDiscoveredByURI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	arm := arms.Arm{Name: "S", Topology: arms.TopologySharded, SetParameters: map[string]string{}}
	dep, err := Provision(ctx, arm, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Close(context.Background())
	sh := ShardingOf(dep)
	if sh == nil || len(sh.Routers()) != 1 {
		t.Fatalf("embedded sharded deployment: sharding %v", sh)
	}
	if got := slices.Sorted(maps.Values(sh.ShardOf())); !slices.Equal(got, []string{"sh0", "sh1"}) || len(dep.Members()) != 2 {
		t.Fatalf("shards of members %v (members %v), want sh0 and sh1", sh.ShardOf(), dep.Members())
	}
	var mu sync.Mutex
	var kind string
	c, err := mongo.Connect(options.Client().ApplyURI(dep.URI()).SetServerMonitor(&event.ServerMonitor{
		TopologyDescriptionChanged: func(e *event.TopologyDescriptionChangedEvent) { mu.Lock(); kind = e.NewDescription.Kind; mu.Unlock() }}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	if err := c.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if kind != "Sharded" {
		t.Errorf("the driver discovered %q, want Sharded", kind)
	}
	mu.Unlock()

	uri, err := Provision(ctx, arms.Arm{Name: "U", Target: arms.TargetURI, URI: dep.URI(), Topology: arms.TopologySharded}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer uri.Close(context.Background())
	ush := ShardingOf(uri)
	if ush == nil || !maps.Equal(ush.ShardOf(), sh.ShardOf()) || !slices.Equal(ush.Routers(), sh.Routers()) {
		t.Fatalf("uri target of the router: sharding %v, want shards %v routers %v", ush, sh.ShardOf(), sh.Routers())
	}
	for _, m := range uri.Startup() {
		if m.Topology != "mongos" {
			t.Errorf("member %s topology %q, want mongos", m.Host, m.Topology)
		}
	}
	shard0 := sh.(interface {
		Cluster() *mongosim.ShardedCluster
	}).Cluster().Shards()[0]
	_, err = Provision(ctx, arms.Arm{Name: "R", Target: arms.TargetURI, URI: shard0.URI(), Topology: arms.TopologySharded}, Options{})
	if err == nil {
		t.Fatal("topology sharded on a replica set's URI was accepted")
	}
}
