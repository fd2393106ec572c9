// Package virtual is the trial engine of the virtual clock: it runs an
// arm's trial on mongosim's model in model time — a 3-member replica set
// (only the primary takes load), the spill_to_disk storm as an open-loop
// arrival process, canaries through every phase, the arm's parameters and
// actors — and records it as the same records a wall-clock trial writes.
// A trial is deterministic for its seed; ten minutes of model time take
// seconds.
//
// Failover here is the replica set's timing, not its protocol: when the
// primary is OOM-killed, a secondary wins an election after the election
// timeout plus mongod's random offset (up to 15 %), and the dead member
// restarts after the restart delay with fresh memory. The protocol itself
// (heartbeats, votes, oplog) is mongosim's real replica-set code, which the
// wire server runs in real time.
package virtual

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/internal/zero"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Config is one virtual trial's setting. A zero field takes its
// documented default (DefaultConfig's values).
type Config struct {
	Seed     uint64
	Workload workload.SpillToDisk
	// Hardware is each member's machine; zero fields are the M50's.
	Hardware        model.Hardware
	ElectionTimeout time.Duration // settings.electionTimeoutMillis
	RestartDelay    time.Duration // how long an OOM-killed member stays down
	// SampleInterval is how often every member is sampled (default 1 s).
	SampleInterval time.Duration
	// Start is the wall-clock instant model time 0 stands for in the
	// records (default: now). Whatever it is, Run returns it as
	// Trial.Start: a caller reads the start from the result, never from
	// its own copy of the config.
	Start time.Time
	// Progress, when set, hears about the trial every 10 model seconds.
	Progress func(Progress)
}

// Progress is a running trial's state.
type Progress struct {
	Elapsed         time.Duration
	Availability    float64
	HasAvailability bool
	Failovers       int
}

// DefaultConfig is the sweeper investigation's setting on an M50 replica set.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Workload: workload.DefaultSpillToDisk()}.withDefaults()
}

func (c Config) withDefaults() Config {
	c.Hardware = c.Hardware.WithDefaults()
	zero.Default(&c.ElectionTimeout, mongosim.DefaultElectionTimeout)
	zero.Default(&c.RestartDelay, mongosim.DefaultRestartDelay)
	zero.Default(&c.SampleInterval, time.Second)
	if c.Start.IsZero() {
		c.Start = time.Now().UTC().Truncate(time.Millisecond)
	}
	return c
}

// Tally is the engine's own count of what happened, kept beside the
// records so that tests can check the records against it.
type Tally struct {
	CanaryOK, Canaries                                  int
	StormCompleted, StormShed, StormKilled, StormFailed int
	Restarts, Failovers                                 int
}

// Trial is a finished virtual trial: its records and the engine's tally.
type Trial struct {
	// Start is the wall-clock instant model time 0 stands for: every
	// time in Records is Start plus a model instant.
	Start   time.Time
	Records store.Records
	Tally   Tally
}

// codeName is the name a client sees for a model error code: a member
// that died under an operation broke its connection (the driver's network
// error), the rest are the server's code names.
func codeName(code int32) string {
	switch code {
	case 0:
		return ""
	case model.CodeInterrupted:
		return "Interrupted"
	case model.CodeQueryMemoryLimitExceeded:
		return "QueryMemoryLimitExceeded"
	case model.CodeHostUnreachable:
		return workload.NetworkError
	}
	return fmt.Sprintf("Location%d", code)
}

type member struct {
	node      *model.Node
	up        bool
	restartAt time.Duration
	startedAt time.Duration
	process   uint64
}

type sim struct {
	cfg     Config
	arm     arms.Arm
	params  model.Params
	rng     *rand.Rand
	now     time.Duration
	members [3]*member
	primary int
	elect   time.Duration // pending election time (-1: none)
	nodeSeq uint64

	stormStart, stormEnd time.Duration
	cursorSeq            int64
	// The storm's and the canaries' clients (client.go): their own
	// connection pools, as on the wall clock.
	storm, canaries *client

	tally Tally
	rec   store.Records
	// inflight are the client operations not yet answered, each at its
	// slot (a set without hashing a key per operation).
	inflight   []*opRecord
	lastReport time.Duration
	actorOps   []killop.Op
	// Answered storm queries and canaries, for the next ones to reuse:
	// each holds a model.Op, and allocating tens of thousands of them a
	// trial cost it several percent.
	freeQueries  []*stormQuery
	freeCanaries []*canaryOp
	census       collect.Census
	// afterTick, when set, is called at the end of every tick: a test's
	// probe of the trial as it runs.
	afterTick func()
}

// opRecord is one client operation's outcome as its client saw it,
// latency measured from its scheduled start.
type opRecord struct {
	scheduled, latency time.Duration
	stage              string
	write              bool
	code               string // "" for success, or a server or client error name
	trackedBytes       int64  // what a shed or killed op held when it ended
	slot               int    // its index in sim.inflight while unanswered
}

// stormQuery is one storm query from its aggregate to its last getMore,
// in one allocation: its client's record, its place in the client's
// queues, what its cursor has left, and the one model.Op its requests
// use in turn (the model keeps no reference to an op once it has called
// its Done, so the next getMore reuses it).
type stormQuery struct {
	s      *sim
	req    request
	member int // the member its cursor lives on (-1: its aggregate is not sent)
	op     model.Op
	rest   cursorRest
	rec    opRecord
	// answered: its record is written (the client gave up on it while a
	// request was in flight, whose reply is still to come).
	answered bool
	// done is q.finished, bound once: the Done of each of its requests.
	done func(model.Outcome)
}

// checkEvery is how many ticks pass between looks at ctx: a trial stops
// within a few milliseconds of wall time after its context ends.
const checkEvery = 50

// Run runs one trial of arm in model time. It returns ctx's error, and
// no trial, when ctx ends first.
func Run(ctx context.Context, cfg Config, arm arms.Arm) (Trial, error) {
	s, err := newSim(cfg, arm)
	if err != nil {
		return Trial{}, err
	}
	return s.run(ctx)
}

// newSim is a trial of arm ready to run.
func newSim(cfg Config, arm arms.Arm) (*sim, error) {
	cfg = cfg.withDefaults()
	params, err := model.ParamsFrom(arm.SetParameters)
	if err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, arm: arm, params: params, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		primary: 0, elect: -1}
	s.storm, s.canaries = newClient(s, stormClient(cfg.Workload)), newClient(s, canaryClient(cfg.Workload))
	for i := range s.members {
		s.members[i] = &member{up: true}
		s.startNode(i)
	}
	ph := cfg.Workload.Phases
	s.stormStart, s.stormEnd = ph.Warmup, ph.Warmup+ph.Storm
	s.rec.PhaseStarts = map[store.Phase]time.Time{store.PhaseWarmup: s.at(0), store.PhaseStorm: s.at(ph.Warmup), store.PhaseRecovery: s.at(ph.Warmup + ph.Storm), store.PhaseEnd: s.at(ph.Total())}
	s.rec.KillOpActor = s.arm.KillOp() != nil
	// The records' expected sizes up front: growing slices of tens of
	// thousands of ops by doubling cost a trial several percent.
	s.rec.Samples = make([]store.Sample, 0, len(s.members)*(int(ph.Total()/cfg.SampleInterval)+2))
	s.rec.Canaries = make([]store.CanaryOp, 0, int(ph.Total().Seconds()*cfg.Workload.CanaryRate)+1)
	s.rec.Storm = make([]store.StormOp, 0, int(ph.Storm.Seconds()*cfg.Workload.StormRate*1.1)+1)
	if s.rec.KillOpActor {
		// The actor kills a storm query at most once, and kills tens of
		// thousands in a default-profile trial.
		s.rec.Kills = make([]store.Kill, 0, cap(s.rec.Storm))
	}
	return s, nil
}

// run runs the trial to its end.
func (s *sim) run(ctx context.Context) (Trial, error) {
	if err := s.loop(ctx, s.cfg.Workload.Phases.Total()); err != nil {
		return Trial{}, err
	}
	return Trial{Start: s.cfg.Start, Records: s.rec, Tally: s.tally}, nil
}

// at is the record time of a model instant.
func (s *sim) at(d time.Duration) time.Time { return s.cfg.Start.Add(d) }

func (s *sim) startNode(i int) {
	s.nodeSeq++
	n := model.NewNode(s.cfg.Hardware, s.params, s.cfg.Seed*1000+s.nodeSeq)
	n.AdvanceTo(s.now) // a fresh process starts at the trial's current time
	mb := s.members[i]
	mb.node, mb.up, mb.startedAt, mb.process = n, true, s.now, s.nodeSeq
	n.OnCrash = func() { s.crash(i) }
	s.storm.memberUp(i)
	s.canaries.memberUp(i)
}

func (s *sim) crash(i int) {
	mb := s.members[i]
	mb.up = false
	mb.restartAt = s.now + s.cfg.RestartDelay
	s.tally.Restarts++
	// The clients' pools to it are cleared (each operation it failed in
	// flight has cleared them already, if there was one).
	s.storm.memberDied(i)
	s.canaries.memberDied(i)
	if s.primary == i {
		s.primary = -1
		s.scheduleElection()
	}
}

func (s *sim) scheduleElection() {
	if s.elect >= 0 {
		return
	}
	offset := time.Duration(s.rng.Float64() * 0.15 * float64(s.cfg.ElectionTimeout))
	s.elect = s.now + s.cfg.ElectionTimeout + offset
}

func (s *sim) upCount() int {
	n := 0
	for _, mb := range s.members {
		if mb.up {
			n++
		}
	}
	return n
}

func (s *sim) loop(ctx context.Context, total time.Duration) error {
	w := s.cfg.Workload
	nextStorm := s.stormStart + s.expo(w.StormRate)
	canaryEvery := time.Duration(float64(time.Second) / w.CanaryRate)
	nextCanary := canaryEvery
	canaryWrite := false
	killer := s.arm.KillOp()
	var nextActor time.Duration // the killOp actor's next round
	if killer == nil {
		nextActor = noDeadline // none
	}
	var nextObserve time.Duration
	for tick := 0; s.now < total; s.now, tick = s.now+model.Tick, tick+1 {
		if tick%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		// The members work up to now first: an operation that arrives now
		// is served from now on, so even the quickest takes a tick (served
		// in the tick before it arrived, every canary took 0 ms).
		s.advancePrimary()
		// Restarts and elections.
		for i, mb := range s.members {
			if !mb.up && s.now >= mb.restartAt {
				s.startNode(i)
				if s.primary < 0 {
					s.scheduleElection()
				}
			}
		}
		if s.primary < 0 && s.elect >= 0 && s.now >= s.elect {
			s.elect = -1
			if s.upCount() >= 2 {
				s.primary = s.pickPrimary()
				s.members[s.primary].node.AdvanceTo(s.now) // it takes the load from now
				s.tally.Failovers++
				// What waited for a primary now waits for a connection to it.
				s.storm.primaryElected(s.primary)
				s.canaries.primaryElected(s.primary)
			}
		}
		// Connections made, and requests whose client gives up on them.
		s.storm.tick()
		s.canaries.tick()
		// Open-loop storm arrivals.
		for s.now < s.stormEnd && s.now >= nextStorm {
			q := s.newStormQuery(w.Query(s.rng))
			s.track(&q.rec, nextStorm, q.rest.shape.Stage, false)
			s.storm.start(&q.req, nextStorm, true, -1)
			nextStorm += s.expo(w.StormRate)
		}
		// Canaries at a fixed rate, alternating reads and writes.
		for s.now >= nextCanary {
			s.canary(nextCanary, canaryWrite)
			canaryWrite = !canaryWrite
			nextCanary += canaryEvery
		}
		// The killOp actor.
		if s.now >= nextActor {
			nextActor = s.now + killer.Interval
			s.actor(*killer)
		}
		if s.now >= nextObserve {
			nextObserve = s.now + s.cfg.SampleInterval
			s.observe()
		}
		if s.afterTick != nil {
			s.afterTick()
			continue // the probe looks at every tick
		}
		// The ticks up to the engine's next event pass in one move while
		// the primary holds no operation (quiet, below).
		if next := s.quietUntil(nextStorm, nextCanary, nextActor, nextObserve, total); next > s.now+model.Tick {
			s.now = next - model.Tick // the loop's step takes it to next
		}
	}
	// A last sample at the trial's end, as a wire sampler takes one just
	// after it: the rates of the trial's last second need its end.
	s.advancePrimary()
	s.observe()
	// What is still unanswered when the trial ends is unfinished, not
	// failed: the wire driver cuts every operation off at the trial's end
	// (plus a drain) and records it the same way.
	left := slices.Clone(s.inflight)
	slices.SortFunc(left, func(a, b *opRecord) int { return cmp.Compare(a.scheduled, b.scheduled) })
	for _, rec := range left {
		rec.latency, rec.code = s.now-rec.scheduled, store.TrialEnded
		s.report(rec)
	}
	return nil
}

// quietUntil is the first tick after now at which the loop has anything
// to do, given its next arrival, canary, actor round and sample, or the
// next tick if the primary holds an operation. The loop's work at a tick
// is its events (restarts, an election, the clients' connections and
// deadlines, arrivals, canaries, the actor, a sample) and running the
// primary to it. With no operation the primary calls nothing back (no
// operation ends, and its memory only falls, so the OOM killer cannot
// strike), so it changes nothing the loop reads before its next event;
// AdvanceTo then runs it the same ticks in one call as in one a tick.
// Under the storm the primary is never without an operation; in the
// warmup and the recovery it is, between canaries.
func (s *sim) quietUntil(nextStorm, nextCanary, nextActor, nextObserve, total time.Duration) time.Duration {
	if n := s.primaryNode(); n != nil && !n.Idle() {
		return s.now + model.Tick
	}
	next := min(nextCanary, nextActor, nextObserve, total, s.storm.next(), s.canaries.next())
	if nextStorm < s.stormEnd {
		next = min(next, nextStorm) // an arrival past the storm's end never comes
	}
	for _, mb := range s.members {
		if !mb.up {
			next = min(next, mb.restartAt)
		}
	}
	if s.primary < 0 && s.elect >= 0 {
		next = min(next, s.elect)
	}
	// The loop's ticks are whole milliseconds: an event at x is handled
	// at the first tick at or after x.
	next = (next + model.Tick - 1) / model.Tick * model.Tick
	return max(next, s.now+model.Tick)
}

// advancePrimary runs the primary to the engine's now. The other members
// take no load (every operation goes to the primary; a member that stops
// being primary has crashed, and restarts empty), so each evolves on its
// own whatever the engine does; AdvanceTo passes an idle member's quiet
// ticks over in one move and steps the same ticks however often it is
// called, so they are run to now only when read (advanceAll): a call per
// member per tick cost a trial several percent.
func (s *sim) advancePrimary() {
	if n := s.primaryNode(); n != nil {
		n.AdvanceTo(s.now)
	}
}

// advanceAll runs every member that is up to the engine's now.
func (s *sim) advanceAll() {
	for _, mb := range s.members {
		if mb.up {
			mb.node.AdvanceTo(s.now)
		}
	}
}

// track registers a client operation in rec.
func (s *sim) track(rec *opRecord, at time.Duration, stage string, write bool) {
	*rec = opRecord{scheduled: at, stage: stage, write: write, slot: len(s.inflight)}
	s.inflight = append(s.inflight, rec)
}

// answer ends a tracked operation with a server's code.
func (s *sim) answer(rec *opRecord, code int32) { s.fail(rec, codeName(code)) }

// fail ends a tracked operation with a code name ("": success).
func (s *sim) fail(rec *opRecord, code string) {
	rec.latency, rec.code = s.now-rec.scheduled, code
	s.report(rec)
}

// report records an answered operation as its client saw it.
func (s *sim) report(rec *opRecord) {
	if rec.slot >= 0 {
		last := s.inflight[len(s.inflight)-1]
		s.inflight[rec.slot], last.slot = last, rec.slot
		s.inflight[len(s.inflight)-1] = nil
		s.inflight = s.inflight[:len(s.inflight)-1]
		rec.slot = -1
	}
	if rec.stage == "" {
		ok := rec.code == "" && rec.latency <= s.cfg.Workload.CanarySLO
		s.tally.Canaries++
		if ok {
			s.tally.CanaryOK++
		}
		s.rec.Canaries = append(s.rec.Canaries, store.CanaryOp{Scheduled: s.at(rec.scheduled), Latency: rec.latency, Write: rec.write, OK: ok, Code: rec.code,
			Censored: rec.code == store.ClientTimeout})
		return
	}
	o := store.ClassifyCode(rec.code)
	switch o {
	case store.Completed:
		s.tally.StormCompleted++
	case store.Shed:
		s.tally.StormShed++
	case store.Killed:
		s.tally.StormKilled++
	case store.Failed:
		s.tally.StormFailed++
	}
	s.rec.Storm = append(s.rec.Storm, store.StormOp{Scheduled: s.at(rec.scheduled), Latency: rec.latency, Stage: rec.stage,
		Outcome: o, Code: rec.code, TrackedBytes: rec.trackedBytes})
}

func (s *sim) expo(rate float64) time.Duration {
	return time.Duration(s.rng.ExpFloat64() / rate * float64(time.Second))
}

// pickPrimary elects an up member; the one that crashed last is the
// stalest, so any other up member wins.
func (s *sim) pickPrimary() int {
	var up []int
	for i, mb := range s.members {
		if mb.up {
			up = append(up, i)
		}
	}
	return up[s.rng.IntN(len(up))]
}

func (s *sim) primaryNode() *model.Node {
	if s.primary < 0 {
		return nil
	}
	return s.members[s.primary].node
}

// send sends the query's next request, which now holds a connection to
// member: its aggregate, or the getMore finished prepared.
func (q *stormQuery) send(member int) {
	s := q.s
	if q.member < 0 {
		s.cursorSeq++
		shape := q.rest.shape
		q.member, q.rest.left = member, shape.OutputBytes
		cursor := int64(0)
		if q.rest.left > 0 {
			cursor = s.cursorSeq
		}
		q.op = model.Op{Kind: model.KindAggregate, AppName: s.cfg.Workload.AppName, Eligible: true, CursorID: cursor,
			Work: s.params.AggregateWork(shape), Done: q.done}
	}
	s.members[member].node.Submit(&q.op)
}

// gaveUp is the end of the query by its client: a timeout, or its
// member's pool cleared while it waited for a connection.
func (q *stormQuery) gaveUp(code string) {
	s := q.s
	s.fail(&q.rec, code)
	if q.req.abandoned {
		q.answered = true // its request's reply frees it (finished)
		return
	}
	// It was waiting: if for a getMore, its cursor is open on a live
	// member, and the driver closes it (killCursors).
	if q.member >= 0 {
		if n := s.members[q.member].node; !n.Dead() {
			n.KillCursor(q.op.CursorID)
		}
	}
	s.freeQueries = append(s.freeQueries, q)
}

// cursorRest is what an open cursor has left to return. Its getMores are
// made one at a time, when the previous one ends: the whole list
// (model.Params.GetMoreWorks) would hold one Work per batch for every open
// cursor, 4000 of them per query at batchDocs 1 with the default sizes
// (docs/reliability.md has the memory that took).
type cursorRest struct {
	shape model.QueryShape
	left  int64 // output bytes not yet returned
}

// batchBytes is what one getMore returns: the model's rule (BatchDocs
// documents, 16 MiB when the batch size is unset), which a test checks
// against model.Params.GetMoreWorks.
func (c *cursorRest) batchBytes() int64 {
	if b := c.shape.BatchDocs * max(c.shape.DocBytes, 1); b > 0 {
		return b
	}
	return 16 << 20
}

// next is the cursor's next getMore; ok is false once it is exhausted.
func (c *cursorRest) next(p model.Params) (w model.Work, ok bool) {
	if c.left <= 0 {
		return model.Work{}, false
	}
	b := min(c.left, c.batchBytes())
	w = p.GetMoreWork(c.shape, b) // one batch: the model's work for it
	c.left -= b
	w.Exhausts = c.left <= 0
	return w, true
}

// newStormQuery is a query of shape, reusing an answered one's memory
// when there is one: an answered query is referenced by nothing (its
// record was copied, the model let go of its op when it called Done),
// and none is reused before the engine's next arrival.
func (s *sim) newStormQuery(shape model.QueryShape) *stormQuery {
	if k := len(s.freeQueries); k > 0 {
		q := s.freeQueries[k-1]
		s.freeQueries[k-1] = nil
		s.freeQueries = s.freeQueries[:k-1]
		// Its op is set whole when it is sent, its record when it is
		// tracked, its request when it starts: only what comes before is
		// reset here.
		q.member, q.rest, q.answered = -1, cursorRest{shape: shape}, false
		q.req.reset(q)
		return q
	}
	q := &stormQuery{s: s, member: -1, rest: cursorRest{shape: shape}}
	q.req.reset(q)
	q.done = q.finished
	return q
}

// finished is the reply to the query's current request: its connection
// goes back to the pool, and the client starts the next getMore, until
// the cursor is exhausted or a request fails.
func (q *stormQuery) finished(o model.Outcome) {
	s := q.s
	if o.Code == model.CodeHostUnreachable {
		// The member died under it: its connections broke.
		s.storm.memberDied(q.req.member)
	}
	if q.answered {
		// Its client gave up on it in flight. A getMore's cursor is closed
		// (killCursors); an aggregate's cursor the client never learnt of.
		if o.Code == 0 && q.op.Kind == model.KindGetMore {
			s.members[q.member].node.KillCursor(q.op.CursorID)
		}
		s.storm.checkIn(&q.req)
		s.freeQueries = append(s.freeQueries, q)
		return
	}
	if o.Code != 0 {
		q.rec.trackedBytes = o.TrackedBytes
		s.answer(&q.rec, o.Code)
		s.storm.checkIn(&q.req)
		s.freeQueries = append(s.freeQueries, q)
		return
	}
	next, more := q.rest.next(s.params)
	if !more {
		s.answer(&q.rec, 0)
		s.storm.checkIn(&q.req)
		s.freeQueries = append(s.freeQueries, q)
		return
	}
	s.storm.checkIn(&q.req)
	q.op = model.Op{Kind: model.KindGetMore, AppName: q.op.AppName, Eligible: true, CursorID: q.op.CursorID, Work: next, Done: q.done}
	s.storm.start(&q.req, s.now, false, q.member)
}

// canaryOp is a canary's record, its place in its client's queues and its
// model.Op in one allocation, reused once answered (as a stormQuery is).
type canaryOp struct {
	s        *sim
	req      request
	op       model.Op
	rec      opRecord
	answered bool                // its client gave up on it in flight
	done     func(model.Outcome) // c.finished, bound once
}

func (c *canaryOp) send(member int) { c.s.members[member].node.Submit(&c.op) }

func (c *canaryOp) finished(o model.Outcome) {
	s := c.s
	if o.Code == model.CodeHostUnreachable {
		s.canaries.memberDied(c.req.member)
	}
	if !c.answered {
		s.answer(&c.rec, o.Code)
	}
	s.canaries.checkIn(&c.req)
	s.freeCanaries = append(s.freeCanaries, c)
}

// gaveUp is the end of the canary by its client: past its deadline
// waiting for a primary, a connection or the reply, or its member's pool
// cleared.
func (c *canaryOp) gaveUp(code string) {
	c.s.fail(&c.rec, code)
	if c.req.abandoned {
		c.answered = true // the reply frees it
		return
	}
	c.s.freeCanaries = append(c.s.freeCanaries, c)
}

func (s *sim) newCanary() *canaryOp {
	if k := len(s.freeCanaries); k > 0 {
		c := s.freeCanaries[k-1]
		s.freeCanaries[k-1] = nil
		s.freeCanaries = s.freeCanaries[:k-1]
		*c = canaryOp{s: s, done: c.done}
		c.req.reset(c)
		return c
	}
	c := &canaryOp{s: s}
	c.req.reset(c)
	c.done = c.finished
	return c
}

// canary starts a canary scheduled at at: its client selects the primary
// (waiting for one up to the canary's deadline) and sends it on a
// connection of its own pool.
func (s *sim) canary(at time.Duration, write bool) {
	c := s.newCanary()
	s.track(&c.rec, at, "", write)
	kind := model.KindFind
	if write {
		kind = model.KindInsert
	}
	c.op = model.Op{Kind: kind, AppName: s.cfg.Workload.CanaryAppName, Eligible: !write, Write: write, Work: model.PointWork(),
		Done: c.done}
	s.canaries.start(&c.req, at, true, -1)
}

// actor is the arm's killOp actor: the same decision function the real
// actor runs over serverStatus and $currentOp.
func (s *sim) actor(c killop.Config) {
	n := s.primaryNode()
	if n == nil || !c.Acts(n.RSS(), n.Hardware().MemLimitBytes) {
		return
	}
	ops := actorCandidates(n, c, s.actorOps[:0]) // reused: the queue can hold many thousands
	s.actorOps = ops
	rss := n.RSS()
	for _, k := range killop.Decide(c, rss, n.Hardware().MemLimitBytes, ops) {
		if !n.Kill(k.ID, model.CodeInterrupted) {
			continue
		}
		s.rec.Kills = append(s.rec.Kills, store.Kill{At: s.at(s.now), OpID: k.ID, AppName: k.AppName, TrackedBytes: k.TrackedBytes,
			Queued: k.Queued, Queue: store.QueueOf(k.Queued, k.LowPriority), Stage: k.Stage, ResidentMB: rss >> 20})
	}
}

// actorCandidates appends to ops the operations of n the actor's policy
// may kill, as $currentOp shows them: enough of them that Decide picks
// from these what it would pick from all. Decide kills the candidates
// with the most tracked bytes (ties: the lower ID), at most
// KillsPerRound of them; the model lists the queued ops holding memory
// in that order, so the first KillsPerRound queued candidates, with the
// running ones when the policy considers them, hold every op Decide
// picks from all of them (a queued op past them has KillsPerRound
// candidates before it), and the rest of the queue — thousands of ops
// under a storm, most of a round's work when it was walked — is never
// read.
func actorCandidates(n *model.Node, c killop.Config, ops []killop.Op) []killop.Op {
	// consider adds op to the candidates if the actor may kill it.
	consider := func(op *model.Op) {
		// A write or an op holding no tracked memory is never in scope
		// (killop.Config.InScope): it is passed over before the actor's
		// view of it is built.
		if op.Write || op.Tracked() <= 0 {
			return
		}
		k := killop.Op{ID: op.ID, AppName: op.AppName, TrackedBytes: op.Tracked(), Queued: op.Queued(), LowPriority: op.LowPriority(), Stage: op.Work.Stage, Writes: op.Write}
		// What the policy never considers cannot be chosen: leaving it out
		// here only saves Decide the look.
		if c.Considers(k) && c.InScope(k) {
			ops = append(ops, k)
		}
	}
	if !c.QueuedOnly() {
		n.RunningOps(consider)
	}
	// Nor (InScope) is a queued op holding no tracked memory a
	// candidate, which most of a storm's queue is.
	most := len(ops) + c.KillsPerRound()
	n.LargestQueuedHolding(func(op *model.Op) bool {
		consider(op)
		return len(ops) < most
	})
	return ops
}

// observe samples every member through the serverStatus sections and
// $currentOp census a wire sampler reads, and reports progress.
func (s *sim) observe() {
	s.advanceAll()
	for i, mb := range s.members {
		smp := store.Sample{At: s.at(s.now), Member: fmt.Sprintf("member%d", i)}
		if mb.up {
			n := mb.node
			smp.Up, smp.Primary, smp.ProcessID = true, s.primary == i, fmt.Sprintf("process%d", mb.process)
			// The document goes to the extractor table as built: a wire
			// sampler reads the same fields from its marshalled form.
			smp.Values = collect.ExtractD(mongosim.ModelStatus(n, s.now-mb.startedAt))
			// The census from the counts the model keeps as operations
			// come and go: the same figures as a walk of every operation.
			oc := n.OpCounts()
			c := &s.census // reused sample to sample
			c.Reset()
			c.AddCounts(oc.Live-oc.Queued, oc.Queued, collect.Tracked{LowQueue: oc.QueuedLowBytes, NormalQueue: oc.QueuedNormalBytes,
				Running: oc.TrackedBytes - oc.QueuedLowBytes - oc.QueuedNormalBytes, IdleCursors: oc.CursorBytes})
			for _, st := range oc.Stages {
				c.AddStage(st.Stage, st.Ops)
			}
			c.AddTo(smp.Values)
		}
		s.rec.Samples = append(s.rec.Samples, smp)
	}
	if s.cfg.Progress != nil && s.now-s.lastReport >= 10*time.Second {
		s.lastReport = s.now
		p := Progress{Elapsed: s.now, Failovers: s.tally.Failovers}
		if s.tally.Canaries > 0 {
			p.Availability, p.HasAvailability = float64(s.tally.CanaryOK)/float64(s.tally.Canaries), true
		}
		s.cfg.Progress(p)
	}
}
