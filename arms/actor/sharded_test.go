package actor_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
)

// TestKillOpPerShardKillsTheWorkloadOnItsShardOnly: on an embedded sharded
// cluster whose storm collection lives on sh1, the per-shard actors (their
// threshold below any resident memory) kill the workload's queries sent
// through the router, each kill named sh1 (its actor read sh1's memory and
// $currentOp; sh0 runs none of them), and never touch another
// application's query on the same shard.
func TestKillOpPerShardKillsTheWorkloadOnItsShardOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	arm := arms.Arm{Name: "DS", Topology: arms.TopologySharded, SetParameters: map[string]string{}}
	dep, err := target.Provision(ctx, arm, target.Options{Dir: t.TempDir(), SimMemLimitMB: 4096,
		Sim: mongosim.SimOptions{CPUs: 2, BaselineMB: 512, ScanScale: 200}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dep.Close(context.Background()) }) // registered first, so it runs after the clients disconnect
	sh := target.ShardingOf(dep)
	if sh == nil {
		t.Fatal("the embedded sharded deployment has no sharding")
	}
	connect := func(app string) *mongo.Client { return stormtest.Connect(t, dep.URI(), app) }
	storm := connect(arms.StormAppName)
	if err := storm.Database("admin").RunCommand(ctx, bson.D{{Key: "enableSharding", Value: "storm"}, {Key: "primaryShard", Value: "sh1"}}).Err(); err != nil {
		t.Fatalf("enableSharding storm on sh1: %v", err)
	}
	coll := storm.Database("storm").Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	stormtest.LoadData(t, ctx, coll)

	cfg := killop.Default(arms.StormAppName)
	cfg.RSSHighPercent, cfg.Interval, cfg.Policy = 1, 30*time.Millisecond, killop.PolicyLargestFirst
	actors := stormtest.StartActor(ctx, func(ctx context.Context, report func(store.Kill)) error {
		return actor.KillOpPerShard(ctx, mongoclient.Guard{}, sh.ShardOf(), cfg, "qmlsab-killop", report)
	})

	// The workload's queries and another application's, on sh1 alike,
	// until the actor has killed some (or the deadline).
	others := stormtest.StartQueries(ctx, connect("reporting").Database("storm").Collection("events"), 1)
	storms := stormtest.StartQueries(ctx, coll, 4)
	// Until the events the test is about have happened (or the
	// deadline): a kill, a storm query that came back Interrupted through
	// the router, and the other application's query completed while the
	// actors ran. A fixed wait after the first kill lost the killed
	// query's answer on a busy machine.
	seen := func() bool {
		return stormtest.Interrupted(storms.Results()) > 0 && len(others.Results()) > 0
	}
	select {
	case <-actors.FirstKill():
	case <-ctx.Done():
	}
	stormtest.WaitFor(ctx, seen)
	otherErrs, stormErrs := others.Stop(), storms.Stop()
	kills := actors.Stop(t)
	if len(kills) == 0 {
		t.Fatal("no shard's actor killed anything")
	}
	for _, k := range kills {
		if k.Shard != "sh1" {
			t.Errorf("kill of op %d names shard %q, want sh1 (the only shard running the workload)", k.OpID, k.Shard)
		}
		if k.AppName != arms.StormAppName {
			t.Errorf("the actor killed op %d of app %q", k.OpID, k.AppName)
		}
		if k.TrackedBytes <= 0 || k.ResidentMB <= 0 {
			t.Errorf("kill %+v: no tracked memory or resident memory", k)
		}
		if k.Err != "" {
			t.Errorf("killOp of op %d on its shard failed: %s", k.OpID, k.Err)
		}
	}
	for _, err := range otherErrs {
		if err != nil {
			t.Fatalf("the other application's query failed: %v", err)
		}
	}
	interrupted := stormtest.Interrupted(stormErrs)
	if interrupted == 0 {
		t.Errorf("no storm query through the router saw Interrupted (%d kills, %d queries)", len(kills), len(stormErrs))
	}
	if len(otherErrs) == 0 {
		t.Errorf("the other application's query never completed while the actors ran (%d kills)", len(kills))
	}
	t.Logf("%d kills on sh1, %d of %d storm queries interrupted, %d queries of the other app completed", len(kills), interrupted, len(stormErrs), len(otherErrs))
}

func TestShardURIDiscoversTheShardsSet(t *testing.T) {
	if got := actor.ShardURI([]string{"h2:2", "h1:1"}); got != "mongodb://h1:1,h2:2/" {
		t.Errorf("ShardURI = %q", got)
	}
}
