package mongosim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// aggregateShardedDataDistribution answers {aggregate: 1, pipeline:
// [{$shardedDataDistribution: {}}, ...]} on admin as mongos does: one
// document per sharded collection, {ns, shards: [{shardName,
// numOrphanedDocs, numOwnedDocuments, ownedSizeBytes, orphanedSizeBytes}]},
// one entry per shard owning a chunk of it, the rest of the pipeline run
// on the router over those documents. Chunks never move in mongosim, so a
// shard holds no orphans; the owned size is the document count times the
// average document size, as mongod derives it from its storage statistics
// (here the documents' BSON sizes, read from the shard).
func (rt *Router) aggregateShardedDataDistribution(ctx context.Context, db string, body bson.Raw, stages []bson.Raw, n int) (bson.D, error) {
	spec, ok := stages[0].Lookup("$shardedDataDistribution").DocumentOK()
	if !ok || len(spec) != 5 {
		return nil, mongoerr.New(6789100, "The $shardedDataDistribution stage specification must be an empty object")
	}
	if one, ok := body.Lookup("aggregate").AsInt64OK(); db != "admin" || !ok || one != 1 {
		return nil, mongoerr.New(6789102, "The $shardedDataDistribution stage must be run on the admin database with {aggregate: 1}")
	}
	rest, err := query.Compile("admin", stages[1:])
	if err != nil {
		return nil, err
	}
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	nss := make([]string, 0, len(cat.colls))
	for ns := range cat.colls {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	var docs []bson.Raw
	for _, ns := range nss {
		dbName, coll, _ := strings.Cut(ns, ".")
		shards := bson.A{}
		for _, id := range cat.colls[ns].shardsOwning() {
			call := func(cmd bson.D) (bson.Raw, error) { return rt.cc.callShard(ctx, cat, id, cmd) }
			held, err := rt.cc.findAll(ctx, call, dbName, coll, nil)
			if err != nil {
				return nil, fmt.Errorf("$shardedDataDistribution: reading %s on shard %s: %w", ns, id, err)
			}
			count, size := int64(len(held)), int64(0)
			for _, d := range held {
				size += int64(len(d))
			}
			owned := int64(0)
			if count > 0 {
				owned = size / count * count
			}
			shards = append(shards, bson.D{{Key: "shardName", Value: id}, {Key: "numOrphanedDocs", Value: int64(0)},
				{Key: "numOwnedDocuments", Value: count}, {Key: "ownedSizeBytes", Value: owned}, {Key: "orphanedSizeBytes", Value: int64(0)}})
		}
		d, err := bson.Marshal(bson.D{{Key: "ns", Value: ns}, {Key: "shards", Value: shards}})
		if err != nil {
			return nil, fmt.Errorf("$shardedDataDistribution: encoding %s: %w", ns, err)
		}
		docs = append(docs, d)
	}
	out, err := rest.Run(routerEnv{}, docs)
	if err != nil {
		return nil, err
	}
	return rt.cursorFirstBatch(ctx, &routerCursor{ns: "admin.$cmd.aggregate", remotes: []*remoteCursor{{buf: out}}}, n)
}
