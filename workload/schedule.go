package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// OpenLoop schedules operations at fixed or Poisson-distributed start
// times, independent of how long earlier ones take: a stalled server does
// not slow the schedule down, and every latency is measured from the
// operation's scheduled start (no coordinated omission).
type OpenLoop struct {
	Rate    float64 // operations per second
	Poisson bool    // exponential gaps (seeded) instead of fixed ones
	Seed    uint64
	// MaxInFlight caps concurrent operations (0: unbounded); an operation
	// that cannot start on time still counts its latency from its slot.
	MaxInFlight int
}

// Op is one scheduled operation: it runs the work and reports its outcome.
type Op func(ctx context.Context, scheduled time.Time) error

// Result is one operation's measured outcome.
type Result struct {
	Scheduled time.Time
	// Lag is how late the operation started after its scheduled time.
	Lag time.Duration
	// Latency runs from the scheduled time to completion.
	Latency time.Duration
	Err     error
}

// Run schedules ops from start until end (or ctx ends) and returns their
// results once all have finished.
func (o OpenLoop) Run(ctx context.Context, start, end time.Time, op Op) []Result {
	rng := rand.New(rand.NewPCG(o.Seed, 0x0be71))
	gap := func() time.Duration {
		if o.Poisson {
			return time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second))
		}
		return time.Duration(float64(time.Second) / o.Rate)
	}
	runOne := func(scheduled time.Time) Result {
		started := time.Now()
		err := op(ctx, scheduled)
		return Result{Scheduled: scheduled, Lag: started.Sub(scheduled), Latency: time.Since(scheduled), Err: err}
	}
	// sleepUntil waits for a slot; false when ctx ended first. Go's
	// timers wake up to ~1 ms late here (a 300 µs wait woke 0.82 ms late
	// at p50, 1.14 ms at p99), which was most of the start lag at 2,000
	// ops/s; the kernel's nanosleep woke 0.10 ms late at p50 and 0.24 ms
	// at p99. So the timer takes a wait down to the last few milliseconds
	// (it ends early when ctx does) and nanosleep the rest (fineSleep,
	// schedule_linux.go): a thread blocked in the kernel. That cut the
	// p99 from 1.2 to 0.24 ms at 2,000 ops/s for 0.18 of a core more
	// (BenchmarkGenerator/lag-2000: 460 against 275 ms of process CPU a
	// second; the runtime hands a blocked thread's processor to another).
	// Spinning the rest (yielding) cut the p50 to 4 µs but burnt 0.75 of
	// a core, CPU a mongod on the same host would lose.
	sleepUntil := func(timer *time.Timer, at time.Time) bool {
		if d := time.Until(at) - fineWait; d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return false
			case <-timer.C:
			}
		}
		if d := time.Until(at); d > 0 {
			fineSleep(d)
		}
		return ctx.Err() == nil
	}
	if o.MaxInFlight > 0 {
		return o.pooled(start, end, gap, sleepUntil, runOne)
	}
	var mu sync.Mutex
	var results []Result
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for next := start; next.Before(end); next = next.Add(gap()) {
		if !sleepUntil(timer, next) {
			break
		}
		wg.Go(func() {
			r := runOne(next)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

// pooled runs a capped schedule on MaxInFlight workers that take the next
// slot themselves and wait for it: no scheduler goroutine to hand slots
// over, no goroutine per op, no shared results slice. Measured in make
// bench: a goroutine-per-op scheduler with a semaphore reached 80 % of a
// bare driver loop's throughput, a channel hand-off 90 %.
func (o OpenLoop) pooled(start, end time.Time, gap func() time.Duration, sleepUntil func(*time.Timer, time.Time) bool, runOne func(time.Time) Result) []Result {
	var mu sync.Mutex
	next := start
	take := func() (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		t := next
		if !t.Before(end) {
			return t, false
		}
		next = next.Add(gap())
		return t, true
	}
	if !o.Poisson {
		// Fixed slots are start + i·gap: workers claim i with an atomic
		// add instead of a lock (contended locks park goroutines).
		var slot atomic.Int64
		every := gap()
		take = func() (time.Time, bool) {
			t := start.Add(time.Duration(slot.Add(1)-1) * every)
			return t, t.Before(end)
		}
	}
	type worker struct {
		recs []record
		errs []error
	}
	workers := make([]worker, o.MaxInFlight)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			wk := &workers[w]
			for {
				at, ok := take()
				if !ok || !sleepUntil(timer, at) {
					return
				}
				r := runOne(at)
				rec := record{at: r.Scheduled.Sub(start), lag: r.Lag, latency: r.Latency}
				if r.Err != nil {
					wk.errs = append(wk.errs, r.Err)
					rec.err = int32(len(wk.errs))
				}
				wk.recs = append(wk.recs, rec)
			}
		})
	}
	wg.Wait()
	n := 0
	for _, wk := range workers {
		n += len(wk.recs)
	}
	results := make([]Result, 0, n)
	for _, wk := range workers {
		for _, rec := range wk.recs {
			r := Result{Scheduled: start.Add(rec.at), Lag: rec.lag, Latency: rec.latency}
			if rec.err > 0 {
				r.Err = wk.errs[rec.err-1]
			}
			results = append(results, r)
		}
	}
	return results
}

// record is one op's outcome as a pooled worker keeps it until the run
// ends. It holds no pointers (the slot as an offset from the start, the
// error as an index into the worker's errors), so the garbage collector
// neither scans the kept records at each cycle nor makes each append pay a
// write barrier while the workers run. (The generator is sensitive to the
// collector: BenchmarkGenerator measured 84–94 % of the bare loop's
// throughput at the default GOGC and 92–102 % at GOGC=400, in alternating
// runs; whether these records alone close that gap was lost in the noise.)
type record struct {
	at, lag, latency time.Duration
	err              int32 // 1 + its index in the worker's errors; 0: none
}

// unsupportedByCode names the "not implemented" codes (store.UnsupportedCodes)
// for a server that sends a code without its codeName.
var unsupportedByCode = map[int32]string{238: "NotImplemented", 59: "CommandNotFound", 168: "InvalidPipelineOperator",
	40324: "Location40324", 16436: "Location16436", 15952: "Location15952", 72: "InvalidOptions", 9: "FailedToParse"}

// The codes of the driver's own failures, beside the server's code names:
// an operation's client gave up on it (server selection, a connection
// from the pool, the operation's timeout: Timeout), its connection broke
// (the member died under it: NetworkError), or its server's pool was
// cleared while it waited for a connection (PoolCleared). The virtual
// clock's client records the same codes for the same events.
const (
	Timeout      = store.ClientTimeout
	NetworkError = "NetworkError"
	PoolCleared  = "PoolCleared"
)

// trialEnded marks the error of an operation the trial's end cut off.
type trialEnded struct{ err error }

func (e trialEnded) Error() string { return "still running at the trial's end: " + e.err.Error() }
func (e trialEnded) Unwrap() error { return e.err }

// Classify returns an operation's outcome and, for failures, the server's
// code name (or the client-side error's kind). QueryMemoryLimitExceeded is
// matched by name: its number is not settled across builds. A query the
// server does not implement (NotImplemented, CommandNotFound, an unknown
// stage or operator) is store.Unsupported; one the trial's end cut off is
// store.Unfinished with code store.TrialEnded.
func Classify(err error) (store.Outcome, string) {
	if err == nil {
		return store.Completed, ""
	}
	if errors.As(err, new(trialEnded)) {
		return store.Unfinished, store.TrialEnded
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		if ce.Code == 11601 {
			ce.Name = "Interrupted"
		}
		if n, ok := unsupportedByCode[ce.Code]; ok && ce.Name == "" {
			ce.Name = n // a server that sends no codeName
		}
		if ce.Name != "" {
			return store.ClassifyCode(ce.Name), ce.Name
		}
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return store.Failed, "WriteError"
	}
	// The driver's only error with a Retryable method is the one an
	// operation gets when its server's connection pool was cleared (the
	// server failed another operation with a network error) while it
	// waited for a connection, or when it asked for one before the
	// server was seen healthy again.
	var cleared interface{ Retryable() bool }
	if errors.As(err, &cleared) && cleared.Retryable() {
		return store.Failed, PoolCleared
	}
	switch { // a deadline that cut a read short is a timeout, not a network fault
	case mongo.IsTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return store.Failed, store.ClientTimeout
	case mongo.IsNetworkError(err):
		return store.Failed, NetworkError
	case errors.Is(err, mongo.ErrClientDisconnected):
		return store.Failed, "ClientDisconnected"
	}
	return store.Failed, "ClientError"
}
