package mongosim_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/mongosim"
)

type stormResult struct {
	completed, shed, killed, failed int64
	lowCanceled, lowRemoved         int64
	shedTotal, shedQueued           int64
	oomKills                        int
	peakRSSMB                       int32
}

// runWireStorm drives a short open-loop $setWindowFields storm over the
// wire against an in-process set running arm's parameters, and reads the
// primary's serverStatus counters.
func runWireStorm(t *testing.T, arm string, rate float64, d time.Duration) stormResult {
	t.Helper()
	params := map[string]string{}
	for k, v := range armParams(t, arm) {
		params[k] = v
	}
	rs := startSet(t, mongosim.ReplicaSetOptions{Parameters: params, MemLimitMB: 4096, RestartDelay: 2 * time.Second,
		ElectionTimeout: 2 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 200, PartitionMB: 20}})
	client := connect(t, rs.URI(), options.Client().SetAppName("qmlsab-storm").SetRetryReads(false).SetRetryWrites(false))
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	coll := client.Database("storm").Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	pad := strings.Repeat("x", 900)
	var docs []any
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i % 10}, {Key: "v", Value: i}, {Key: "pad", Value: pad}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var res stormResult
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var peak atomic.Int32
	sample := func() {
		if p := rs.Primary(); p >= 0 {
			if m := rs.Member(p); m != nil {
				st, err := connect(t, "mongodb://"+rs.Hosts()[p]+"/?directConnection=true").Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
				if err == nil {
					if r := st.Lookup("mem", "resident").AsInt64(); int32(r) > peak.Load() {
						peak.Store(int32(r))
					}
				}
			}
		}
	}
	for time.Now().Before(stop) {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
			defer ocancel()
			cur, err := coll.Aggregate(octx, mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{
				{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
				{Key: "output", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}}},
				options.Aggregate().SetAllowDiskUse(true).SetBatchSize(20))
			if err == nil {
				for cur.Next(octx) {
				}
				err = cur.Err()
				cur.Close(context.Background())
			}
			var ce mongo.CommandError
			switch {
			case err == nil:
				atomic.AddInt64(&res.completed, 1)
			case errorsAs(err, &ce) && ce.Name == "QueryMemoryLimitExceeded":
				atomic.AddInt64(&res.shed, 1)
			case errorsAs(err, &ce) && ce.Code == 11601:
				atomic.AddInt64(&res.killed, 1)
			default:
				atomic.AddInt64(&res.failed, 1)
			}
		}()
		if time.Now().UnixMilli()%500 < 30 {
			go sample()
		}
	}
	wg.Wait()
	res.peakRSSMB = peak.Load()
	res.oomKills = rs.OOMKills()
	for i, h := range rs.Hosts() {
		if rs.Member(i) == nil {
			continue
		}
		st, err := connect(t, "mongodb://"+h+"/?directConnection=true").Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			continue
		}
		res.lowCanceled += st.Lookup("queues", "execution", "read", "lowPriority", "canceled").AsInt64()
		res.lowRemoved += st.Lookup("queues", "execution", "read", "lowPriority", "removedFromQueue").AsInt64()
		if v, err := st.LookupErr("queryMemory", "loadShedding", "operationsShed"); err == nil {
			res.shedTotal += v.AsInt64()
			res.shedQueued += st.Lookup("queryMemory", "loadShedding", "operationsShedQueued").AsInt64()
		}
	}
	return res
}

// TestWireStormEVersusF is the model's contrast over the wire, in real
// time: under the inline shedder alone (E) every low-priority departure is
// an admission and no queued op is ever shed; with the queued-op sweeper
// (F) queued ops are shed and leave their queue without a ticket.
func TestWireStormEVersusF(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time storm")
	}
	e := runWireStorm(t, "E", 40, 8*time.Second)
	f := runWireStorm(t, "F", 40, 8*time.Second)
	t.Logf("E: %+v", e)
	t.Logf("F: %+v", f)
	if e.shedTotal == 0 || e.shedQueued != 0 || e.lowCanceled != 0 {
		t.Errorf("E: operationsShed=%d operationsShedQueued=%d lowPriority.canceled=%d; want inline sheds only", e.shedTotal, e.shedQueued, e.lowCanceled)
	}
	if f.shedQueued == 0 || f.lowCanceled < f.shedQueued || f.shedQueued*4 < f.shedTotal {
		t.Errorf("F: operationsShed=%d operationsShedQueued=%d lowPriority.canceled=%d; want queued ops shed in their queue", f.shedTotal, f.shedQueued, f.lowCanceled)
	}
	if e.shed == 0 || f.shed == 0 {
		t.Errorf("clients saw %d (E) and %d (F) QueryMemoryLimitExceeded errors; want both > 0", e.shed, f.shed)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
