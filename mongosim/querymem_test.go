package mongosim_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/race"
	"github.com/qmlsab/qmlsab/mongosim"
)

// heapWatch samples the process heap until stopped and reports how far it
// rose above where it started: mongosim runs in the test's process, so an
// aggregate that holds what it should not shows here (one that holds
// gigabytes kills the process: the defect these tests are about).
type heapWatch struct {
	base, peak uint64
	stop       chan struct{}
	done       sync.WaitGroup
}

func watchHeap() *heapWatch {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w := &heapWatch{base: m.HeapAlloc, peak: m.HeapAlloc, stop: make(chan struct{})}
	w.done.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			w.peak = max(w.peak, m.HeapAlloc)
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	})
	return w
}

// rise stops the watch and returns the peak's rise above the start.
func (w *heapWatch) rise(t *testing.T, what string) uint64 {
	t.Helper()
	close(w.stop)
	w.done.Wait()
	t.Logf("%s: the heap rose %d MiB", what, (w.peak-w.base)>>20)
	return w.peak - w.base
}

// heapBound is generous: the aggregates below need 10 GB or more held
// at once when they materialise their output, a few hundred MB (a stage's
// 100 MiB, the driver's 16 MB batches, garbage) when they stream.
const heapBound = 1 << 30

func commandCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return 0
}

func aggregate(ctx context.Context, db *mongo.Database, coll string, pipeline bson.A, extra ...bson.E) error {
	cmd := append(bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}, extra...)
	return db.RunCommand(ctx, cmd).Err()
}

func setParameter(t *testing.T, ctx context.Context, c *mongo.Client, name string, v any) {
	t.Helper()
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}}).Err(); err != nil {
		t.Fatalf("setParameter %s: %v", name, err)
	}
}

// The review's first aggregate: $unwind of a 10,000-element array in a
// ~1 MB document is 10,000 documents of ~1 MB. mongod streams them; a
// blocking stage after the $unwind hits its 100 MiB limit.
func TestUnwindOfALargeDocumentStreamsWithinLimits(t *testing.T) {
	if race.Enabled {
		t.Skip("under the race detector: one query's memory accounting, in one goroutine")
	}
	srv := startStandalone(t)
	client := connect(t, "mongodb://"+srv.Addr()+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := client.Database("mem")
	arr := make(bson.A, 10000)
	for i := range arr {
		arr[i] = int32(i)
	}
	if _, err := db.Collection("big").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 1<<20)}, {Key: "arr", Value: arr}}); err != nil {
		t.Fatal(err)
	}
	unwind := bson.D{{Key: "$unwind", Value: "$arr"}}

	// Alone, the $unwind streams through the cursor, batch by batch.
	w := watchHeap()
	cur, err := db.Collection("big").Aggregate(ctx, mongo.Pipeline{unwind})
	if err != nil {
		t.Fatalf("$unwind: %v", err)
	}
	for i := range int32(200) {
		if !cur.Next(ctx) {
			t.Fatalf("$unwind ended after %d documents: %v", i, cur.Err())
		}
		if got := cur.Current.Lookup("arr").Int32(); got != i {
			t.Fatalf("document %d has arr %d", i, got)
		}
	}
	_ = cur.Close(ctx)
	if rise := w.rise(t, "$unwind"); rise > heapBound {
		t.Errorf("reading 200 documents of a $unwind raised the heap %d MiB", rise>>20)
	}

	// Sorted, the 10 GB must fit $sort's 100 MiB: without disk use mongod
	// refuses.
	sort := bson.D{{Key: "$sort", Value: bson.D{{Key: "arr", Value: -1}}}}
	w = watchHeap()
	err = aggregate(ctx, db, "big", bson.A{unwind, sort}, bson.E{Key: "allowDiskUse", Value: false})
	if code := commandCode(err); code != 292 {
		t.Errorf("$unwind then $sort without disk use: %v, want QueryExceededMemoryLimitNoDiskUseAllowed (292)", err)
	}
	if rise := w.rise(t, "$sort without disk use"); rise > heapBound {
		t.Errorf("$unwind then $sort without disk use raised the heap %d MiB", rise>>20)
	}

	// With disk use it spills; mongosim keeps the spilled data in memory,
	// within the operation's limit, and fails past it.
	setParameter(t, ctx, client, "internalQueryMaxMemoryUsageBytesPerOperation", int64(200<<20))
	w = watchHeap()
	err = aggregate(ctx, db, "big", bson.A{unwind, sort}, bson.E{Key: "allowDiskUse", Value: true})
	if code := commandCode(err); code != 146 {
		t.Errorf("$unwind then $sort with disk use: %v, want ExceededMemoryLimit (146)", err)
	}
	if rise := w.rise(t, "$sort with disk use"); rise > heapBound {
		t.Errorf("$unwind then $sort with disk use raised the heap %d MiB", rise>>20)
	}
}

// The review's second aggregate: $setWindowFields $push over an unbounded
// window of 8 MB of documents gives every output document the partition's
// 8 MB array. mongod computes it once and streams the documents out.
func TestWindowPushOverAnUnboundedWindowStreams(t *testing.T) {
	if race.Enabled {
		t.Skip("under the race detector: one query's memory accounting, in one goroutine")
	}
	srv := startStandalone(t)
	client := connect(t, "mongodb://"+srv.Addr()+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := client.Database("mem")
	const n = 80000
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: strings.Repeat("v", 90)}}
	}
	if _, err := db.Collection("events").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	window := bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "output", Value: bson.D{{Key: "all", Value: bson.D{{Key: "$push", Value: "$v"}}}}}}}}

	w := watchHeap()
	cur, err := db.Collection("events").Aggregate(ctx, mongo.Pipeline{window})
	if err != nil {
		t.Fatalf("$setWindowFields: %v", err)
	}
	for i := range int32(10) {
		if !cur.Next(ctx) {
			t.Fatalf("ended after %d documents: %v", i, cur.Err())
		}
		all, _ := cur.Current.Lookup("all").Array().Values()
		if got := cur.Current.Lookup("_id").Int32(); got != i || len(all) != n {
			t.Fatalf("document %d: _id %d, %d values pushed, want %d", i, got, len(all), n)
		}
	}
	_ = cur.Close(ctx)
	if rise := w.rise(t, "$setWindowFields $push"); rise > heapBound {
		t.Errorf("reading 10 documents raised the heap %d MiB", rise>>20)
	}

	// $push cannot spill: over internalQueryMaxPushBytes it fails, disk
	// use or not.
	setParameter(t, ctx, client, "internalQueryMaxPushBytes", int64(4<<20))
	err = aggregate(ctx, db, "events", bson.A{window}, bson.E{Key: "allowDiskUse", Value: true})
	if code := commandCode(err); code != 146 {
		t.Errorf("$push over 4 MiB: %v, want ExceededMemoryLimit (146)", err)
	}
}

// longAggregate is a pipeline that would run for hours in little memory:
// three nested $unwinds of 1,000 elements, 10⁹ documents, counted.
func longAggregate(t *testing.T, ctx context.Context, db *mongo.Database) bson.A {
	t.Helper()
	arr := make(bson.A, 1000)
	for i := range arr {
		arr[i] = int32(i)
	}
	if _, err := db.Collection("long").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: arr}, {Key: "b", Value: arr}, {Key: "c", Value: arr}}); err != nil {
		t.Fatal(err)
	}
	return bson.A{bson.D{{Key: "$unwind", Value: "$a"}}, bson.D{{Key: "$unwind", Value: "$b"}}, bson.D{{Key: "$unwind", Value: "$c"}}, bson.D{{Key: "$count", Value: "n"}}}
}

// waitForOp waits until an aggregate of app is running and returns its
// opid.
func waitForOp(t *testing.T, ctx context.Context, admin *mongo.Database, app string) any {
	t.Helper()
	for ctx.Err() == nil {
		res, err := admin.RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "appName", Value: app}, {Key: "command.aggregate", Value: bson.D{{Key: "$exists", Value: true}}}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if ops, _ := res.Lookup("inprog").Array().Values(); len(ops) == 1 {
			return ops[0].Document().Lookup("opid")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the aggregate never showed in currentOp")
	return nil
}

// A stage that runs long checks for interrupts: killOp, maxTimeMS and
// shutdown each end it with their code, and the op ends.
func TestLongStageIsInterrupted(t *testing.T) {
	srv, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			srv.Kill()
		}
	})
	uri := "mongodb://" + srv.Addr() + "/?directConnection=true"
	client := connect(t, uri, options.Client().SetAppName("long"))
	admin := connect(t, uri).Database("admin")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := client.Database("mem")
	pipeline := longAggregate(t, ctx, db)
	// Generous: the op ends as soon as a stage next checks, well within
	// this even on a loaded machine; unchecked, it runs for hours.
	const deadline = 2 * time.Minute

	t.Run("killOp", func(t *testing.T) {
		done := make(chan error, 1)
		go func() { done <- aggregate(ctx, db, "long", pipeline) }()
		opid := waitForOp(t, ctx, admin, "long")
		if err := admin.RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if code := commandCode(err); code != 11601 {
				t.Errorf("after killOp: %v, want Interrupted (11601)", err)
			}
		case <-time.After(deadline):
			t.Fatalf("the aggregate still ran %v after killOp", deadline)
		}
	})

	t.Run("maxTimeMS", func(t *testing.T) {
		done := make(chan error, 1)
		go func() { done <- aggregate(ctx, db, "long", pipeline, bson.E{Key: "maxTimeMS", Value: int64(300)}) }()
		select {
		case err := <-done:
			if code := commandCode(err); code != 50 {
				t.Errorf("with maxTimeMS 300: %v, want MaxTimeMSExpired (50)", err)
			}
		case <-time.After(deadline):
			t.Fatalf("the aggregate with maxTimeMS 300 still ran after %v", deadline)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		done := make(chan error, 1)
		go func() { done <- aggregate(ctx, db, "long", pipeline) }()
		waitForOp(t, ctx, admin, "long")
		stopped := make(chan struct{})
		go func() { srv.Kill(); close(stopped) }()
		killed = true
		select {
		case <-stopped:
		case <-time.After(deadline):
			t.Fatalf("the member's shutdown still waited for the aggregate after %v", deadline)
		}
		if err := <-done; err == nil {
			t.Error("the aggregate succeeded across the member's shutdown")
		}
	})
}
