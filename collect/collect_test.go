package collect

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/store"
)

func doc(t *testing.T, d bson.D) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pool(queued, removed, canceled int64) bson.D {
	return bson.D{{Key: "addedToQueue", Value: removed + queued}, {Key: "removedFromQueue", Value: removed}, {Key: "queueLength", Value: queued},
		{Key: "startedProcessing", Value: int64(100)}, {Key: "processing", Value: int64(3)}, {Key: "finishedProcessing", Value: int64(97)},
		{Key: "canceled", Value: canceled}, {Key: "newAdmissions", Value: int64(50)}}
}

func TestExtractReadsEachServerStatusShape(t *testing.T) {
	v70 := doc(t, bson.D{{Key: "uptimeMillis", Value: int64(5000)}, {Key: "mem", Value: bson.D{{Key: "resident", Value: int32(2048)}}},
		{Key: "wiredTiger", Value: bson.D{{Key: "concurrentTransactions", Value: bson.D{
			{Key: "write", Value: bson.D{{Key: "out", Value: int32(0)}, {Key: "available", Value: int32(7)}, {Key: "totalTickets", Value: int32(7)}}},
			{Key: "read", Value: bson.D{{Key: "out", Value: int32(3)}, {Key: "available", Value: int32(4)}, {Key: "totalTickets", Value: int32(7)},
				{Key: "normalPriority", Value: pool(5, 311, 2)}}},
			{Key: "monitor", Value: bson.D{{Key: "timesDecreased", Value: int64(12)}}}}}}}})
	v80 := doc(t, bson.D{{Key: "uptimeMillis", Value: int64(5000)}, {Key: "mem", Value: bson.D{{Key: "resident", Value: int32(2048)}}},
		{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{
			{Key: "write", Value: bson.D{{Key: "out", Value: int32(0)}, {Key: "totalTickets", Value: int32(8)}}},
			{Key: "read", Value: bson.D{{Key: "out", Value: int32(14)}, {Key: "available", Value: int32(0)}, {Key: "totalTickets", Value: int32(14)},
				{Key: "normalPriority", Value: pool(43, 91790, 2)}}},
			{Key: "monitor", Value: bson.D{{Key: "timesDecreased", Value: int64(401)}}}}}}}})
	master := doc(t, bson.D{{Key: "uptimeMillis", Value: int64(5000)}, {Key: "mem", Value: bson.D{{Key: "resident", Value: int32(2048)}}},
		{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{
			{Key: "read", Value: bson.D{{Key: "lowPriority", Value: pool(120, 160, 142)}, {Key: "normalPriority", Value: pool(0, 900, 0)},
				{Key: "out", Value: int32(12)}, {Key: "available", Value: int32(0)}, {Key: "totalTickets", Value: int32(12)}}},
			{Key: "write", Value: bson.D{{Key: "totalTickets", Value: int32(12)}}}}}}},
		{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "currentUsageBytes", Value: int64(7 << 30)}, {Key: "operationsShed", Value: int64(17)}}}}}})

	for name, tc := range map[string]struct {
		doc     bson.Raw
		tickets float64
		low     bool
		shed    bool
	}{"7.0": {v70, 7, false, false}, "8.0": {v80, 14, false, false}, "master": {master, 12, true, true}} {
		got := Extract(tc.doc)
		if got["read.totalTickets"] != tc.tickets || got["residentMB"] != 2048 {
			t.Errorf("%s: read.totalTickets=%v residentMB=%v", name, got["read.totalTickets"], got["residentMB"])
		}
		if _, ok := got["read.low.removedFromQueue"]; ok != tc.low {
			t.Errorf("%s: low-priority counters present=%v, want %v (absent, not zero, where the shape lacks them)", name, ok, tc.low)
		}
		if _, ok := got["queryMemory.operationsShed"]; ok != tc.shed {
			t.Errorf("%s: operationsShed present=%v, want %v", name, ok, tc.shed)
		}
		if tc.low && (got["read.low.canceled"] != 142 || got["read.low.queueLength"] != 120) {
			t.Errorf("%s: low-priority fields %v", name, got)
		}
	}
	if got := Extract(doc(t, bson.D{{Key: "ok", Value: 1.0}})); len(got) != 0 {
		t.Errorf("a document without the sections yields %v, want nothing", got)
	}
}

func TestExtractReadsMongosim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mongosim.Start(mongosim.Options{Parameters: map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr() + "/?directConnection=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	got := Extract(raw)
	for _, f := range []string{"residentMB", "read.totalTickets", "read.low.removedFromQueue", "read.low.canceled", "queryMemory.operationsShed", "queryMemory.operationsShedQueued", "uptimeMillis"} {
		if _, ok := got[f]; !ok {
			t.Errorf("mongosim's serverStatus lacks %s", f)
		}
	}
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// The sampler sees a member's death as a gap, the election that follows
// as a change of primary, and the member's return as a restart. Each
// step waits for the samples that show it (a generous deadline, never a
// fixed interval), so a host too busy to sample on time only makes the
// test slower.
func TestSamplerSeesAGapAFailoverAndARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{ElectionTimeout: time.Second, HeartbeatInterval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	// A sample may take its time: a live member that answers late is
	// still up (a killed one refuses the connection at once).
	s := &Sampler{Members: rs.Hosts(), Interval: 100 * time.Millisecond, Timeout: 10 * time.Second}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(sctx); close(done) }()
	defer func() { stop(); <-done }()
	hosts := rs.Hosts()

	old := rs.Primary()
	var oldProcess string
	waitForSamples(t, ctx, s, "the first primary sampled up", func(samples []store.Sample) bool {
		for _, smp := range samples {
			if smp.Member == hosts[old] && smp.Up && smp.Primary {
				oldProcess = smp.ProcessID
				return true
			}
		}
		return false
	})
	if oldProcess == "" {
		t.Fatal("the primary's samples carry no process id")
	}
	killed := time.Now()
	rs.Kill(old)
	if _, err := rs.WaitForPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	waitForSamples(t, ctx, s, "a gap of the killed member and another member sampled as primary", func(samples []store.Sample) bool {
		gap, newPrimary := false, false
		for _, smp := range samples {
			if smp.At.After(killed) {
				gap = gap || (smp.Member == hosts[old] && !smp.Up)
				newPrimary = newPrimary || (smp.Member != hosts[old] && smp.Up && smp.Primary)
			}
		}
		return gap && newPrimary
	})
	if err := rs.Restart(old); err != nil {
		t.Fatal(err)
	}
	waitForSamples(t, ctx, s, "the killed member sampled up as a new process", func(samples []store.Sample) bool {
		for _, smp := range samples {
			if smp.Member == hosts[old] && smp.Up && smp.ProcessID != oldProcess {
				return true
			}
		}
		return false
	})
	// The samples follow the set's primary: the last one sampled is the
	// one the set has (a busy host's extra election is followed too).
	waitForSamples(t, ctx, s, "the set's primary as the last primary sampled", func(samples []store.Sample) bool {
		last := ""
		for _, smp := range samples {
			if smp.Up && smp.Primary {
				last = smp.Member
			}
		}
		p := rs.Primary()
		return p >= 0 && last == hosts[p]
	})
	stop()
	<-done

	samples := s.Samples()
	// One failover at least; on a busy host starved heartbeats can cause
	// another election, which the sampler rightly counts.
	if n := metric.PrimaryChanges(samples); n < 1 {
		t.Errorf("primary changes = %d, want the failover", n)
	}
	if n := metric.RestartCount(samples); n != 1 {
		t.Errorf("restarts = %d, want 1 (the killed member came back as a new process)", n)
	}
	if len(metric.PrimaryGauge(samples, "read.totalTickets")) == 0 {
		t.Error("no primary series")
	}
}

// waitForSamples waits until the sampler's samples satisfy seen, checking
// as samples arrive, until ctx ends (then the test fails saying what was
// awaited).
func waitForSamples(t *testing.T, ctx context.Context, s *Sampler, what string, seen func([]store.Sample) bool) {
	t.Helper()
	for !seen(s.Samples()) {
		select {
		case <-ctx.Done():
			t.Fatalf("never sampled %s (%d samples)", what, len(s.Samples()))
		case <-time.After(s.Interval):
		}
	}
}

// The census counts each op's tracked bytes where $currentOp shows it: a
// queued op in the low-priority queue when it was deprioritized, in the
// normal-priority queue otherwise, a running op as running, and an idle
// cursor (listed with idleCursors: true) apart from the operations.
func TestCensusCountsTrackedBytesByQueue(t *testing.T) {
	queue := bson.D{{Key: "name", Value: "execution"}, {Key: "timeQueuedMicros", Value: int64(0)}}
	docs := []bson.D{
		{{Key: "op", Value: "command"}, {Key: "active", Value: true}, {Key: "inUseTrackedMemBytes", Value: int64(30 << 20)}, {Key: "currentQueue", Value: queue}, {Key: "priorityLowered", Value: true}, {Key: "stage", Value: "$setWindowFields"}},
		{{Key: "op", Value: "getmore"}, {Key: "active", Value: true}, {Key: "inUseTrackedMemBytes", Value: int64(20 << 20)}, {Key: "currentQueue", Value: queue}, {Key: "priorityLowered", Value: true}},
		{{Key: "op", Value: "command"}, {Key: "active", Value: true}, {Key: "inUseTrackedMemBytes", Value: int32(5 << 20)}, {Key: "currentQueue", Value: queue}},
		{{Key: "op", Value: "command"}, {Key: "active", Value: true}, {Key: "inUseTrackedMemBytes", Value: int64(7 << 20)}, {Key: "currentQueue", Value: nil}},
		{{Key: "type", Value: "idleCursor"}, {Key: "inUseTrackedMemBytes", Value: int64(11 << 20)}, {Key: "cursor", Value: bson.D{{Key: "cursorId", Value: int64(9)}}}},
	}
	var ops []CensusOp
	for _, d := range docs {
		o, ok := censusOp(doc(t, d))
		if !ok {
			t.Fatalf("%v: not counted", d)
		}
		ops = append(ops, o)
	}
	values := map[string]float64{}
	AddCensus(values, ops)
	want := map[string]float64{CensusQueued: 3, CensusRunning: 1, CensusTrackedBytes: 62 << 20,
		store.CensusTrackedField(store.QueueLowPriority): 50 << 20, store.CensusTrackedField(store.QueueNormalPriority): 5 << 20,
		store.CensusTrackedField(store.QueueRunning): 7 << 20, store.CensusTrackedField(store.QueueIdleCursors): 11 << 20,
		CensusStagePrefix + "$setWindowFields": 1}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("%s = %v, want %v", k, values[k], v)
		}
	}
}

// The census's $currentOp (idle cursors included, its $match an $or) is
// one mongosim answers: the sampler's census is never silently empty, and
// a storm query's cursor between getMores is counted as an idle cursor
// holding its buffer.
func TestCensusPipelineRunsOnMongosim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	p, err := rs.WaitForPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + rs.Hosts()[p] + "/?directConnection=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	coll := c.Database("storm").Collection("events")
	stormtest.LoadData(t, ctx, coll)
	cur, err := stormtest.Open(ctx, coll, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(context.Background())
	ops, err := censusOps(ctx, c)
	if err != nil {
		t.Fatalf("census: %v", err)
	}
	values := map[string]float64{}
	AddCensus(values, ops)
	if got := values[store.CensusTrackedField(store.QueueIdleCursors)]; got <= 0 {
		t.Errorf("an open storm cursor between getMores: census tracked bytes in idle cursors %v, want its buffer (%d ops counted)", got, len(ops))
	}
}
