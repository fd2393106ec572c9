package parallel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// deadline bounds a test that would otherwise hang on a broken Map; it
// is generous, since a loaded machine may be slow.
const deadline = time.Minute

// Every call runs once, its result lands at its index whatever the order
// the calls finish in, and exactly limit calls run at once: the first
// limit calls wait for one another (so all limit are running together)
// and no call beyond them starts before one of them returns.
func TestMapRunsEveryCallWithAtMostLimitAtOnce(t *testing.T) {
	const n, limit = 40, 3
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var running, most atomic.Int64
	var calls [n]atomic.Int64
	firstWave := make(chan struct{})
	var arrived atomic.Int64
	got, err := Map(ctx, n, limit, func(ctx context.Context, i int) (int, error) {
		calls[i].Add(1)
		now := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		if i < limit {
			if arrived.Add(1) == limit {
				close(firstWave)
			}
			select {
			case <-firstWave:
			case <-ctx.Done():
				return 0, errors.New("the first calls never ran together")
			}
		}
		return i * i, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got[i] != i*i || calls[i].Load() != 1 {
			t.Errorf("call %d: result %d, ran %d times; want %d, once", i, got[i], calls[i].Load(), i*i)
		}
	}
	if m := most.Load(); m != limit {
		t.Errorf("%d calls ran at once, want %d", m, limit)
	}
}

// The first failure is Map's error, no call starts after it, and the
// calls already running are told (their context is cancelled) and waited
// for.
func TestMapStopsStartingCallsAtTheFirstError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	boom := errors.New("boom")
	var mu sync.Mutex
	var ran []int
	var waitedFor atomic.Bool
	_, err := Map(ctx, 100, 2, func(gctx context.Context, i int) (struct{}, error) {
		mu.Lock()
		ran = append(ran, i)
		mu.Unlock()
		if i == 0 {
			return struct{}{}, boom
		}
		select {
		case <-gctx.Done(): // told of the failure
			waitedFor.Store(true)
			return struct{}{}, gctx.Err()
		case <-ctx.Done():
			return struct{}{}, errors.New("a running call was not told of the failure")
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the first call's %v", err, boom)
	}
	for _, i := range ran {
		if i >= 2 {
			t.Errorf("call %d started after the failure (calls run: %v)", i, ran)
		}
	}
	if len(ran) == 2 && !waitedFor.Load() {
		t.Error("Map returned before the running call had finished")
	}
}

// When ctx is done, no further call starts and Map says why; the calls
// that had finished keep their results.
func TestMapStopsStartingCallsWhenTheContextIsDone(t *testing.T) {
	parent, stop := context.WithTimeout(context.Background(), deadline)
	defer stop()
	ctx, cancel := context.WithCancel(parent)
	var started atomic.Int64
	got, err := Map(ctx, 50, 1, func(_ context.Context, i int) (int, error) {
		started.Add(1)
		if i == 4 {
			cancel() // a user's Ctrl-C while call 4 runs
		}
		return i + 1, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if s := started.Load(); s != 5 {
		t.Errorf("%d calls started, want 5 (none after the cancellation)", s)
	}
	for i := range 5 {
		if got[i] != i+1 {
			t.Errorf("finished call %d lost its result: %d", i, got[i])
		}
	}
}

// A call on a context of its own (a trial writing its results) runs to
// its end after another fails; only the starting of calls stops.
func TestMapLetsACallOnItsOwnContextFinish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	boom := errors.New("results disk full")
	started := make(chan struct{})
	var finished atomic.Bool
	_, err := Map(ctx, 10, 2, func(gctx context.Context, i int) (struct{}, error) {
		switch i {
		case 0:
			close(started)
			<-gctx.Done()        // call 1 failed
			finished.Store(true) // and this one carries on, on ctx
			return struct{}{}, ctx.Err()
		case 1:
			<-started
			return struct{}{}, boom
		}
		t.Errorf("call %d started after the failure", i)
		return struct{}{}, nil
	})
	if !errors.Is(err, boom) || !finished.Load() {
		t.Errorf("error %v, call 0 finished %v; want %v and true", err, finished.Load(), boom)
	}
}

// No calls: no results, no error; a limit below 1 is one per CPU.
func TestMapOfNothing(t *testing.T) {
	got, err := Map(context.Background(), 0, 0, func(context.Context, int) (int, error) {
		t.Error("called")
		return 0, nil
	})
	if err != nil || len(got) != 0 {
		t.Errorf("Map of 0 calls = %v, %v", got, err)
	}
	got, err = Map(context.Background(), 7, 0, func(_ context.Context, i int) (int, error) { return i, nil })
	if err != nil || len(got) != 7 || got[6] != 6 {
		t.Errorf("Map with limit 0 = %v, %v", got, err)
	}
}
