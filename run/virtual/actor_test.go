package virtual

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/workload"
)

// TestActorCandidatesDecideAsAFullWalk drives a node with storm queries
// until thousands of operations wait, many of them holding tracked
// memory, and checks at several instants, for every policy, several kill
// caps and scopes and a resident size just over and far over the high
// mark, that Decide picks from the actor's candidates exactly what it
// picks from every live operation: the largest-first listing may stop
// early, never change a kill.
func TestActorCandidatesDecideAsAFullWalk(t *testing.T) {
	w := workload.DefaultSpillToDisk()
	// Few tickets and a yield every 200 documents, so queries queue
	// holding their buffers and their cursors' getMores queue too.
	p, err := model.ParamsFrom(map[string]string{"throughputProbingMaxConcurrency": "4", "throughputProbingMinConcurrency": "4",
		"internalQueryExecYieldIterations": "200"})
	if err != nil {
		t.Fatal(err)
	}
	n := model.NewNode(model.DefaultHardware(), p, 5)
	rng := rand.New(rand.NewPCG(5, 9))
	limit := n.Hardware().MemLimitBytes
	checked, holdingSeen := 0, 0
	cursor := int64(0)
	for step := time.Duration(0); step < 6*time.Second && !n.Dead(); step += 20 * time.Millisecond {
		for range 20 {
			q := w.Query(rng)
			cursor++
			rest := &cursorRest{shape: q, left: q.OutputBytes}
			op := &model.Op{Kind: model.KindAggregate, AppName: w.AppName, Eligible: true, CursorID: cursor, Work: p.AggregateWork(q)}
			var next func(model.Outcome)
			next = func(o model.Outcome) { // the client drains the cursor
				if wk, more := rest.next(p); o.Code == 0 && more {
					n.Submit(&model.Op{Kind: model.KindGetMore, AppName: w.AppName, Eligible: true, CursorID: op.CursorID, Work: wk, Done: next})
				}
			}
			op.Done = next
			n.Submit(op)
		}
		n.AdvanceTo(step + 20*time.Millisecond)
		if step%(500*time.Millisecond) != 0 {
			continue
		}
		var all []killop.Op
		holding := 0
		n.Ops(func(op *model.Op) {
			all = append(all, killop.Op{ID: op.ID, AppName: op.AppName, TrackedBytes: op.Tracked(), Queued: op.Queued(),
				LowPriority: op.LowPriority(), Stage: op.Work.Stage, Writes: op.Write})
			if op.Queued() && op.Tracked() > 0 {
				holding++
			}
		})
		holdingSeen = max(holdingSeen, holding)
		for _, policy := range killop.Policies {
			for _, most := range []int{0, 1, 3, 5000} {
				for _, scope := range []killop.Config{{AppName: w.AppName}, {AppName: "someone-else"}, {AnyApp: true}} {
					c := scope
					c.RSSHighPercent, c.Interval, c.MaxKillsPerRound, c.Policy = 70, 100*time.Millisecond, most, policy
					for _, rss := range []int64{limit*70/100 + 1, 2 * limit} {
						want := killop.Decide(c, rss, limit, all)
						got := killop.Decide(c, rss, limit, actorCandidates(n, c, nil))
						if !slices.Equal(got, want) {
							t.Fatalf("at %v, %s, cap %d, scope %+v, rss %d: the candidates decide %d kills, a full walk %d", step, policy, most, scope, rss, len(got), len(want))
						}
						checked++
					}
				}
			}
		}
	}
	if holdingSeen < 200 {
		t.Fatalf("at most %d queued ops held tracked memory; the storm must queue many for the check to mean anything", holdingSeen)
	}
	t.Logf("%d decisions compared; up to %d queued ops held tracked memory", checked, holdingSeen)
}
