package mongosim_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
)

func startCluster(t *testing.T, o mongosim.ShardedClusterOptions) *mongosim.ShardedCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if os.Getenv("MONGOSIM_TEST_LOG") != "" {
		o.Shard.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := mongosim.StartShardedCluster(ctx, o)
	if err != nil {
		t.Fatalf("StartShardedCluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func adminCmd(t *testing.T, ctx context.Context, c *mongo.Client, cmd bson.D) bson.Raw {
	t.Helper()
	raw, err := c.Database("admin").RunCommand(ctx, cmd).Raw()
	if err != nil {
		t.Fatalf("%v: %v", cmd[0].Key, err)
	}
	return raw
}

// shardOpcounter reads a shard primary's opcounters field.
func shardOpcounter(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet, field string) int64 {
	t.Helper()
	p := rs.Primary()
	if p < 0 {
		t.Fatal("shard has no primary")
	}
	direct := connect(t, "mongodb://"+rs.Hosts()[p]+"/?directConnection=true")
	raw := adminCmd(t, ctx, direct, bson.D{{Key: "serverStatus", Value: 1}})
	n, _ := raw.Lookup("opcounters", field).AsInt64OK()
	return n
}

// shardCount counts a collection's documents on one shard, directly.
func shardCount(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet, db, coll string) int64 {
	t.Helper()
	direct := connect(t, "mongodb://"+rs.Hosts()[rs.Primary()]+"/?directConnection=true")
	n, err := direct.Database(db).Collection(coll).CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestShardedClusterRoutesByShardKey: the driver sees a sharded topology;
// a hashed collection's inserts land on both shards; a find by shard key
// reaches one shard, one without it both, and a sorted find comes back
// merged in order; getMore and killCursors run on router cursors.
func TestShardedClusterRoutesByShardKey(t *testing.T) {
	c := startCluster(t, mongosim.ShardedClusterOptions{MembersPerShard: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var kinds []string
	monitor := &event.ServerMonitor{TopologyDescriptionChanged: func(e *event.TopologyDescriptionChangedEvent) {
		mu.Lock()
		kinds = append(kinds, e.NewDescription.Kind)
		mu.Unlock()
	}}
	client := connect(t, c.URI(), options.Client().SetServerMonitor(monitor))
	if err := client.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kinds) == 0 || kinds[len(kinds)-1] != "Sharded" {
		t.Fatalf("driver topology kinds %v, want it to end Sharded", kinds)
	}
	hello := adminCmd(t, ctx, client, bson.D{{Key: "hello", Value: 1}})
	if msg, _ := hello.Lookup("msg").StringValueOK(); msg != "isdbgrid" || hello.Lookup("setName").Type != 0 {
		t.Fatalf("router hello %v", hello)
	}
	shards := adminCmd(t, ctx, client, bson.D{{Key: "listShards", Value: 1}})
	if vals, _ := shards.Lookup("shards").Array().Values(); len(vals) != 2 {
		t.Fatalf("listShards: %v", shards)
	}
	adminCmd(t, ctx, client, bson.D{{Key: "enableSharding", Value: "app"}, {Key: "primaryShard", Value: "sh0"}})
	res := adminCmd(t, ctx, client, bson.D{{Key: "shardCollection", Value: "app.orders"}, {Key: "key", Value: bson.D{{Key: "cust", Value: "hashed"}}}})
	if ns, _ := res.Lookup("collectionsharded").StringValueOK(); ns != "app.orders" {
		t.Fatalf("shardCollection: %v", res)
	}
	orders := client.Database("app").Collection("orders")
	var docs []any
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "cust", Value: i}, {Key: "amount", Value: 1000 - i}})
	}
	if _, err := orders.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	n0, n1 := shardCount(t, ctx, c.Shards()[0], "app", "orders"), shardCount(t, ctx, c.Shards()[1], "app", "orders")
	if n0+n1 != 200 || n0 < 40 || n1 < 40 {
		t.Fatalf("documents per shard %d/%d, want 200 spread over both", n0, n1)
	}
	// Config metadata lives on the config server, readable through the router.
	chunks, err := client.Database("config").Collection("chunks").CountDocuments(ctx, bson.D{})
	if err != nil || chunks != 4 {
		t.Fatalf("config.chunks: %d, %v; want 4 (2 per shard)", chunks, err)
	}

	before := [2]int64{shardOpcounter(t, ctx, c.Shards()[0], "query"), shardOpcounter(t, ctx, c.Shards()[1], "query")}
	var got bson.M
	if err := orders.FindOne(ctx, bson.D{{Key: "cust", Value: 17}}).Decode(&got); err != nil || got["amount"] != int32(983) {
		t.Fatalf("find by shard key: %v %v", got, err)
	}
	after := [2]int64{shardOpcounter(t, ctx, c.Shards()[0], "query"), shardOpcounter(t, ctx, c.Shards()[1], "query")}
	if hit := (after[0] - before[0]) + (after[1] - before[1]); hit != 1 {
		t.Fatalf("find by shard key reached %d shards' queries (%v -> %v), want 1", hit, before, after)
	}
	before = after
	cur, err := orders.Find(ctx, bson.D{{Key: "amount", Value: bson.D{{Key: "$gt", Value: 0}}}},
		options.Find().SetSort(bson.D{{Key: "amount", Value: 1}}).SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	var sorted []bson.M
	if err := cur.All(ctx, &sorted); err != nil {
		t.Fatal(err)
	}
	after = [2]int64{shardOpcounter(t, ctx, c.Shards()[0], "query"), shardOpcounter(t, ctx, c.Shards()[1], "query")}
	if after[0] == before[0] || after[1] == before[1] {
		t.Fatalf("find without the shard key did not scatter: %v -> %v", before, after)
	}
	if len(sorted) != 200 {
		t.Fatalf("sorted find returned %d documents, want 200", len(sorted))
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1]["amount"].(int32) > sorted[i]["amount"].(int32) {
			t.Fatalf("merged results out of order at %d: %v then %v", i, sorted[i-1], sorted[i])
		}
	}
	// A multi-shard find with skip and limit applies them after the merge.
	cur, err = orders.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "amount", Value: -1}}).SetSkip(5).SetLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	var page []bson.M
	if err := cur.All(ctx, &page); err != nil {
		t.Fatal(err)
	}
	if len(page) != 3 || page[0]["amount"] != int32(995) || page[2]["amount"] != int32(993) {
		t.Fatalf("skip 5 limit 3 by amount desc: %v", page)
	}
	// killCursors on an open router cursor.
	cur, err = orders.Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Next(ctx) {
		t.Fatal(cur.Err())
	}
	if cur.ID() == 0 {
		t.Fatal("expected an open router cursor")
	}
	if err := cur.Close(ctx); err != nil {
		t.Fatalf("killCursors: %v", err)
	}
	// An update by shard key lands on the owning shard.
	ur, err := orders.UpdateOne(ctx, bson.D{{Key: "cust", Value: 17}}, bson.D{{Key: "$set", Value: bson.D{{Key: "paid", Value: true}}}})
	if err != nil || ur.ModifiedCount != 1 {
		t.Fatalf("update by shard key: %+v %v", ur, err)
	}
	// A sharded aggregation: $match/$sort on the shards, $group on the router.
	cur, err = orders.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "amount", Value: bson.D{{Key: "$gte", Value: 900}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []bson.M
	if err := cur.All(ctx, &groups); err != nil || len(groups) != 1 || groups[0]["n"] != int32(101) {
		t.Fatalf("group over shards: %v %v", groups, err)
	}
	// The router's serverStatus is a mongos's.
	st := adminCmd(t, ctx, client, bson.D{{Key: "serverStatus", Value: 1}})
	if p, _ := st.Lookup("process").StringValueOK(); p != "mongos" || st.Lookup("repl").Type != 0 || st.Lookup("queryMemory").Type != 0 {
		t.Fatalf("router serverStatus: process %q, repl %v, queryMemory %v", p, st.Lookup("repl"), st.Lookup("queryMemory"))
	}
}

// TestRouterKillOpAcrossShards: currentOp through the router lists the
// shards' operations tagged "shard:opid", and killOp of such an id
// interrupts the operation on its shard.
func TestRouterKillOpAcrossShards(t *testing.T) {
	c := startCluster(t, mongosim.ShardedClusterOptions{MembersPerShard: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := connect(t, c.URI())
	direct := connect(t, "mongodb://"+c.Shards()[1].Hosts()[0]+"/?directConnection=true")
	sleepDone := make(chan error, 1)
	go func() {
		sleepDone <- direct.Database("admin").RunCommand(ctx, bson.D{{Key: "sleep", Value: 1}, {Key: "secs", Value: 25}, {Key: "w", Value: true}}).Err()
	}()
	var opid string
	deadline := time.Now().Add(15 * time.Second)
	for opid == "" && time.Now().Before(deadline) {
		cur, err := client.Database("admin").Aggregate(ctx, mongo.Pipeline{
			{{Key: "$currentOp", Value: bson.D{}}},
			{{Key: "$match", Value: bson.D{{Key: "command.sleep", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.M
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) == 1 {
			if ops[0]["shard"] != "sh1" {
				t.Fatalf("op tagged shard %v, want sh1", ops[0]["shard"])
			}
			opid, _ = ops[0]["opid"].(string)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(opid) < 4 || opid[:4] != "sh1:" {
		t.Fatalf("no sh1:<opid> for the sleeping op (got %q)", opid)
	}
	res := adminCmd(t, ctx, client, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	if res.Lookup("shard").StringValue() != "sh1" {
		t.Fatalf("killOp reply %v", res)
	}
	select {
	case err := <-sleepDone:
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Name != "Interrupted" {
			t.Fatalf("killed sleep ended with %v, want Interrupted", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("killOp through the router did not interrupt the shard's op")
	}
	var ce mongo.CommandError
	err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: "nocolon"}}).Err()
	if !errors.As(err, &ce) || ce.Code != 28625 {
		t.Fatalf("malformed killOp id: %v, want code 28625", err)
	}
	err = client.Database("admin").RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: "sh9:1"}}).Err()
	if !errors.As(err, &ce) || ce.Name != "ShardNotFound" {
		t.Fatalf("unknown shard killOp: %v, want ShardNotFound", err)
	}
}

// TestShardMergeShedAfterWriting is the partial-write investigation's
// sharded path: an aggregate [$setWindowFields, $merge|$out] sent to the
// router runs on the source's shard, whose writes go out through the router
// write path as separate commands — into a sharded target, an unsharded
// target on the other shard, and one on the same shard (no shortcut), and
// $out's temporary collection. With always-shed armed from the second write
// batch, the shard-side aggregate is shed after it wrote (documents left
// behind) under arms E and F, and never under G (the write-started flag).
// The shed is the shard's: the router reports no shedding of its own.
func TestShardMergeShedAfterWriting(t *testing.T) {
	for _, arm := range []string{"E", "F", "G"} {
		t.Run(arm, func(t *testing.T) {
			c := startCluster(t, mongosim.ShardedClusterOptions{MembersPerShard: 1, Parameters: armParams(t, arm)})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := connect(t, c.URI())
			adminCmd(t, ctx, client, bson.D{{Key: "enableSharding", Value: "m"}, {Key: "primaryShard", Value: "sh0"}})
			adminCmd(t, ctx, client, bson.D{{Key: "enableSharding", Value: "other"}, {Key: "primaryShard", Value: "sh1"}})
			adminCmd(t, ctx, client, bson.D{{Key: "shardCollection", Value: "m.dst_sharded"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
			var docs []any
			for i := range 500 {
				docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}})
			}
			if _, err := client.Database("m").Collection("src").InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			for _, rs := range c.Shards() {
				direct := connect(t, "mongodb://"+rs.Hosts()[0]+"/?directConnection=true")
				adminCmd(t, ctx, direct, bson.D{{Key: "configureFailPoint", Value: "queryMemoryLoadSheddingAlwaysShed"},
					{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "writeBatchesBeforeShed", Value: 1}}}})
				adminCmd(t, ctx, direct, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
					{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "usagePercent", Value: 50}}}})
			}
			window := bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
				{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}}
			cases := []struct {
				name   string
				last   bson.D
				count  func() int64
				shards []int // shards expected to receive the writes
			}{
				{"sharded target", bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst_sharded"}}}},
					func() int64 { return countVia(t, ctx, client, "m", "dst_sharded") }, []int{0, 1}},
				{"unsharded target on the other shard", bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: "other"}, {Key: "coll", Value: "dst"}}}}}},
					func() int64 { return countVia(t, ctx, client, "other", "dst") }, []int{1}},
				{"same-shard target", bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst_same"}}}},
					func() int64 { return countVia(t, ctx, client, "m", "dst_same") }, []int{0}},
				{"$out", bson.D{{Key: "$out", Value: "dst_out"}},
					func() int64 { return countVia(t, ctx, client, "m", "dst_out") + tempOutDocs(t, ctx, c.Shards()[0]) }, []int{0}},
			}
			for _, tc := range cases {
				shedBefore := shedCount(t, ctx, c.Shards()[0])
				writesBefore := []int64{}
				for _, rs := range c.Shards() {
					writesBefore = append(writesBefore, shardOpcounter(t, ctx, rs, "update")+shardOpcounter(t, ctx, rs, "insert"))
				}
				cur, err := client.Database("m").Collection("src").Aggregate(ctx, mongo.Pipeline{window, tc.last})
				if err == nil {
					cur.Close(ctx)
				}
				written := tc.count()
				var ce mongo.CommandError
				shed := errors.As(err, &ce) && ce.Name == "QueryMemoryLimitExceeded"
				if arm == "G" {
					if err != nil || written != 500 {
						t.Errorf("%s: err=%v written=%d, want the whole output (the write-started flag latches it)", tc.name, err, written)
					}
				} else if !shed || written == 0 {
					t.Errorf("%s: err=%v written=%d, want a shed after >0 documents were written", tc.name, err, written)
				}
				if shed && (!ce.HasErrorLabel("SystemOverloadedError") || !ce.HasErrorLabel("RetryableError")) {
					t.Errorf("%s: shed error through the router lost its labels: %v", tc.name, ce.Labels)
				}
				// The driver retries an overload error (SystemOverloadedError),
				// so one aggregate can be shed more than once.
				if got := shedCount(t, ctx, c.Shards()[0]) - shedBefore; (got >= 1) != shed {
					t.Errorf("%s: sh0 counted %d sheds; the client saw shed=%v", tc.name, got, shed)
				}
				// The writes arrived as commands of their own on the
				// owning shards, the source's own shard included.
				for _, i := range tc.shards {
					if shardOpcounter(t, ctx, c.Shards()[i], "update")+shardOpcounter(t, ctx, c.Shards()[i], "insert") == writesBefore[i] {
						t.Errorf("%s: shard sh%d received no write commands", tc.name, i)
					}
				}
			}
		})
	}
}

func countVia(t *testing.T, ctx context.Context, c *mongo.Client, db, coll string) int64 {
	t.Helper()
	n, err := c.Database(db).Collection(coll).CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tempOutDocs counts documents in $out temporary collections on a shard.
func tempOutDocs(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet) int64 {
	t.Helper()
	direct := connect(t, "mongodb://"+rs.Hosts()[rs.Primary()]+"/?directConnection=true")
	names, err := direct.Database("m").ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if len(name) > len("tmp.agg_out.") && name[:len("tmp.agg_out.")] == "tmp.agg_out." {
			k, err := direct.Database("m").Collection(name).CountDocuments(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			n += k
		}
	}
	return n
}

func shedCount(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet) int64 {
	t.Helper()
	direct := connect(t, "mongodb://"+rs.Hosts()[rs.Primary()]+"/?directConnection=true")
	st := adminCmd(t, ctx, direct, bson.D{{Key: "serverStatus", Value: 1}})
	n, _ := st.Lookup("queryMemory", "loadShedding", "operationsShed").AsInt64OK()
	return n
}
