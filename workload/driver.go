package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/queryshape"
	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Driver runs the spill_to_disk workload over the wire: canaries through
// every phase, the open-loop storm in the storm phase, on a small real
// collection that stands for the modelled data.
type Driver struct {
	Spec SpillToDisk
	// URI connects to the deployment. It may carry credentials: the
	// driver never logs or returns it.
	URI string
	// RealDocs is the real collection's size (default 400 documents of
	// ~1 KB in 20 partitions).
	RealDocs int
	// DB is the workload's database (default "qmlsab").
	DB string
	// Monitor, when set, watches the canary client's topology (failovers
	// as the driver sees them).
	Monitor *event.ServerMonitor
	// Sharded says URI names the routers of a sharded cluster: Load
	// shards the storm's collection on hashed p (its $group key and
	// $setWindowFields partition, so every shard runs the storm's
	// blocking stages on its own partitions) and the canaries' on hashed
	// _id, before writing them.
	Sharded bool
	// Guard is which hosts the driver's clients may connect to (the zero
	// Guard: the loopback range only).
	Guard mongoclient.Guard

	canariesDone, canariesOK atomic.Int64
}

// Availability is the share of canaries finished so far that met the SLO
// (false before any finished): the live figure of a running trial.
func (d *Driver) Availability() (float64, bool) {
	n := d.canariesDone.Load()
	if n == 0 {
		return 0, false
	}
	return float64(d.canariesOK.Load()) / float64(n), true
}

func (d *Driver) defaults() {
	if d.RealDocs <= 0 {
		d.RealDocs = 400
	}
	if d.DB == "" {
		d.DB = "qmlsab"
	}
}

// client connects with an appName and no retries of its own: every shed,
// kill and failure must reach the measurement (maxAdaptiveRetries=0 turns
// off the driver's overload retries). Its pool and server selection are
// the spec's client settings, which the virtual clock's client obeys too.
func (d *Driver) client(app string, extra ...*options.ClientOptions) (*mongo.Client, error) {
	return mongo.Connect(append([]*options.ClientOptions{d.Guard.Client(options.Client().ApplyURI(d.URI).SetAppName(app).SetRetryReads(false).SetRetryWrites(false).
		SetMaxAdaptiveRetries(0).SetServerSelectionTimeout(d.Spec.ServerSelectionTimeout).
		SetMaxPoolSize(uint64(d.Spec.MaxPoolSize)).SetMaxConnecting(uint64(d.Spec.MaxConnecting)))}, extra...)...)
}

// Load writes the real collection unless it is already there
// (idempotent): RealDocs documents of ~1 KB in 20 partitions.
func (d *Driver) Load(ctx context.Context) error {
	d.defaults()
	c, err := d.client(d.Spec.AppName + "-loader")
	if err != nil {
		return err
	}
	defer mongoclient.Disconnect(c)
	coll := c.Database(d.DB).Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	n, err := harnessCount(ctx, coll.Database(), coll.Name())
	if err != nil {
		return fmt.Errorf("loading: counting: %w", err)
	}
	if n == int64(d.RealDocs) {
		return nil
	}
	if n > 0 {
		if err := coll.Drop(ctx); err != nil {
			return fmt.Errorf("loading: %w", err)
		}
	}
	if d.Sharded {
		// After any drop: a dropped collection is no longer sharded.
		if err := d.shardCollections(ctx, c); err != nil {
			return err
		}
	}
	pad := strings.Repeat("x", 900)
	docs := make([]any, d.RealDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i % partitions}, {Key: "v", Value: i}, {Key: "pad", Value: pad}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	return nil
}

// shardCollections shards the workload's collections through a router
// (idempotent: sharding a collection again on the same key is ok). A
// collection is sharded while empty, so its hashed chunks start spread
// over every shard.
func (d *Driver) shardCollections(ctx context.Context, c *mongo.Client) error {
	admin := c.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "enableSharding", Value: d.DB}}).Err(); err != nil {
		return fmt.Errorf("loading: enableSharding %s: %w", d.DB, err)
	}
	for _, k := range []struct{ coll, field string }{{"events", "p"}, {"canary", "_id"}} {
		cmd := bson.D{{Key: "shardCollection", Value: d.DB + "." + k.coll}, {Key: "key", Value: bson.D{{Key: k.field, Value: "hashed"}}}}
		if err := admin.RunCommand(ctx, cmd).Err(); err != nil {
			return fmt.Errorf("loading: shardCollection %s.%s on hashed %s: %w", d.DB, k.coll, k.field, err)
		}
	}
	return nil
}

// partitions is how many $setWindowFields partitions (and $group keys)
// the real collection has.
const partitions = 20

// pipeline is the storm query for a stage.
func pipeline(stage string) mongo.Pipeline {
	switch stage {
	case "$sort":
		return mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}}}
	case "$group":
		return mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$p"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}
	}
	return mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{
		{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"},
			{Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}}}}}}
}

// stormDrain is how long storm ops may outlive the trial.
const stormDrain = 10 * time.Second

// Run runs the phases from start and returns every outcome.
func (d *Driver) Run(ctx context.Context, start time.Time, seed uint64) (store.Results, error) {
	d.defaults()
	// The storm is an open loop of queries through one client: its
	// connection pool (maxPoolSize) caps how many of them are in the
	// server at once, and the rest wait for a connection, as the virtual
	// clock's client does.
	storm, err := d.client(d.Spec.AppName)
	if err != nil {
		return store.Results{}, err
	}
	defer mongoclient.Disconnect(storm) // bounded: the spec's serverSelectionTimeout may be long
	canaryOpts := options.Client()
	if d.Monitor != nil {
		canaryOpts.SetServerMonitor(d.Monitor)
	}
	canary, err := d.client(d.Spec.CanaryAppName, canaryOpts)
	if err != nil {
		return store.Results{}, err
	}
	defer mongoclient.Disconnect(canary)
	ph := d.Spec.Phases
	stormStart, stormEnd := start.Add(ph.Warmup), start.Add(ph.Warmup+ph.Storm)
	end := start.Add(ph.Total())
	res := store.Results{PhaseStarts: map[store.Phase]time.Time{store.PhaseWarmup: start, store.PhaseStorm: stormStart, store.PhaseRecovery: stormEnd, store.PhaseEnd: end}}

	events := storm.Database(d.DB).Collection("events")
	rng := rand.New(rand.NewPCG(seed, 0x570))
	var rmu sync.Mutex
	stages := make(map[time.Time]string)
	draw := func() queryshape.Shape {
		rmu.Lock()
		defer rmu.Unlock()
		return d.Spec.Query(rng)
	}
	var wg sync.WaitGroup
	var stormRes []Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		stormRes = OpenLoop{Rate: d.Spec.StormRate, Poisson: true, Seed: seed}.Run(ctx, stormStart, stormEnd, func(ctx context.Context, at time.Time) error {
			q := draw()
			rmu.Lock()
			stages[at] = q.Stage
			rmu.Unlock()
			// An op may drain for stormDrain after the trial ends; one still
			// running then is unfinished (store.TrialEnded), not failed: the
			// server neither answered nor failed it. This bounds a trial's
			// length when the server queues ops for minutes.
			parent := ctx
			ctx, cancel := context.WithDeadline(ctx, end.Add(stormDrain))
			defer cancel()
			cutOff := func(err error) error {
				if err != nil && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return trialEnded{err}
				}
				return err
			}
			// opCtx bounds one operation (the aggregate, a getMore) by the
			// spec's timeout, the driver's timeoutMS. The client's own
			// timeout option would not do: the driver applies it only to a
			// context without a deadline, and ctx has the trial's.
			opCtx := func() (context.Context, context.CancelFunc) {
				if d.Spec.Timeout > 0 {
					return context.WithTimeout(ctx, d.Spec.Timeout)
				}
				return ctx, func() {}
			}
			// The comment tells mongosim which modelled query this one
			// stands for (a real mongod ignores it); real batches are sized
			// so that the cursor takes as many getMores as the model's.
			realOut := d.RealDocs
			if q.Stage == "$group" {
				realOut = partitions
			}
			opts := options.Aggregate().SetAllowDiskUse(true).
				SetBatchSize(int32(max((realOut+q.GetMores())/(q.GetMores()+1), 1))).
				SetComment(bson.D{{Key: queryshape.HintKey, Value: q}})
			actx, cancelAggregate := opCtx()
			cur, err := events.Aggregate(actx, pipeline(q.Stage), opts)
			cancelAggregate()
			if err != nil {
				return cutOff(err)
			}
			defer func() {
				cctx, cancel := mongoclient.Cleanup()
				defer cancel()
				_ = cur.Close(cctx)
			}()
			for {
				// Next sends a getMore only when the batch is used up: only
				// then is it an operation, with a timeout of its own.
				nctx, cancelNext := ctx, func() {}
				if cur.RemainingBatchLength() == 0 {
					nctx, cancelNext = opCtx()
				}
				more := cur.Next(nctx)
				cancelNext()
				if !more {
					break
				}
			}
			return cutOff(cur.Err())
		})
	}()
	canaries := canary.Database(d.DB).Collection("canary", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 1}))
	var seq atomic.Int64
	var writes sync.Map // scheduled time -> the canary was a write
	canaryRes := OpenLoop{Rate: d.Spec.CanaryRate}.Run(ctx, start, end, func(ctx context.Context, at time.Time) error {
		cctx, cancel := context.WithDeadline(ctx, at.Add(d.Spec.CanaryTimeout()))
		defer cancel()
		i := seq.Add(1)
		write := i%2 == 0
		writes.Store(at, write)
		var err error
		if write {
			_, err = canaries.InsertOne(cctx, bson.D{{Key: "at", Value: at}})
		} else if err = canaries.FindOne(cctx, bson.D{{Key: "_id", Value: i % 97}}).Err(); errors.Is(err, mongo.ErrNoDocuments) {
			err = nil
		}
		d.canariesDone.Add(1)
		if err == nil && time.Since(at) <= d.Spec.CanarySLO {
			d.canariesOK.Add(1)
		}
		return err
	})
	wg.Wait()
	for _, r := range stormRes {
		o, code := Classify(r.Err)
		res.Storm = append(res.Storm, store.StormOp{Scheduled: r.Scheduled, Latency: r.Latency, Stage: stages[r.Scheduled], Outcome: o, Code: code})
	}
	for _, r := range canaryRes {
		_, code := Classify(r.Err)
		w, _ := writes.Load(r.Scheduled)
		write, _ := w.(bool)
		// A canary its deadline cut off waited at least its latency: a
		// lower bound, stored as censored, never a measurement.
		res.Canaries = append(res.Canaries, store.CanaryOp{Scheduled: r.Scheduled, Latency: r.Latency, Write: write,
			OK: r.Err == nil && r.Latency <= d.Spec.CanarySLO, Code: code, Censored: code == store.ClientTimeout})
	}
	return res, nil
}
