// Package parallel runs independent jobs with a bound on how many run at
// once: qmlsab's trial runners (a run's trials, the virtual engine's
// matrix of arms and seeds, a sweep's trials) are each this one loop, on
// golang.org/x/sync/errgroup with SetLimit.
package parallel

import (
	"context"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Map calls fn(ctx, i) for every i in [0, n), at most limit calls at once
// (limit < 1: one per CPU, runtime.GOMAXPROCS(0)), and returns their
// results by index, whatever order they finished in.
//
// The first call to return an error cancels the context the calls are
// given, and no further call starts; Map waits for the calls already
// running and returns that error. When ctx is done before every call has
// started, no further call starts either and Map returns ctx's error. The
// results are complete only when the error is nil: a call that did not
// run, or failed, leaves its zero value.
//
// A call that must finish whatever happens to the others (a trial whose
// results are being written) may run on a context of its own instead of
// the one it is given: a failure then only stops calls from starting.
func Map[T any](ctx context.Context, n, limit int, fn func(ctx context.Context, i int) (T, error)) ([]T, error) {
	if limit < 1 {
		limit = runtime.GOMAXPROCS(0)
	}
	out := make([]T, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	var skipped atomic.Bool
	for i := range n {
		if gctx.Err() != nil {
			skipped.Store(true)
			break
		}
		g.Go(func() error {
			// Go waits for a free slot; a failure or ctx may have come
			// meanwhile.
			if gctx.Err() != nil {
				skipped.Store(true)
				return nil
			}
			v, err := fn(gctx, i)
			if err != nil {
				return err
			}
			out[i] = v
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	if skipped.Load() {
		return out, ctx.Err()
	}
	return out, nil
}
