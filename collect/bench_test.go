package collect

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/benchhost"
	"github.com/qmlsab/qmlsab/internal/stormtest"
)

// cpuMillisPerSecond is the CPU a window used per second of it: one
// reading of the running total after the window minus one before, never
// a difference of two windows, so it cannot be negative.
func cpuMillisPerSecond(before, after time.Duration, window time.Duration) float64 {
	return float64(after-before) / float64(time.Millisecond) / window.Seconds()
}

func TestCollectorCostCannotBeNegative(t *testing.T) {
	c0 := benchhost.ProcessCPU()
	time.Sleep(20 * time.Millisecond)
	c1 := benchhost.ProcessCPU()
	if c1 < c0 {
		t.Fatalf("process CPU went backwards: %v then %v", c0, c1)
	}
	if v := cpuMillisPerSecond(c0, c1, 20*time.Millisecond); v < 0 {
		t.Fatalf("an idle window cost %v ms/s", v)
	}
}

// outOfProcessSet builds cmd/mongosim and starts a 3-member replica set of
// it, each member its own process, so that nothing the set does runs in
// this process.
func outOfProcessSet(b *testing.B) []string {
	bin, err := stormtest.BuildMongosim(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var hosts []string
	for range 3 {
		hosts = append(hosts, stormtest.Launch(b, bin, "--replSet", "rs0"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	members := bson.A{}
	for i, h := range hosts {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[0] + "/?directConnection=true"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members}}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		b.Fatalf("replSetInitiate: %v", err)
	}
	return hosts
}

// BenchmarkCollectorCPU measures what sampling 3 members at 1 Hz costs,
// the $currentOp census included as a run samples: the members are
// cmd/mongosim processes of their own, so this process's CPU over a
// sampling window (getrusage after minus before) is the sampler's alone —
// its client, its connections and the Go runtime under them. No idle
// window is subtracted, so the figure is never negative. BENCHWINDOW
// (seconds, default 5) sets the window; make bench repeats it.
func BenchmarkCollectorCPU(b *testing.B) {
	window := 5 * time.Second
	if s, err := strconv.ParseFloat(os.Getenv("BENCHWINDOW"), 64); err == nil && s > 0 {
		window = time.Duration(s * float64(time.Second))
	}
	hosts := outOfProcessSet(b)
	var cpu time.Duration
	var samples, windows int
	for b.Loop() {
		s := &Sampler{Members: hosts, Interval: time.Second, Census: true}
		ctx, stop := context.WithTimeout(context.Background(), window)
		c0 := benchhost.ProcessCPU()
		s.Run(ctx)
		cpu += benchhost.ProcessCPU() - c0
		stop()
		samples += len(s.Samples())
		windows++
	}
	b.ReportMetric(cpuMillisPerSecond(0, cpu, window*time.Duration(windows)), "3-members-1Hz-cpu-ms/s")
	b.ReportMetric(float64(samples)/float64(windows), "samples/window")
}
