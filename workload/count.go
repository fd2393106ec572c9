package workload

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// harnessCount counts the documents of coll on the primary with the count
// command. It is the harness's own measurement, never the workload: the
// load step's check that the collection is already there, what a $merge
// wrote, what $out left behind. None of these may be shed. The driver's
// CountDocuments is an aggregation ($group) that holds tracked memory, so
// a server under memory pressure (a storm's aftermath on an attached
// deployment, the pressure override a merge workload arms) may shed it
// like any query; a count holds no tracked memory, so no shedder touches
// it. On a sharded cluster the router fans it out to the shards.
func harnessCount(ctx context.Context, db *mongo.Database, coll string) (int64, error) {
	var reply struct {
		N int64 `bson:"n"`
	}
	err := db.RunCommand(ctx, bson.D{{Key: "count", Value: coll}}, options.RunCmd().SetReadPreference(readpref.Primary())).Decode(&reply)
	return reply.N, err
}
