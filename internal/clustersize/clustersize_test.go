package clustersize_test

import (
	"context"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/clustersize"
	"github.com/qmlsab/qmlsab/mongosim"
)

// An arm's sharded cluster and the simulator's, their sizes left unset,
// are one size (they were 1 and 3 members per shard), the documented
// one: 2 shards of 1 member, 1 config server member, 1 router.
func TestArmsAndTheSimulatorStartOneDefaultSize(t *testing.T) {
	want := arms.Sharded{Shards: 2, MembersPerShard: 1, ConfigMembers: 1, Routers: 1}
	if got := (arms.Sharded{}).WithDefaults(); got != want {
		t.Errorf("an arm's default sharded size %+v, want %+v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := mongosim.StartShardedCluster(ctx, mongosim.ShardedClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Shards()) != want.Shards || len(c.ConfigServer().Hosts()) != want.ConfigMembers || len(c.Routers()) != want.Routers {
		t.Errorf("the simulator's default cluster: %d shards, %d config members, %d routers; want %+v",
			len(c.Shards()), len(c.ConfigServer().Hosts()), len(c.Routers()), want)
	}
	for i, s := range c.Shards() {
		if n := len(s.Hosts()); n != want.MembersPerShard {
			t.Errorf("the simulator's shard %d has %d members, want %d", i, n, want.MembersPerShard)
		}
	}
}

// A size given is kept; one not positive is the default.
func TestFillDefaults(t *testing.T) {
	shards, members, config, routers := 3, 0, -1, 2
	clustersize.FillDefaults(&shards, &members, &config, &routers)
	if shards != 3 || members != clustersize.DefaultMembersPerShard || config != clustersize.DefaultConfigMembers || routers != 2 {
		t.Errorf("FillDefaults(3, 0, -1, 2) = %d, %d, %d, %d", shards, members, config, routers)
	}
}
