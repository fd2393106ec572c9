package mongosim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/queryshape"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// readStarted is how many read operations a shard primary's execution
// control has admitted (normal and low priority): a modelled aggregate or
// getMore is admitted there, a pipeline without a blocking stage is not.
func readStarted(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet) int64 {
	t.Helper()
	direct := connect(t, "mongodb://"+rs.Hosts()[rs.Primary()]+"/?directConnection=true")
	st := adminCmd(t, ctx, direct, bson.D{{Key: "serverStatus", Value: 1}})
	var n int64
	for _, pool := range []string{"normalPriority", "lowPriority"} {
		v, ok := st.Lookup("queues", "execution", "read", pool, "startedProcessing").AsInt64OK()
		if !ok {
			t.Fatalf("shard %v serverStatus has no queues.execution.read.%s.startedProcessing", rs.Hosts(), pool)
		}
		n += v
	}
	return n
}

// TestRouterStormStagesRunOnEveryShard: the spill_to_disk storm's three
// pipelines sent to the router over a collection sharded on the
// partition key run their blocking stage on every shard that owns chunks
// (each shard's execution control admits them), come back whole and
// correct, and a shed on one shard reaches the client as the router's
// error with the shard's code.
func TestRouterStormStagesRunOnEveryShard(t *testing.T) {
	// Arm E's shedder, so that the failpoint below can shed.
	c := startCluster(t, mongosim.ShardedClusterOptions{MembersPerShard: 1, Parameters: armParams(t, "E")})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := connect(t, c.URI())
	adminCmd(t, ctx, client, bson.D{{Key: "enableSharding", Value: "qmlsab"}, {Key: "primaryShard", Value: "sh0"}})
	adminCmd(t, ctx, client, bson.D{{Key: "shardCollection", Value: "qmlsab.events"}, {Key: "key", Value: bson.D{{Key: "p", Value: "hashed"}}}})
	events := client.Database("qmlsab").Collection("events")
	var docs []any
	wantTotal := map[int32]int64{}
	for i := range 40 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "p", Value: int32(i % 20)}, {Key: "v", Value: int32(i)}})
		wantTotal[int32(i%20)] += int64(i)
	}
	if _, err := events.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, rs := range c.Shards() {
		if n := shardCount(t, ctx, rs, "qmlsab", "events"); n == 0 || n == 40 {
			t.Fatalf("shard %v holds %d of the 40 documents; the hashed partition key should spread them over both shards", rs.Hosts(), n)
		}
	}
	pipelines := map[string]mongo.Pipeline{
		"$group": {{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$p"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}},
		"$setWindowFields": {{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"},
				{Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}}}}}},
		"$sort": {{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}}},
	}
	for _, stage := range []string{"$group", "$setWindowFields", "$sort"} {
		before := []int64{readStarted(t, ctx, c.Shards()[0]), readStarted(t, ctx, c.Shards()[1])}
		cur, err := events.Aggregate(ctx, pipelines[stage], options.Aggregate().SetAllowDiskUse(true).SetBatchSize(4))
		if err != nil {
			t.Fatalf("%s through the router: %v", stage, err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			t.Fatalf("%s through the router: %v", stage, err)
		}
		switch stage {
		case "$group":
			if len(out) != 20 {
				t.Fatalf("$group gave %d groups, want 20", len(out))
			}
			for _, d := range out {
				p, total := d.Lookup("_id").Int32(), d.Lookup("total").AsInt64()
				if total != wantTotal[p] {
					t.Fatalf("$group partition %d: total %d, want %d", p, total, wantTotal[p])
				}
			}
		case "$setWindowFields":
			if len(out) != 40 {
				t.Fatalf("$setWindowFields gave %d documents, want 40", len(out))
			}
			for _, d := range out {
				// Partition p holds _id p and p+20: the running sum is v for
				// the first and the partition's total for the second.
				id, run := d.Lookup("_id").Int32(), d.Lookup("run").AsInt64()
				if want := map[bool]int64{true: int64(id), false: wantTotal[id%20]}[id < 20]; run != want {
					t.Fatalf("$setWindowFields _id %d: running sum %d, want %d", id, run, want)
				}
			}
		case "$sort":
			if len(out) != 40 {
				t.Fatalf("$sort gave %d documents, want 40", len(out))
			}
			for i, d := range out {
				if v := d.Lookup("v").Int32(); v != int32(39-i) {
					t.Fatalf("$sort document %d has v %d, want %d (merged out of order)", i, v, 39-i)
				}
			}
		}
		for i, rs := range c.Shards() {
			if after := readStarted(t, ctx, rs); after <= before[i] {
				t.Fatalf("%s: shard sh%d admitted no read (%d before, %d after): its blocking stage did not run there", stage, i, before[i], after)
			}
		}
	}

	// A shed on sh1 is the router's error, with the shard's code; sh0's
	// cursor is closed with it.
	direct := connect(t, "mongodb://"+c.Shards()[1].Hosts()[0]+"/?directConnection=true")
	adminCmd(t, ctx, direct, bson.D{{Key: "configureFailPoint", Value: "queryMemoryLoadSheddingAlwaysShed"}, {Key: "mode", Value: "alwaysOn"}})
	adminCmd(t, ctx, direct, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
		{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "usagePercent", Value: 50}}}})
	shedBefore := shedCount(t, ctx, c.Shards()[1])
	// A storm query's shape (a million 1 KB documents into $group): it
	// tracks memory while it builds, so the failpoint has memory to shed.
	shape := queryshape.Shape{Stage: "$group", ScanDocs: 1_000_000, DocBytes: 1000, HoldBytes: 20 << 20, OutputBytes: 20 << 10, BatchDocs: 4}
	cur, err := events.Aggregate(ctx, pipelines["$group"], options.Aggregate().SetAllowDiskUse(true).SetBatchSize(4).
		SetComment(bson.D{{Key: queryshape.HintKey, Value: shape}}))
	if err == nil {
		var out []bson.Raw
		err = cur.All(ctx, &out)
	}
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != mongoerr.QueryMemoryLimitExceeded {
		t.Fatalf("$group with sh1 shedding: %v, want the shard's QueryMemoryLimitExceeded (%d) through the router", err, mongoerr.QueryMemoryLimitExceeded)
	}
	if after := shedCount(t, ctx, c.Shards()[1]); after <= shedBefore {
		t.Fatalf("sh1's operationsShed %d → %d: the shed was not the shard's", shedBefore, after)
	}
}
