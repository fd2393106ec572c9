package workload

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/store"
)

// peakHeap samples HeapAlloc until the returned stop is called, which
// reports the peak's rise above where it started.
func peakHeap() (stop func() int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return int64(peak - base)
	}
}

// A merge_partial_write trial at the largest source its budget accepts
// (one op, nothing shed, so the op writes the whole source) finishes
// within the memory its model gives it; cancelled while an op runs, it
// stops, and its deployment shuts down, promptly. Before, the op's
// $setWindowFields recomputed its unbounded window for every document
// (n² at 1,000,000 documents: unbounded time at 2.4 GB), and nothing
// interrupted it, so the teardown waited for it.
func TestMergeTrialAtItsLargestFinishesAndACancelStopsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("a merge trial of ~190,000 documents on a 3-member set")
	}
	rs, err := mongosim.StartReplicaSet(context.Background(), mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			rs.Close()
		}
	})
	spec := DefaultMergePartialWrite()
	spec.Ops, spec.SourceDocs = 1, LargestMergeSource(1)
	if err := (Spec{Name: "largest", Kind: KindMergePartialWrite, Merge: &spec}).Validate(); err != nil {
		t.Fatalf("the largest source is refused: %v", err)
	}
	d := &MergeDriver{Spec: spec, URI: rs.URI(), Members: rs.Hosts()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	rise := peakHeap()
	res, err := d.Run(ctx)
	grew := rise()
	if err != nil {
		t.Fatalf("the largest trial: %v", err)
	}
	if len(res.Ops) != 1 || res.Ops[0].Outcome != store.Completed || res.Ops[0].Written != int64(spec.SourceDocs) {
		t.Fatalf("the largest trial's op: %+v, want it completed with %d documents written", res.Ops, spec.SourceDocs)
	}
	t.Logf("%d source documents: the heap rose %d MiB, the model says %d MiB", spec.SourceDocs, grew>>20, spec.TrialBytes()>>20)
	if grew > spec.TrialBytes() {
		t.Errorf("the trial's heap rose %d MiB, over the %d MiB its model gives it", grew>>20, spec.TrialBytes()>>20)
	}

	// Cancelled while its op runs (its $merge is in currentOp), the trial
	// stops and the members shut down. A trial whose op ended before a
	// poll saw it, or between the poll and the cancel (a busy machine can
	// stretch either gap past a short op), ran to its end: it proves
	// nothing either way, so it is run again, a few times at most.
	const deadline = 2 * time.Minute // generous: both wait for one interrupt check
	for attempt := 1; ; attempt++ {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		var early store.MergeRun
		go func() {
			r, err := d.Run(runCtx)
			early = r
			done <- err
		}()
		ended, err := waitForMergeOp(t, ctx, rs, done)
		if !ended {
			cancel()
			select {
			case err = <-done:
			case <-time.After(deadline):
				t.Fatalf("the trial still ran %v after its cancel", deadline)
			}
			if errors.Is(err, context.Canceled) {
				break
			}
			if err != nil {
				t.Fatalf("the cancelled trial: %v, want context.Canceled", err)
			}
		}
		cancel()
		t.Logf("attempt %d: the trial ran to its end (%v, ops %+v) before the cancel reached its op", attempt, err, early.Ops)
		if attempt == 3 {
			t.Fatalf("in %d attempts the trial ran to its end before the cancel reached its op", attempt)
		}
	}
	shut := make(chan struct{})
	go func() { rs.Close(); close(shut) }()
	closed = true
	select {
	case <-shut:
	case <-time.After(deadline):
		t.Fatalf("the members still shut down %v after the cancel", deadline)
	}
}

// waitForMergeOp waits until a member runs the merge workload's
// aggregate with its $merge (not the harness's count of the source, also
// an aggregate on it), or until the trial ends first (ended, with its error): a
// trial that failed at once must not leave the test polling until its
// deadline.
func waitForMergeOp(t *testing.T, ctx context.Context, rs *mongosim.ReplicaSet, done <-chan error) (ended bool, err error) {
	t.Helper()
	for ctx.Err() == nil {
		select {
		case err := <-done:
			return true, err
		default:
		}
		for _, h := range rs.Hosts() {
			m, err := mongo.Connect(options.Client().ApplyURI(rs.URI()).SetHosts([]string{h}).SetDirect(true))
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1},
				{Key: "appName", Value: DefaultMergePartialWrite().AppName}, {Key: "command.aggregate", Value: "merge_source"},
				{Key: "command.pipeline.$merge", Value: bson.D{{Key: "$exists", Value: true}}}}).Raw()
			_ = m.Disconnect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ops, _ := res.Lookup("inprog").Array().Values(); len(ops) > 0 {
				return false, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the merge op never showed in currentOp")
	return false, nil
}
