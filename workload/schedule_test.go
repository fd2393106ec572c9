package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

func TestOpenLoopKeepsItsScheduleWhileTheServerStalls(t *testing.T) {
	// The "server" stalls for a second from the 10th operation on: a
	// closed-loop client would stop sending; the open loop keeps starting
	// operations on schedule, and their latency includes the stall.
	var n atomic.Int32
	// A long stall and bounds in proportion to it: a closed loop would
	// start the stalled ops a whole stall late, while scheduling delay on
	// a busy machine stays far below half of it.
	const stall = time.Second
	var stallUntil atomic.Int64 // unix nanos; 0: no stall yet
	op := func(ctx context.Context, scheduled time.Time) error {
		if n.Add(1) == 10 {
			stallUntil.Store(time.Now().Add(stall).UnixNano())
		}
		if u := stallUntil.Load(); u != 0 {
			time.Sleep(time.Until(time.Unix(0, u)))
		}
		return nil
	}
	start := time.Now().Add(20 * time.Millisecond)
	res := OpenLoop{Rate: 100}.Run(context.Background(), start, start.Add(time.Second), op)
	if len(res) < 95 || len(res) > 101 {
		t.Fatalf("%d operations in 1 s at 100/s", len(res))
	}
	var maxLag, maxLatency time.Duration
	for _, r := range res {
		maxLag = max(maxLag, r.Lag)
		maxLatency = max(maxLatency, r.Latency)
	}
	if maxLag > stall/2 {
		t.Errorf("an operation started %v late: the schedule slipped during the %v stall", maxLag, stall)
	}
	if maxLatency < stall*8/10 {
		t.Errorf("max latency %v: the stall must show in latency measured from the scheduled start", maxLatency)
	}
}

func TestOpenLoopCountsQueueingUnderACapFromTheSlot(t *testing.T) {
	op := func(ctx context.Context, scheduled time.Time) error { time.Sleep(100 * time.Millisecond); return nil }
	start := time.Now().Add(10 * time.Millisecond)
	res := OpenLoop{Rate: 50, MaxInFlight: 2}.Run(context.Background(), start, start.Add(200*time.Millisecond), op)
	var worst time.Duration
	for _, r := range res {
		worst = max(worst, r.Latency)
	}
	// 10 operations through 2 slots of 100 ms: the last, scheduled at
	// 180 ms, starts at ~420 ms and ends at ~520 ms: ~340 ms from its slot,
	// against 100 ms for an operation that did not wait.
	if len(res) != 10 || worst < 300*time.Millisecond {
		t.Fatalf("%d results, worst latency %v; an operation that could not start on time must count its wait", len(res), worst)
	}
}

func TestPoissonScheduleIsSeeded(t *testing.T) {
	// The gaps themselves are deterministic for a seed.
	a := OpenLoop{Rate: 10, Poisson: true, Seed: 7}
	b := OpenLoop{Rate: 10, Poisson: true, Seed: 7}
	var ra, rb []time.Duration
	for _, o := range []struct {
		l   OpenLoop
		out *[]time.Duration
	}{{a, &ra}, {b, &rb}} {
		start := time.Now()
		res := o.l.Run(context.Background(), start, start.Add(300*time.Millisecond), func(context.Context, time.Time) error { return nil })
		for _, r := range res {
			*o.out = append(*o.out, r.Scheduled.Sub(start))
		}
	}
	if len(ra) != len(rb) || len(ra) == 0 {
		t.Fatalf("same seed, %d vs %d operations", len(ra), len(rb))
	}
	for i := range ra {
		if d := ra[i] - rb[i]; d > 2*time.Millisecond || d < -2*time.Millisecond {
			t.Fatalf("same seed, operation %d scheduled at %v vs %v", i, ra[i], rb[i])
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want store.Outcome
		name string
	}{
		{nil, store.Completed, ""},
		{mongo.CommandError{Code: 464, Name: "QueryMemoryLimitExceeded"}, store.Shed, "QueryMemoryLimitExceeded"},
		{mongo.CommandError{Code: 9999, Name: "QueryMemoryLimitExceeded"}, store.Shed, "QueryMemoryLimitExceeded"},
		{mongo.CommandError{Code: 11601, Name: "Interrupted"}, store.Killed, "Interrupted"},
		{mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, store.Failed, "NotWritablePrimary"},
		{context.DeadlineExceeded, store.Failed, "Timeout"},
		{mongo.CommandError{Code: 238, Name: "NotImplemented"}, store.Unsupported, "NotImplemented"},
		{mongo.CommandError{Code: 238}, store.Unsupported, "NotImplemented"},
		{mongo.CommandError{Code: 59, Name: "CommandNotFound"}, store.Unsupported, "CommandNotFound"},
		{mongo.CommandError{Code: 168, Name: "InvalidPipelineOperator"}, store.Unsupported, "InvalidPipelineOperator"},
		{mongo.CommandError{Code: 40324, Name: "Location40324"}, store.Unsupported, "Location40324"},
		// What another implementation answers for what it cannot run.
		{mongo.CommandError{Code: 72, Name: "InvalidOptions"}, store.Unsupported, "InvalidOptions"},
		{mongo.CommandError{Code: 72}, store.Unsupported, "InvalidOptions"},
		{mongo.CommandError{Code: 9}, store.Unsupported, "FailedToParse"},
		{mongo.CommandError{Code: 15952}, store.Unsupported, "Location15952"},
		// Overload and kills stay outcomes.
		{mongo.CommandError{Code: 262, Name: "ExceededTimeLimit"}, store.Failed, "ExceededTimeLimit"},
		{mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, store.Failed, "MaxTimeMSExpired"},
		{mongo.CommandError{Code: 11601}, store.Killed, "Interrupted"},
		{trialEnded{context.DeadlineExceeded}, store.Unfinished, store.TrialEnded},
		{fmt.Errorf("aggregate: %w", trialEnded{mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}}), store.Unfinished, store.TrialEnded},
		{errors.New("boom"), store.Failed, "ClientError"},
	} {
		got, name := Classify(tc.err)
		if got != tc.want || name != tc.name {
			t.Errorf("Classify(%v) = %s %q, want %s %q", tc.err, got, name, tc.want, tc.name)
		}
	}
}

// A capped run keeps each operation's own slot and error: the workers
// hold them in their own form until the run ends (schedule.go's record).
func TestOpenLoopUnderACapKeepsEachSlotAndError(t *testing.T) {
	start := time.Now().Add(5 * time.Millisecond)
	every := 2 * time.Millisecond
	failing := errors.New("odd slot")
	op := func(ctx context.Context, scheduled time.Time) error {
		if (scheduled.Sub(start)/every)%2 == 1 {
			return fmt.Errorf("slot %v: %w", scheduled.Sub(start), failing)
		}
		return nil
	}
	for _, poisson := range []bool{false, true} {
		res := OpenLoop{Rate: 500, MaxInFlight: 3, Poisson: poisson, Seed: 1}.Run(context.Background(), start, start.Add(100*time.Millisecond), op)
		if len(res) == 0 {
			t.Fatalf("poisson %v: no results", poisson)
		}
		seen := map[time.Time]bool{}
		for _, r := range res {
			if seen[r.Scheduled] {
				t.Fatalf("poisson %v: slot %v twice", poisson, r.Scheduled.Sub(start))
			}
			seen[r.Scheduled] = true
			odd := (r.Scheduled.Sub(start)/every)%2 == 1
			if odd != (r.Err != nil) {
				t.Fatalf("poisson %v: slot %v has error %v", poisson, r.Scheduled.Sub(start), r.Err)
			}
			if r.Err != nil && r.Err.Error() != fmt.Sprintf("slot %v: odd slot", r.Scheduled.Sub(start)) {
				t.Fatalf("poisson %v: slot %v carries another op's error %q", poisson, r.Scheduled.Sub(start), r.Err)
			}
			if r.Scheduled.Before(start) || !r.Scheduled.Before(start.Add(100*time.Millisecond)) || r.Latency < r.Lag {
				t.Fatalf("poisson %v: slot %v, lag %v, latency %v", poisson, r.Scheduled.Sub(start), r.Lag, r.Latency)
			}
		}
		if !poisson && len(res) != 50 {
			t.Fatalf("%d results at 500/s over 100 ms, want 50", len(res))
		}
	}
}

// TestOpenLoopNeverStartsBeforeItsSlot: the last stretch of each wait is
// the fine sleep (a few ms), so an operation that started before its slot
// means the fine sleep returned early — a negative start lag that would
// flatter every latency. Late is allowed: load makes it so.
func TestOpenLoopNeverStartsBeforeItsSlot(t *testing.T) {
	op := func(ctx context.Context, scheduled time.Time) error { return nil }
	for _, o := range []OpenLoop{{Rate: 2000}, {Rate: 200, MaxInFlight: 4}} {
		start := time.Now().Add(5 * time.Millisecond)
		res := o.Run(context.Background(), start, start.Add(100*time.Millisecond), op)
		if len(res) == 0 {
			t.Fatalf("%+v: no operations in 100 ms", o)
		}
		for _, r := range res {
			if r.Lag < 0 {
				t.Fatalf("%+v: an operation started %v before its slot", o, -r.Lag)
			}
		}
	}
}
