package virtual

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/race"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// A new primary receives what the storm's connection pool lets through,
// not every query that waited for it. Counted on the member itself (the
// operations the model holds, walked every tick), never from the client's
// own books: in its first second a new primary receives at most
// maxPoolSize storm operations plus one for each storm operation it has
// answered in that second (an answer frees a connection for one more
// request). The getMores of cursors that outlived the old primary add
// nothing: a new primary holds no cursor of the storm when elected (the
// cursors died with the process that held them; a member that restarts
// starts empty), so every getMore it receives belongs to an aggregate it
// received through the pool. The member never holds more storm operations
// than the pool has connections, nor canaries more than theirs.
//
// Before the virtual client had a pool, every query that waited during
// the election reached the new primary in the same instant (~2,800 for
// E's default trial).
func TestNewPrimaryReceivesWhatThePoolAllows(t *testing.T) {
	if race.Enabled {
		t.Skip("under the race detector: the virtual clock's model steps in one goroutine")
	}
	cfg := crashLoops(1)
	s, err := newSim(cfg, builtins(t, "E")[0])
	if err != nil {
		t.Fatal(err)
	}
	w := s.cfg.Workload
	type firstSecond struct {
		member           int
		elected          time.Duration
		received, ended  int
		cursorsAtElected int
	}
	var lives []*firstSecond
	var cur *firstSecond
	seen := map[int64]bool{} // storm ops of the current primary live at the last tick
	maxStorm, maxCanaries := 0, 0
	s.afterTick = func() {
		if s.primary < 0 {
			cur = nil
			return
		}
		n := s.members[s.primary].node
		if cur == nil || cur.member != s.primary {
			cur = &firstSecond{member: s.primary, elected: s.now, cursorsAtElected: n.Census().Cursors}
			lives = append(lives, cur)
			clear(seen)
		}
		storm, canaries := 0, 0
		now := map[int64]bool{}
		n.Ops(func(op *model.Op) {
			switch op.AppName {
			case w.AppName:
				storm++
				now[op.ID] = true
			case w.CanaryAppName:
				canaries++
			}
		})
		maxStorm, maxCanaries = max(maxStorm, storm), max(maxCanaries, canaries)
		if cur.elected > 0 && s.now-cur.elected < time.Second {
			for id := range now {
				if !seen[id] {
					cur.received++
				}
			}
			for id := range seen {
				if !now[id] {
					cur.ended++
				}
			}
		}
		seen = now
	}
	if _, err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(lives) < 2 {
		t.Fatalf("%d primaries: the trial must fail over for the test to mean anything", len(lives))
	}
	for _, l := range lives[1:] {
		t.Logf("member %d elected at %v: received %d storm operations in its first second, answered %d", l.member, l.elected, l.received, l.ended)
		if l.cursorsAtElected != 0 {
			t.Errorf("member %d elected at %v holds %d cursors: a new primary's cursors died with its last process", l.member, l.elected, l.cursorsAtElected)
		}
		if bound := w.MaxPoolSize + l.ended; l.received > bound {
			t.Errorf("member %d elected at %v received %d storm operations in its first second; the pool allows %d (%d connections + %d answered)",
				l.member, l.elected, l.received, bound, w.MaxPoolSize, l.ended)
		}
		if l.received == 0 && l.elected < s.stormEnd {
			t.Errorf("member %d elected at %v, in the storm, received no storm operation in its first second: the queries that waited for it must reach it", l.member, l.elected)
		}
	}
	if maxStorm > w.MaxPoolSize || maxCanaries > w.MaxPoolSize {
		t.Errorf("a member held %d storm operations and %d canaries at once; each client's pool has %d connections", maxStorm, maxCanaries, w.MaxPoolSize)
	}
}

// probeOp is an operation that writes what its client did with it.
type probeOp struct {
	name string
	log  *[]string
	req  request
}

func (p *probeOp) send(member int)    { *p.log = append(*p.log, fmt.Sprintf("%s→%d", p.name, member)) }
func (p *probeOp) gaveUp(code string) { *p.log = append(*p.log, p.name+" "+code) }

// clientAt is a client of a three-member set whose primary is member 0,
// with probe operations named r0, r1, ….
func clientAt(set clientSettings, n int) (*sim, *client, []*probeOp, *[]string) {
	s := &sim{primary: 0}
	c := newClient(s, set)
	log := &[]string{}
	ops := make([]*probeOp, n)
	for i := range ops {
		ops[i] = &probeOp{name: fmt.Sprintf("r%d", i), log: log}
		ops[i].req.reset(ops[i])
	}
	return s, c, ops, log
}

func advance(s *sim, c *client, to time.Duration) {
	for s.now < to {
		s.now += model.Tick
		c.tick()
	}
}

func wantLog(t *testing.T, log *[]string, want ...string) {
	t.Helper()
	if !slices.Equal(*log, want) {
		t.Fatalf("the client did %q, want %q", *log, want)
	}
	*log = (*log)[:0]
}

// A pool starts empty and grows maxConnecting connections at a time, each
// a connectTime after it was asked for, up to maxPoolSize; waiting
// requests get connections first come, first served, and a getMore waits
// behind every request already waiting.
func TestPoolGrowsMaxConnectingAtATimeAndServesInOrder(t *testing.T) {
	s, c, r, log := clientAt(clientSettings{maxPoolSize: 3, maxConnecting: 2, serverSelection: 30 * time.Second}, 6)
	for i := range 5 {
		c.start(&r[i].req, 0, true, -1)
	}
	wantLog(t, log)
	advance(s, c, connectTime)
	wantLog(t, log, "r0→0", "r1→0")
	advance(s, c, 2*connectTime)
	wantLog(t, log, "r2→0")
	advance(s, c, time.Second)
	wantLog(t, log) // the pool is full: three connections
	if got := c.inUse(0); got != 3 {
		t.Fatalf("%d connections in use, want 3", got)
	}
	c.checkIn(&r[0].req)
	wantLog(t, log, "r3→0")
	c.start(&r[5].req, s.now, false, 0) // a getMore of r0's cursor
	c.checkIn(&r[1].req)
	c.checkIn(&r[2].req)
	wantLog(t, log, "r4→0", "r5→0")
	c.checkIn(&r[3].req)
	c.checkIn(&r[4].req)
	c.checkIn(&r[5].req)
	if p := c.pools[0]; p.open != 3 || p.idle != 3 {
		t.Fatalf("pool after every reply: %d open, %d idle; want 3 and 3 (a connection stays)", p.open, p.idle)
	}
	c.start(&r[0].req, s.now, true, -1)
	wantLog(t, log, "r0→0") // an idle connection: no wait
}

// Server selection bounds an aggregate's wait for a primary and then for
// a connection, from its start; a getMore selects no server, so only its
// operation timeout bounds its wait.
func TestServerSelectionTimeoutBoundsTheWaitForAPrimaryAndAConnection(t *testing.T) {
	s, c, r, log := clientAt(clientSettings{maxPoolSize: 1, maxConnecting: 2, serverSelection: 2 * time.Second}, 5)
	s.primary = -1
	c.start(&r[0].req, 0, true, -1)
	advance(s, c, time.Second)
	c.start(&r[1].req, s.now, true, -1)
	advance(s, c, 2*time.Second)
	wantLog(t, log, "r0 Timeout") // no primary for its 2 s
	s.primary = 0
	c.primaryElected(0)
	advance(s, c, 2*time.Second+connectTime)
	wantLog(t, log, "r1→0")
	c.start(&r[2].req, s.now, true, -1) // an aggregate: waits for r1's connection
	c.start(&r[3].req, s.now, false, 0) // a getMore: likewise, with no bound
	advance(s, c, time.Hour)
	wantLog(t, log, "r2 Timeout")
	c.checkIn(&r[1].req)
	wantLog(t, log, "r3→0")

	// With an operation timeout, a getMore's wait is bounded by it, and a
	// request in flight past it is given up on; its connection comes back
	// with the reply.
	c.checkIn(&r[3].req)
	c.set.timeout = 3 * time.Second
	r[0].req.reset(r[0])
	r[2].req.reset(r[2])
	c.start(&r[0].req, s.now, false, 0) // the idle connection: in flight
	advance(s, c, s.now+model.Tick)
	c.start(&r[2].req, s.now, false, 0) // waits for it
	wantLog(t, log, "r0→0")
	advance(s, c, s.now+3*time.Second)
	wantLog(t, log, "r0 Timeout", "r2 Timeout")
	if !r[0].req.abandoned || c.inUse(0) != 1 {
		t.Fatalf("r0 abandoned %v, %d connections in use; want the abandoned request to hold its connection until its reply", r[0].req.abandoned, c.inUse(0))
	}
	c.checkIn(&r[0].req)
	if c.inUse(0) != 0 || c.pools[0].idle != 1 {
		t.Fatalf("after the abandoned request's reply: %d in use, %d idle", c.inUse(0), c.pools[0].idle)
	}
}

// A member that dies clears its pool: the requests waiting for one of its
// connections fail with PoolCleared, the connections in use are gone when
// their (failed) requests come back, and the pool of the restarted member
// starts empty.
func TestADeadMembersPoolIsCleared(t *testing.T) {
	s, c, r, log := clientAt(clientSettings{maxPoolSize: 1, maxConnecting: 2, serverSelection: 30 * time.Second}, 4)
	c.start(&r[0].req, 0, true, -1)
	c.start(&r[1].req, 0, true, -1)
	c.start(&r[2].req, 0, true, -1)
	advance(s, c, connectTime)
	wantLog(t, log, "r0→0")
	c.memberDied(0)
	c.memberDied(0) // again, for the same death: nothing more
	wantLog(t, log, "r1 PoolCleared", "r2 PoolCleared")
	c.checkIn(&r[0].req) // its network error
	if p := c.pools[0]; p.open != 0 || p.idle != 0 {
		t.Fatalf("after the death: %d open, %d idle", p.open, p.idle)
	}
	c.start(&r[3].req, s.now, false, 0) // a getMore of the dead member's cursor
	wantLog(t, log, "r3 PoolCleared")
	c.memberUp(0)
	c.start(&r[1].req, s.now, true, -1)
	wantLog(t, log) // a new connection to make
	advance(s, c, s.now+connectTime)
	wantLog(t, log, "r1→0")
}

// However its client ends an operation — a reply, a timeout while it
// waits or while it is in flight, a cleared pool — the operation is
// recorded once, and the trial stays deterministic for its seed.
func TestEveryOperationIsRecordedOnceWhateverItsClientDoes(t *testing.T) {
	cfg := crashLoops(2)
	cfg.Workload.Timeout = 8 * time.Second
	a := builtins(t, "E")[0]
	x, err := Run(context.Background(), cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	seen := map[time.Time]bool{}
	for _, o := range x.Records.Storm {
		codes[o.Code]++
		if seen[o.Scheduled] {
			t.Fatalf("the storm query scheduled at %v is recorded twice", o.Scheduled)
		}
		seen[o.Scheduled] = true
	}
	clear(seen)
	for _, c := range x.Records.Canaries {
		if seen[c.Scheduled] {
			t.Fatalf("the canary scheduled at %v is recorded twice", c.Scheduled)
		}
		seen[c.Scheduled] = true
	}
	t.Logf("storm codes %v, tally %+v", codes, x.Tally)
	for _, code := range []string{"", workload.Timeout} {
		if codes[code] == 0 {
			t.Errorf("no storm query ended with %q: %v", code, codes)
		}
	}
	// A member died under the client: what it had in flight failed with
	// a network error, what waited for one of its connections with the
	// cleared pool (which of the two a death leaves depends on the
	// operations' timeout against the storm's pace).
	if x.Tally.Restarts == 0 || codes[workload.NetworkError]+codes[workload.PoolCleared] == 0 {
		t.Errorf("%d restarts, and no storm query ended with %q or %q: %v", x.Tally.Restarts, workload.NetworkError, workload.PoolCleared, codes)
	}
	if n := x.Tally.StormCompleted + x.Tally.StormShed + x.Tally.StormKilled + x.Tally.StormFailed + codes[store.TrialEnded]; n != len(x.Records.Storm) {
		t.Errorf("the tally counts %d storm queries, the records %d", n, len(x.Records.Storm))
	}
	y, err := Run(context.Background(), cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("same seed, different trials:\n%+v\n%+v", x.Tally, y.Tally)
	}
}
