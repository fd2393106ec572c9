package collect

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
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

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRatesUseRealTimestampsAndSurviveRestarts(t *testing.T) {
	s := []Sample{
		{At: at(0), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 100, "uptimeMillis": 1000}},
		{At: at(1), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 110, "uptimeMillis": 2000}},
		{At: at(3), Member: "a", Up: true, ProcessID: "p1", Values: map[string]float64{"read.low.canceled": 150, "uptimeMillis": 4000}}, // a late sample: 2 s
		{At: at(4), Member: "a", Up: false}, // down: a gap
		{At: at(6), Member: "a", Up: true, ProcessID: "p2", Values: map[string]float64{"read.low.canceled": 9, "uptimeMillis": 500}}, // restarted
		{At: at(7), Member: "a", Up: true, ProcessID: "p2", Values: map[string]float64{"read.low.canceled": 19, "uptimeMillis": 1500}},
	}
	got := Rates(s, "read.low.canceled")
	want := []Point{{at(1), 10}, {at(3), 20}, {at(6), 3}, {at(7), 10}}
	if len(got) != len(want) {
		t.Fatalf("rates %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || !near(got[i].Value, want[i].Value) {
			t.Errorf("rate %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestPrimaryRatesAcrossAChangeOfPrimary(t *testing.T) {
	// a is primary until it dies after t=2; b, whose own counter is far
	// larger, is primary from t=3. The series must never take b's total
	// minus a's as a rate.
	var s []Sample
	for i, v := range []float64{0, 50, 100} {
		s = append(s, Sample{At: at(float64(i)), Member: "a", Up: true, Primary: true, ProcessID: "pa", Values: map[string]float64{"read.low.removedFromQueue": v, "read.low.canceled": v / 2}})
	}
	for i, v := range []float64{10000, 10000, 10000, 10060, 10120} {
		s = append(s, Sample{At: at(float64(i)), Member: "b", Up: true, Primary: i >= 3, ProcessID: "pb", Values: map[string]float64{"read.low.removedFromQueue": v, "read.low.canceled": v - 10000}})
	}
	s = append(s, Sample{At: at(3), Member: "a", Up: false}, Sample{At: at(4), Member: "a", Up: false})
	removed := PrimaryRates(s, "read.low.removedFromQueue")
	want := []float64{50, 50, 60, 60}
	if len(removed) != len(want) {
		t.Fatalf("primary rates %v", removed)
	}
	for i, w := range want {
		if !near(removed[i].Value, w) {
			t.Errorf("primary rate %d = %v, want %v", i, removed[i].Value, w)
		}
	}
	adm, kills := Departures(s)
	// a: 50 departures/s, 25 of them kills; b: 60/s, all kills.
	if !near(adm[0].Value, 25) || !near(kills[0].Value, 25) || !near(adm[2].Value, 0) || !near(kills[2].Value, 60) {
		t.Errorf("departures split: admissions %v kills %v", adm, kills)
	}
	if g := PrimaryGauge(s, "read.low.canceled"); len(g) != 5 {
		t.Errorf("primary gauge has %d points, want one per second with a primary", len(g))
	}
}

func TestSamplerSeesAGapAFailoverAndARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{ElectionTimeout: time.Second, HeartbeatInterval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	s := &Sampler{Members: rs.Hosts(), Interval: 100 * time.Millisecond}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(sctx); close(done) }()
	time.Sleep(500 * time.Millisecond)
	old := rs.Primary()
	rs.Kill(old)
	if _, err := rs.WaitForPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := rs.Restart(old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	stop()
	<-done
	samples := s.Samples()
	gaps := 0
	for _, smp := range samples {
		if smp.Member == rs.Hosts()[old] && !smp.Up {
			gaps++
		}
	}
	if gaps == 0 {
		t.Error("no gap sampled while a member was down")
	}
	if n := PrimaryChanges(samples); n != 1 {
		t.Errorf("primary changes = %d, want 1", n)
	}
	if n := Restarts(samples); n != 1 {
		t.Errorf("restarts = %d, want 1 (the killed member came back as a new process)", n)
	}
	if len(PrimaryGauge(samples, "read.totalTickets")) == 0 {
		t.Error("no primary series")
	}
}

func TestUnreachableCountsOnlyTimeWithEveryMemberDown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []Sample{
		{At: at(0), Member: "a", Up: true}, {At: at(0.1), Member: "b", Up: true},
		{At: at(1), Member: "a", Up: false}, {At: at(1.1), Member: "b", Up: true}, // one down: not unreachable
		{At: at(2), Member: "b", Up: false}, // from here both down
		{At: at(3), Member: "a", Up: false}, {At: at(3.1), Member: "b", Up: false},
		{At: at(4.5), Member: "a", Up: true}, {At: at(5), Member: "b", Up: true}, // 2.5 s
		{At: at(6), Member: "a", Up: false}, {At: at(6.1), Member: "b", Up: false}, // down to the end
		{At: at(7.1), Member: "a", Up: false}, // 1 s
	}
	// Out of order on purpose: samples of concurrent members arrive unordered.
	slices.Reverse(samples)
	if got, want := Unreachable(samples), 3500*time.Millisecond; got != want {
		t.Fatalf("Unreachable = %v, want %v", got, want)
	}
	if got := Unreachable(samples[:0]); got != 0 {
		t.Fatalf("no samples: %v", got)
	}
}
