package workload

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/benchhost"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim"
)

// benchWindow is how long each generator measurement runs (BENCHWINDOW
// overrides, in seconds).
func benchWindow() time.Duration {
	if s, err := strconv.ParseFloat(os.Getenv("BENCHWINDOW"), 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 3 * time.Second
}

// benchServer is an in-process mongosim with one document, through a
// client of its own.
func benchServer(b *testing.B) *mongo.Collection {
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Kill)
	return benchCollection(b, s.Addr())
}

// processServer is benchServer as a cmd/mongosim process of its own: the
// server's work is then not in this process's scheduler, and what is
// measured here is the generator and its client.
func processServer(b *testing.B) *mongo.Collection {
	bin, err := stormtest.BuildMongosim(b.TempDir()) // go build's cache makes a rebuild a link
	if err != nil {
		b.Fatal(err)
	}
	return benchCollection(b, stormtest.Launch(b, bin))
}

func benchCollection(b *testing.B, addr string) *mongo.Collection {
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetMaxPoolSize(64))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Disconnect(context.Background()) })
	coll := c.Database("bench").Collection("c")
	if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}); err != nil {
		b.Fatal(err)
	}
	return coll
}

// BenchmarkGenerator measures the open-loop generator against mongosim
// beside a bare driver loop on the same op (find by _id):
//
//   - bare-loop: 16 goroutines issuing the op back to back;
//   - open-loop: the scheduler offered far more than the server can take,
//     16 in flight, so its throughput is the driver's minus the
//     generator's overhead;
//   - lag-2000: 2,000 scheduled ops/s, reporting how late ops start,
//     against cmd/mongosim as a process of its own (the two above run it
//     in this process: their ratio cancels it out).
//
// Both take one figure per repetition from several windows (-benchtime
// Nx: N windows of BENCHWINDOW seconds), robust to one window that the
// host stalled: throughput the median of the pairs' ratios, lag the
// median of the windows' p99.
//
// make bench prints open-loop as a share of bare-loop and lag-2000's p99.
func BenchmarkGenerator(b *testing.B) {
	const inFlight = 16
	op := func(coll *mongo.Collection) Op {
		return func(ctx context.Context, _ time.Time) error {
			return coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
		}
	}
	// The bare loop and the generator run side by side on the same server
	// and client, the generator doing as many ops as the bare loop managed
	// in its window; their order alternates (ABBA), because whichever runs
	// second pays for the first one's garbage.
	b.Run("throughput", func(b *testing.B) {
		coll := benchServer(b)
		f := op(coll)
		bare := func() (int64, float64) {
			var n atomic.Int64
			start := time.Now()
			end := start.Add(benchWindow())
			var wg sync.WaitGroup
			for range inFlight {
				wg.Go(func() {
					for time.Now().Before(end) {
						if err := f(context.Background(), time.Time{}); err != nil {
							b.Error(err)
							return
						}
						n.Add(1)
					}
				})
			}
			wg.Wait()
			return n.Load(), float64(n.Load()) / time.Since(start).Seconds()
		}
		generator := func(n int64) float64 {
			// All slots fall due at once (a rate far above the server's),
			// so ops run back to back, 16 at a time, as in the bare loop.
			const rate = 1e9
			start := time.Now()
			res := OpenLoop{Rate: rate, MaxInFlight: inFlight}.Run(context.Background(), start,
				start.Add(time.Duration(float64(n)/rate*float64(time.Second))), f)
			el := time.Since(start)
			for _, r := range res {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			return float64(len(res)) / el.Seconds()
		}
		n, _ := bare() // warm up, and size the generator's first run
		// Each pair's ratio is taken within the pair (the bare loop and the
		// generator a window apart, in alternating order), and the figure
		// is the median of the pairs' ratios: a pair that a stall of the
		// machine hit moves it by one rank, not by its size, as it would
		// in a ratio of the windows' means.
		var bareRate, genRate, ratio []float64
		i := 0
		for b.Loop() {
			var r, g float64
			if i%2 == 0 {
				n, r = bare()
				g = generator(n)
			} else {
				g = generator(n)
				n, r = bare()
			}
			bareRate, genRate, ratio = append(bareRate, r), append(genRate, g), append(ratio, 100*g/r)
			i++
		}
		b.ReportMetric(metric.Median(bareRate), "bare-ops/s")
		b.ReportMetric(metric.Median(genRate), "generator-ops/s")
		b.ReportMetric(metric.Median(ratio), "generator-%-of-bare")
	})
	b.Run("lag-2000", func(b *testing.B) {
		// The server is a process of its own: in one process its work
		// (a find, the wire, the driver's other end) shares the Go
		// scheduler's two Ps with the generator, and a timer falls due
		// while both run the server's goroutines; a slot's start lag is
		// the generator's, and an operator's server is another process.
		coll := processServer(b)
		// The figure is a typical window's p99: each window's p99, then the
		// median over the repetition's windows. A stall of the host (another
		// tenant taking the CPU for tens of milliseconds) makes a hundred
		// ops late at once and owns the p99 of the window it falls in; the
		// median over windows keeps it from owning the repetition's figure.
		// The pooled p99 of all windows is reported beside it.
		var all, windowP99 []float64
		var cpu time.Duration
		var secs float64
		steal := benchhost.ReadSteal() // the host's share of the windows (make bench sets a stolen-from repetition aside)
		for b.Loop() {
			start := time.Now().Add(50 * time.Millisecond)
			c0 := benchhost.ProcessCPU()
			res := OpenLoop{Rate: 2000}.Run(context.Background(), start, start.Add(benchWindow()), op(coll))
			cpu += benchhost.ProcessCPU() - c0
			secs += time.Since(start).Seconds()
			lags := make([]float64, 0, len(res))
			for _, r := range res {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				lags = append(lags, float64(r.Lag)/float64(time.Millisecond))
			}
			slices.Sort(lags)
			windowP99 = append(windowP99, lags[len(lags)*99/100])
			all = append(all, lags...)
		}
		slices.Sort(all)
		b.ReportMetric(float64(len(all))/(benchWindow().Seconds()*float64(b.N)), "ops/s")
		b.ReportMetric(all[len(all)/2], "p50-lag-ms")
		b.ReportMetric(metric.Median(windowP99), "p99-lag-ms")
		b.ReportMetric(all[len(all)*99/100], "pooled-p99-lag-ms")
		b.ReportMetric(float64(cpu)/float64(time.Millisecond)/secs, "process-cpu-ms/s")
		steal.Report(b)
	})
}
