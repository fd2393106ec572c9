package mongosim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/mongosim"
)

// TestRouterShardedDataDistribution: $shardedDataDistribution through the
// router lists each sharded collection (not an unsharded one) with, per
// shard owning chunks, the documents that shard holds, their size and no
// orphans; later stages run over that output; its argument and database
// are checked as mongod checks them.
func TestRouterShardedDataDistribution(t *testing.T) {
	c := startCluster(t, mongosim.ShardedClusterOptions{MembersPerShard: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := connect(t, c.URI())
	adminCmd(t, ctx, client, bson.D{{Key: "enableSharding", Value: "app"}, {Key: "primaryShard", Value: "sh0"}})
	adminCmd(t, ctx, client, bson.D{{Key: "shardCollection", Value: "app.orders"}, {Key: "key", Value: bson.D{{Key: "cust", Value: "hashed"}}}})
	var docs []any
	for i := range 120 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "cust", Value: i}})
	}
	if _, err := client.Database("app").Collection("orders").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Database("app").Collection("plain").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	admin := client.Database("admin")
	aggregate := func(pipeline bson.A) []bson.Raw {
		t.Helper()
		cur, err := admin.Aggregate(ctx, pipeline)
		if err != nil {
			t.Fatalf("aggregate %v: %v", pipeline, err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := aggregate(bson.A{bson.D{{Key: "$shardedDataDistribution", Value: bson.D{}}}})
	if len(out) != 1 || out[0].Lookup("ns").StringValue() != "app.orders" {
		t.Fatalf("$shardedDataDistribution = %v, want one document, for app.orders only", out)
	}
	entries, _ := out[0].Lookup("shards").Array().Values()
	if len(entries) != 2 {
		t.Fatalf("shards %v, want sh0 and sh1", entries)
	}
	total := int64(0)
	for i, e := range entries {
		d := e.Document()
		name := d.Lookup("shardName").StringValue()
		owned := d.Lookup("numOwnedDocuments").Int64()
		size := d.Lookup("ownedSizeBytes").Int64()
		want := shardCount(t, ctx, c.Shards()[i], "app", "orders")
		if name != []string{"sh0", "sh1"}[i] || owned != want || owned == 0 {
			t.Errorf("entry %d = %v, want shard sh%d owning the %d documents it holds", i, d, i, want)
		}
		// Every document here encodes to the same size, so the average
		// times the count is exact.
		one, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(1)}, {Key: "cust", Value: int32(1)}})
		if size != owned*int64(len(one)) {
			t.Errorf("%s ownedSizeBytes %d, want %d documents x %d bytes", name, size, owned, len(one))
		}
		if d.Lookup("numOrphanedDocs").Int64() != 0 || d.Lookup("orphanedSizeBytes").Int64() != 0 {
			t.Errorf("%s reports orphans, but chunks never move: %v", name, d)
		}
		total += owned
	}
	if total != 120 {
		t.Errorf("documents owned over the shards: %d, want 120", total)
	}
	if got := aggregate(bson.A{bson.D{{Key: "$shardedDataDistribution", Value: bson.D{}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "ns", Value: "app.nope"}}}}}); len(got) != 0 {
		t.Errorf("a $match after the stage kept %v", got)
	}
	refused := func(db string, cmd bson.D, code int32) {
		t.Helper()
		err := client.Database(db).RunCommand(ctx, cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != code {
			t.Errorf("%v on %s: got %v, want code %d", cmd, db, err, code)
		}
	}
	refused("admin", bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$shardedDataDistribution", Value: 3}}}}, {Key: "cursor", Value: bson.D{}}}, 6789100)
	refused("app", bson.D{{Key: "aggregate", Value: "orders"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$shardedDataDistribution", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, 6789102)
}
