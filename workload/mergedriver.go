package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// MergeDriver runs merge_partial_write over the wire.
type MergeDriver struct {
	Spec MergePartialWrite
	// URI reaches the deployment (it may carry credentials; never logged).
	URI string
	// Members are the members' host:port, to arm the failpoints on each.
	Members []string
	DB      string
	// ShardOf labels each of Members with its shard on a sharded cluster
	// (URI then names the routers): the ops run the sharded cases
	// (runSharded). Nil on a replica set.
	ShardOf map[string]string
	// Guard is which hosts the driver's clients may connect to (the zero
	// Guard: the loopback range only).
	Guard mongoclient.Guard
}

func (d *MergeDriver) db() string {
	if d.DB == "" {
		return "qmlsab"
	}
	return d.DB
}

// Run loads the source, arms the failpoints, runs the ops one after the
// other (alternating primary and secondary) and disarms the failpoints.
func (d *MergeDriver) Run(ctx context.Context) (store.MergeRun, error) {
	var run store.MergeRun
	c, err := mongo.Connect(d.Guard.Client(options.Client().ApplyURI(d.URI).SetAppName(d.Spec.AppName).SetRetryReads(false).SetRetryWrites(false).
		SetMaxAdaptiveRetries(0).SetServerSelectionTimeout(30 * time.Second)))
	if err != nil {
		return run, err
	}
	defer mongoclient.Disconnect(c)
	if err := d.load(ctx, c); err != nil {
		return run, fmt.Errorf("loading: %w", err)
	}
	run.Forced, run.ForcedNote = true, ""
	if err := d.failpoints(ctx, "alwaysOn"); err != nil {
		run.Forced, run.ForcedNote = false, "shed failpoint not available, ops ran unforced: "+err.Error()
	}
	defer d.failpoints(context.Background(), "off")
	if d.ShardOf != nil {
		return d.runSharded(ctx, c, run)
	}
	db := c.Database(d.db())
	for i := range d.Spec.Ops {
		rp, rpName := readpref.Primary(), "primary"
		if i%2 == 1 {
			rp, rpName = readpref.Secondary(), "secondary"
		}
		target := "merge_op" + strconv.Itoa(i)
		if err := db.Collection(target).Drop(ctx); err != nil {
			return run, fmt.Errorf("op %d: dropping its target: %w", i, err)
		}
		start := time.Now()
		cur, err := db.Collection("merge_source", options.Collection().SetReadPreference(rp)).Aggregate(ctx, mongo.Pipeline{
			{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
				{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}},
			{{Key: "$merge", Value: bson.D{{Key: "into", Value: target}}}},
		}, options.Aggregate().SetAllowDiskUse(true))
		if err == nil {
			err = cur.Close(ctx)
		}
		if ctx.Err() != nil {
			return run, ctx.Err()
		}
		res := store.MergeOp{Op: i, ReadPreference: rpName, Scheduled: start, Latency: time.Since(start)}
		res.Outcome, res.Code = Classify(err)
		// Writes from a secondary's $merge go through the primary: count
		// there, where every write the op had acknowledged is applied.
		res.Written, err = harnessCount(ctx, db, target)
		if err != nil {
			return run, fmt.Errorf("op %d: counting what it wrote: %w", i, err)
		}
		res.Unsafe = (res.Outcome == store.Shed || res.Outcome == store.Killed) && res.Written > 0
		run.Ops = append(run.Ops, res)
	}
	return run, nil
}

// load writes the source collection on every member (w = all), so reads
// from a secondary see all of it; on a sharded cluster it first places
// the databases (placeDatabases).
func (d *MergeDriver) load(ctx context.Context, c *mongo.Client) error {
	wc := &writeconcern.WriteConcern{W: max(len(d.Members), 1)}
	if d.ShardOf != nil {
		// Through a router w counts one shard's members; reads go to the
		// shard primaries anyway.
		wc = writeconcern.Majority()
		if err := d.placeDatabases(ctx, c); err != nil {
			return err
		}
	}
	coll := c.Database(d.db()).Collection("merge_source", options.Collection().SetWriteConcern(wc))
	if n, err := harnessCount(ctx, coll.Database(), coll.Name()); err == nil && n == int64(d.Spec.SourceDocs) {
		return nil
	}
	if err := coll.Drop(ctx); err != nil {
		return err
	}
	docs := make([]any, d.Spec.SourceDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}}
	}
	_, err := coll.InsertMany(ctx, docs)
	return err
}

// failpoints arms (or disarms) the shed failpoint on every member, with
// memory pressure above the low mark, since mongod sheds only there.
func (d *MergeDriver) failpoints(ctx context.Context, mode string) error {
	var errs []error
	for _, h := range d.Members {
		c, err := d.direct(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		admin := c.Database("admin")
		for _, fp := range []bson.D{
			{{Key: "configureFailPoint", Value: "queryMemoryLoadSheddingAlwaysShed"}, {Key: "mode", Value: mode},
				{Key: "data", Value: bson.D{{Key: "writeBatchesBeforeShed", Value: d.Spec.ShedAfter}}}},
			{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"}, {Key: "mode", Value: mode},
				{Key: "data", Value: bson.D{{Key: "usagePercent", Value: d.Spec.PressurePercent}}}},
		} {
			if err := admin.RunCommand(ctx, fp).Err(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", h, err))
				break
			}
		}
		_ = mongoclient.Disconnect(c)
	}
	return errors.Join(errs...)
}
