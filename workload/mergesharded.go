package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/store"
)

// The sharded cases (the partial-write investigation's first suspected path): the
// source is an unsharded collection on the database's primary shard, so
// the router sends the whole pipeline to that shard, which runs its
// $merge/$out and writes through the router's write path:
//   - store.MergeCaseShardedTarget: into a collection sharded on a hashed
//     _id, whose chunks are on every shard;
//   - store.MergeCaseOtherShard: into an unsharded collection of another
//     database, whose primary shard is another shard;
//   - store.MergeCaseSameShard: into an unsharded collection of the
//     source's database, on the source's own shard;
//   - store.MergeCaseOut: $out, through a temporary collection that a shed
//     leaves behind. $out replaces its target only when it finishes, so
//     its leftovers are counted apart (store.MergeOp.OutTempDocs), never
//     as documents written into the target.
//
// Op i runs case i mod 4, always from the primaries (a router reads from
// shard primaries). Each op's ShedBy lists the shard members whose shed
// counter (queryMemory.loadShedding.operationsShed) rose during it.

// otherDB is the database whose primary shard is another shard.
func (d *MergeDriver) otherDB() string { return d.db() + "_other" }

// shardIDs are the cluster's shards, in order.
func (d *MergeDriver) shardIDs() []string {
	return slices.Sorted(maps.Keys(setOf(slices.Collect(maps.Values(d.ShardOf)))))
}

func setOf(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// placeDatabases puts the source's database on the first shard and the
// other database on the second (the first too, with one shard).
func (d *MergeDriver) placeDatabases(ctx context.Context, c *mongo.Client) error {
	ids := d.shardIDs()
	if len(ids) == 0 {
		return fmt.Errorf("a sharded cluster without shards")
	}
	other := ids[min(1, len(ids)-1)]
	for db, shard := range map[string]string{d.db(): ids[0], d.otherDB(): other} {
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "enableSharding", Value: db}, {Key: "primaryShard", Value: shard}}).Err(); err != nil {
			return fmt.Errorf("enableSharding %s on %s: %w", db, shard, err)
		}
	}
	return nil
}

func (d *MergeDriver) runSharded(ctx context.Context, c *mongo.Client, run store.MergeRun) (store.MergeRun, error) {
	db := c.Database(d.db())
	sourceShard := d.shardIDs()[0]
	// Targets named for this run: an attached cluster keeps an earlier
	// run's (and a dropped sharded collection's metadata), and a target
	// must start empty for Written to be this op's.
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range d.Spec.Ops {
		kase := store.MergeCases[i%len(store.MergeCases)]
		target := "merge_" + stamp + "_op" + strconv.Itoa(i)
		var out bson.D
		count := func() (int64, error) { return harnessCount(ctx, db, target) }
		var outTemp func() (int64, error) // $out's temporary leftovers of this op
		switch kase {
		case store.MergeCaseShardedTarget:
			if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: d.db() + "." + target},
				{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}).Err(); err != nil {
				return run, fmt.Errorf("op %d: sharding its target: %w", i, err)
			}
			out = bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: target}}}}
		case store.MergeCaseOtherShard:
			out = bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: d.otherDB()}, {Key: "coll", Value: target}}}}}}
			count = func() (int64, error) { return harnessCount(ctx, c.Database(d.otherDB()), target) }
		case store.MergeCaseSameShard:
			out = bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: target}}}}
		case store.MergeCaseOut:
			out = bson.D{{Key: "$out", Value: target}}
			// Earlier $out ops' temporary collections stay: count what
			// this one adds.
			left, err := d.tempOutDocs(ctx, sourceShard)
			if err != nil {
				return run, fmt.Errorf("op %d: counting earlier $out leftovers: %w", i, err)
			}
			outTemp = func() (int64, error) {
				tmp, err := d.tempOutDocs(ctx, sourceShard)
				return tmp - left, err
			}
		}
		before, err := d.shedCounters(ctx)
		if err != nil {
			return run, fmt.Errorf("op %d: reading the shards' shed counters: %w", i, err)
		}
		start := time.Now()
		cur, err := db.Collection("merge_source").Aggregate(ctx, mongo.Pipeline{
			{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
				{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}},
			out,
		}, options.Aggregate().SetAllowDiskUse(true))
		if err == nil {
			err = cur.Close(ctx)
		}
		if ctx.Err() != nil {
			return run, ctx.Err()
		}
		res := store.MergeOp{Op: i, ReadPreference: "primary", Case: kase, Scheduled: start, Latency: time.Since(start)}
		res.Outcome, res.Code = Classify(err)
		if res.Written, err = count(); err != nil {
			return run, fmt.Errorf("op %d: counting what it wrote: %w", i, err)
		}
		if outTemp != nil {
			if res.OutTempDocs, err = outTemp(); err != nil {
				return run, fmt.Errorf("op %d: counting its $out leftovers: %w", i, err)
			}
		}
		after, err := d.shedCounters(ctx)
		if err != nil {
			return run, fmt.Errorf("op %d: reading the shards' shed counters: %w", i, err)
		}
		for _, h := range d.Members {
			if a, ok := after[h]; ok && a > before[h] {
				res.ShedBy = append(res.ShedBy, d.ShardOf[h]+" "+h)
			}
		}
		res.Unsafe = (res.Outcome == store.Shed || res.Outcome == store.Killed) && res.Written > 0
		run.Ops = append(run.Ops, res)
	}
	return run, nil
}

// direct connects to one member, for a command or two: a short-lived
// client (mongoclient.ShortLived), or its Disconnect can wait out a held
// hello for 10 s.
func (d *MergeDriver) direct(host string) (*mongo.Client, error) {
	return mongo.Connect(d.directOptions(host))
}

func (d *MergeDriver) directOptions(host string) *options.ClientOptions {
	return d.Guard.Client(mongoclient.ShortLived(options.Client().ApplyURI(d.URI).SetHosts([]string{host}).SetDirect(true).SetServerSelectionTimeout(10 * time.Second)))
}

// shedCounters reads each shard member's operationsShed; a member that
// does not report it is left out (absent, not zero).
func (d *MergeDriver) shedCounters(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, h := range d.Members {
		c, err := d.direct(h)
		if err != nil {
			return nil, err
		}
		st, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		_ = mongoclient.Disconnect(c)
		if err != nil {
			return nil, fmt.Errorf("%s: serverStatus: %w", h, err)
		}
		if n, ok := st.Lookup("queryMemory", "loadShedding", "operationsShed").AsInt64OK(); ok {
			out[h] = n
		}
	}
	return out, nil
}

// tempOutDocs counts the documents in $out's temporary collections
// (tmp.agg_out.*) on the members of shard: what a shed $out wrote and
// left behind.
func (d *MergeDriver) tempOutDocs(ctx context.Context, shard string) (int64, error) {
	for _, h := range d.Members {
		if d.ShardOf[h] != shard {
			continue
		}
		c, err := d.direct(h)
		if err != nil {
			return 0, err
		}
		defer mongoclient.Disconnect(c)
		hello, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
		if err != nil {
			return 0, fmt.Errorf("%s: hello: %w", h, err)
		}
		if p, _ := hello.Lookup("isWritablePrimary").BooleanOK(); !p {
			continue
		}
		names, err := c.Database(d.db()).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			return 0, fmt.Errorf("%s: listCollections: %w", h, err)
		}
		var n int64
		for _, name := range names {
			if strings.HasPrefix(name, "tmp.agg_out.") {
				k, err := harnessCount(ctx, c.Database(d.db()), name)
				if err != nil {
					return 0, fmt.Errorf("%s: counting %s: %w", h, name, err)
				}
				n += k
			}
		}
		return n, nil
	}
	return 0, fmt.Errorf("shard %s has no primary", shard)
}
