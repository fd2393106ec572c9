package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

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
	var sem chan struct{}
	if o.MaxInFlight > 0 {
		sem = make(chan struct{}, o.MaxInFlight)
	}
	var mu sync.Mutex
	var results []Result
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for next := start; next.Before(end); next = next.Add(gap()) {
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				wg.Wait()
				return results
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			break
		}
		scheduled := next
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return results
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			started := time.Now()
			err := op(ctx, scheduled)
			done := time.Now()
			mu.Lock()
			results = append(results, Result{Scheduled: scheduled, Lag: started.Sub(scheduled), Latency: done.Sub(scheduled), Err: err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

// Outcome classifies a storm operation's result as DESIGN.md's metrics
// count it.
type Outcome string

const (
	Completed Outcome = "completed"
	Shed      Outcome = "shed"   // QueryMemoryLimitExceeded
	Killed    Outcome = "killed" // Interrupted (killOp)
	Failed    Outcome = "failed" // anything else
)

// ClassifyCode is the outcome of an operation that failed with the named
// server error.
func ClassifyCode(name string) Outcome {
	switch name {
	case "":
		return Completed
	case "QueryMemoryLimitExceeded":
		return Shed
	case "Interrupted":
		return Killed
	}
	return Failed
}

// Classify returns an operation's outcome and, for failures, the server's
// code name (or the client-side error's kind). QueryMemoryLimitExceeded is
// matched by name: its number is not settled across builds.
func Classify(err error) (Outcome, string) {
	if err == nil {
		return Completed, ""
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		if ce.Code == 11601 {
			ce.Name = "Interrupted"
		}
		if ce.Name != "" {
			return ClassifyCode(ce.Name), ce.Name
		}
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return Failed, "WriteError"
	}
	switch { // a deadline that cut a read short is a timeout, not a network fault
	case mongo.IsTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return Failed, "Timeout"
	case mongo.IsNetworkError(err):
		return Failed, "NetworkError"
	case errors.Is(err, mongo.ErrClientDisconnected):
		return Failed, "ClientDisconnected"
	}
	return Failed, "ClientError"
}
