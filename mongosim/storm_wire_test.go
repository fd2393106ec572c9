package mongosim_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/internal/queryshape"
	"github.com/qmlsab/qmlsab/internal/stormtest"
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
func runWireStorm(t *testing.T, arm string, rate float64, d time.Duration, extra map[string]string) stormResult {
	t.Helper()
	params := map[string]string{}
	for k, v := range armParams(t, arm) {
		params[k] = v
	}
	for k, v := range extra {
		params[k] = v
	}
	rs := startSet(t, mongosim.ReplicaSetOptions{Parameters: params, MemLimitMB: 4096, RestartDelay: 2 * time.Second,
		ElectionTimeout: 2 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 200, PartitionMB: 20}})
	client := connect(t, rs.URI(), options.Client().SetAppName("qmlsab-storm").SetRetryReads(false).SetRetryWrites(false))
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	coll := client.Database("storm").Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	stormtest.LoadData(t, ctx, coll)
	// Memory pressure is set, not grown: every member's shedder sees 60 %
	// of its memory in use (between E's and F's 30/70 marks), so what is
	// tested is which operations each shedder reaches, not whether this
	// storm on this host drives memory up to the marks.
	for _, h := range rs.Hosts() {
		direct := connect(t, "mongodb://"+h+"/?directConnection=true")
		if err := direct.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
			{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "usagePercent", Value: 60}}}}).Err(); err != nil {
			t.Fatal(err)
		}
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
			err := stormtest.Query(octx, coll, 20)
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
// (F) a queued op it sheds leaves its queue without a ticket.
func TestWireStormEVersusF(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time storm")
	}
	// Few tickets, so that the storm queues whatever the host's speed.
	few := map[string]string{"throughputProbingInitialConcurrency": "8", "throughputProbingMinConcurrency": "2", "throughputProbingMaxConcurrency": "4",
		"executionControlConcurrentReadLowPriorityTransactions": "2"}
	e := runWireStorm(t, "E", 60, 8*time.Second, few)
	f := runWireStorm(t, "F", 60, 8*time.Second, few)
	t.Logf("E: %+v", e)
	t.Logf("F: %+v", f)
	if e.shedTotal == 0 || e.shedQueued != 0 || e.lowCanceled != 0 {
		t.Errorf("E: operationsShed=%d operationsShedQueued=%d lowPriority.canceled=%d; want inline sheds only", e.shedTotal, e.shedQueued, e.lowCanceled)
	}
	// Whether this short storm queues an operation holding tracked memory
	// at the moment the sweeper looks depends on the host's speed (the
	// model test TestSweeperShedsQueuedOpsAndNeverTicketHolders holds the
	// sweeper's reach deterministically); what it sheds in a queue leaves
	// that queue without a ticket.
	if f.lowCanceled < f.shedQueued {
		t.Errorf("F: operationsShedQueued=%d but lowPriority.canceled=%d; a queued shed leaves its queue without a ticket", f.shedQueued, f.lowCanceled)
	}
	if e.shed == 0 || f.shed == 0 {
		t.Errorf("clients saw %d (E) and %d (F) QueryMemoryLimitExceeded errors; want both > 0", e.shed, f.shed)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// TestWireStormOOMKillsPrimaryAndSetRecovers: without shedding (arm A) the
// storm's buffers push the primary past its memory limit; the member is
// OOM-killed through the real Server.Kill, the real replica set elects
// another primary, and the supervisor restarts the dead member, which
// rejoins as a secondary. The queries running on it when it died get no
// reply — a SIGKILLed mongod answers nothing — so their client sees a
// network error, never ShutdownInProgress.
func TestWireStormOOMKillsPrimaryAndSetRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time storm")
	}
	params := map[string]string{}
	for k, v := range armParams(t, "A") {
		params[k] = v
	}
	rs := startSet(t, mongosim.ReplicaSetOptions{Parameters: params, MemLimitMB: 1536, RestartDelay: time.Second,
		ElectionTimeout: time.Second, HeartbeatInterval: 250 * time.Millisecond,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 200, PartitionMB: 20}})
	first := rs.Primary()
	var before [3]*mongosim.Server
	for i := range before {
		before[i] = rs.Member(i)
	}
	client := connect(t, rs.URI(), options.Client().SetAppName("qmlsab-storm").SetRetryReads(false))
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	coll := client.Database("storm").Collection("events", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 3}))
	stormtest.LoadData(t, ctx, coll)
	var wg sync.WaitGroup
	var answeredShutdown, networkErrors atomic.Int64
	// A bound, not an interval: the host may be busy.
	deadline := time.Now().Add(40 * time.Second)
	// Bursts of queries at once: their partitions are loaded together.
	for i := 0; time.Now().Before(deadline) && rs.OOMKills() == 0; i++ {
		if i%20 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
			defer ocancel()
			err := heavyQuery(octx, coll) // only how the dying member ends them matters here
			var ce mongo.CommandError
			switch {
			case errorsAs(err, &ce) && ce.Code == 91:
				answeredShutdown.Add(1)
			case mongo.IsNetworkError(err):
				networkErrors.Add(1)
			}
		}()
	}
	if rs.OOMKills() == 0 {
		t.Fatal("no OOM kill in 40 s of storm without shedding")
	}
	killed := -1
	for i := range 3 {
		if rs.Member(i) == nil || rs.Member(i) != before[i] {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatal("an OOM kill was counted but every member is the process it was")
	}
	newPrimary, err := rs.WaitForPrimary(ctx)
	if err != nil {
		t.Fatalf("no primary after the OOM kill: %v", err)
	}
	// The supervisor restarts the dead member (restart delay 1 s) as a new process.
	for (rs.Member(killed) == nil || rs.Member(killed) == before[killed]) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if rs.Member(killed) == nil || rs.Member(killed) == before[killed] {
		t.Fatal("the OOM-killed member never restarted")
	}
	t.Logf("member %d (primary at the start: %d) OOM-killed and restarted; primary now %d; %d OOM kills", killed, first, newPrimary, rs.OOMKills())
	cancel()
	wg.Wait()
	if n := answeredShutdown.Load(); n > 0 {
		t.Errorf("%d queries got a ShutdownInProgress reply from the OOM-killed member; a killed process answers nothing", n)
	}
	if networkErrors.Load() == 0 {
		t.Error("no query saw a network error when the primary was OOM-killed under the storm")
	}
}

// heavyQuery is the storm's $setWindowFields query carrying a model shape
// (the comment a model-driving client sends; mongod ignores it): it scans
// 60 MB into its stage, so it spills past the sort limit, and each of its
// getMores loads a 128 MiB partition as it reads the spill back: a few of
// them at once exhaust a 1.5 GiB member, whatever the host's speed.
func heavyQuery(ctx context.Context, coll *mongo.Collection) error {
	shape := queryshape.Shape{Stage: "$setWindowFields", ScanDocs: 60_000, DocBytes: 1000, HoldBytes: 8 << 20, LoadBytes: 128 << 20,
		OutputBytes: 4 << 20, BatchDocs: 1000}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{
		{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "output", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}}},
		options.Aggregate().SetAllowDiskUse(true).SetBatchSize(20).SetComment(bson.D{{Key: queryshape.HintKey, Value: shape}}))
	if err != nil {
		return err
	}
	defer cur.Close(context.Background())
	for cur.Next(ctx) {
	}
	return cur.Err()
}
