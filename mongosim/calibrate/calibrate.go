// Package calibrate reruns the seed's A/B experiment on mongosim's model in
// virtual time: a 3-member replica set (only the primary takes load), the
// spill_to_disk storm as an open-loop arrival process, canaries through
// every phase, and each arm's parameters and actors. A trial is
// deterministic for its seed; ten minutes of model time take seconds.
//
// Failover here is the replica set's timing, not its protocol: when the
// primary is OOM-killed, a secondary wins an election after the election
// timeout plus mongod's random offset (up to 15 %), and the dead member
// restarts after the restart delay with fresh memory. The protocol itself
// (heartbeats, votes, oplog) is mongosim's real replica-set code, which the
// wire server runs in real time.
package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/workload"
)

// Config is one calibration trial's setting.
type Config struct {
	Seed            uint64
	Workload        workload.SpillToDisk
	Hardware        model.Hardware
	ElectionTimeout time.Duration // settings.electionTimeoutMillis
	RestartDelay    time.Duration // --simRestartDelay
	// Observer, when set, sees every member every SampleInterval (default
	// 1 s) and every operation's outcome: qmlsab run's virtual clock
	// records a trial through it.
	Observer       Observer
	SampleInterval time.Duration
}

// Observer receives a trial as it happens, in model time from the trial's
// start.
type Observer interface {
	// Member is one member at a sampling instant; n is nil while it is
	// down. process changes each time the member starts.
	Member(at time.Duration, member int, n *model.Node, primary bool, process uint64, uptime time.Duration)
	Storm(OpRecord)
	Canary(OpRecord)
	// Kill is a killOp the actor sent and the primary carried out.
	Kill(at time.Duration, k killop.Op, residentBytes int64)
}

// OpRecord is one client operation's outcome as its client saw it,
// latency measured from its scheduled start.
type OpRecord struct {
	Scheduled, Latency time.Duration
	Stage              string
	Write              bool
	// Code is mongod's error code (0: success); CodeName names it, or the
	// client-side failure ("Timeout") when no server answered.
	Code     int32
	CodeName string
	// TrackedBytes is what a shed or killed op held when it ended (the
	// model knows; a client over the wire does not).
	TrackedBytes int64
}

// codeName is the name a client sees for a model error code.
func codeName(code int32) string {
	switch code {
	case 0:
		return ""
	case model.CodeInterrupted:
		return "Interrupted"
	case model.CodeQueryMemoryLimitExceeded:
		return "QueryMemoryLimitExceeded"
	case model.CodeHostUnreachable:
		return "HostUnreachable"
	}
	return fmt.Sprintf("Location%d", code)
}

// DefaultConfig is the seed's setting on an M50 replica set.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Workload: workload.DefaultSpillToDisk(), Hardware: model.DefaultHardware(),
		ElectionTimeout: 10 * time.Second, RestartDelay: 5 * time.Second}
}

// Metrics are one trial's results, named as DESIGN.md's metrics.
type Metrics struct {
	Availability             float64
	Failovers, Restarts      int
	ReadTicketsMin           int
	ReadTicketsMedian        float64
	LowAdmissions, LowKills  int64 // low-priority read departures in the storm
	AdmissionsPerSec         float64
	KillsPerSec              float64
	ShedsPerSec              float64 // server sheds + actor kills
	ServerSheds, ActorKills  int64
	RSSPeakBytes             int64
	LowQueueP95, LowQueueMax float64
	// LowQueueSlope is the low-priority queue's growth (ops/s) over the
	// storm, by least squares on 1 s samples taken while a primary existed.
	LowQueueSlope                                       float64
	StormCompleted, StormShed, StormKilled, StormFailed int
	VictimTrackedP50                                    int64
	VictimStages                                        map[string]int
	CanaryP50, CanaryP99                                time.Duration
}

// Trial is one arm × seed.
type Trial struct {
	Arm     string
	Seed    uint64
	Metrics Metrics
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
	pending              []pendingQuery // waiting for a primary
	cursorSeq            int64

	m            Metrics
	canaryTotal  int
	canaryOK     int
	canaryLat    []time.Duration
	tickets      []int
	queueSamples []float64
	queueSeries  [][2]float64
	victims      []int64
	lastLow      map[*model.Node]model.PoolStats
	lastShed     map[*model.Node]int64
	// inflight are the client operations not yet answered (for Observer).
	inflight map[*OpRecord]bool
}

type pendingQuery struct {
	at    time.Duration
	shape model.QueryShape
	rec   *OpRecord
}

// Run runs one trial of arm.
func Run(cfg Config, arm arms.Arm) (Trial, error) {
	params, err := model.ParamsFrom(arm.SetParameters)
	if err != nil {
		return Trial{}, err
	}
	s := &sim{cfg: cfg, arm: arm, params: params, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		primary: 0, elect: -1, lastLow: map[*model.Node]model.PoolStats{}, lastShed: map[*model.Node]int64{},
		inflight: map[*OpRecord]bool{}}
	if s.cfg.SampleInterval <= 0 {
		s.cfg.SampleInterval = time.Second
	}
	s.m.VictimStages = map[string]int{}
	for i := range s.members {
		s.members[i] = &member{up: true}
		s.startNode(i)
	}
	ph := cfg.Workload.Phases
	s.stormStart, s.stormEnd = ph.Warmup, ph.Warmup+ph.Storm
	s.loop(ph.Total())
	s.finish()
	return Trial{Arm: arm.Name, Seed: cfg.Seed, Metrics: s.m}, nil
}

func (s *sim) startNode(i int) {
	s.nodeSeq++
	n := model.NewNode(s.cfg.Hardware, s.params, s.cfg.Seed*1000+s.nodeSeq)
	n.AdvanceTo(s.now) // a fresh process starts at the trial's current time
	mb := s.members[i]
	mb.node, mb.up, mb.startedAt, mb.process = n, true, s.now, s.nodeSeq
	n.OnCrash = func() { s.crash(i) }
}

func (s *sim) crash(i int) {
	mb := s.members[i]
	mb.up = false
	mb.restartAt = s.now + s.cfg.RestartDelay
	s.m.Restarts++
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

func (s *sim) loop(total time.Duration) {
	w := s.cfg.Workload
	nextStorm := s.stormStart + s.expo(w.StormRate)
	canaryEvery := time.Duration(float64(time.Second) / w.CanaryRate)
	nextCanary := canaryEvery
	canaryWrite := false
	var nextActor time.Duration
	var nextSample, nextSecond, nextObserve time.Duration
	for s.now = 0; s.now < total; s.now += model.Tick {
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
				s.m.Failovers++
				s.flushPending()
			}
		}
		// Open-loop storm arrivals.
		for s.now < s.stormEnd && s.now >= nextStorm {
			q := w.Query(s.rng)
			s.startQuery(nextStorm, q, s.track(nextStorm, q.Stage, false))
			nextStorm += s.expo(w.StormRate)
		}
		// Canaries at a fixed rate, alternating reads and writes.
		for s.now >= nextCanary {
			s.canary(nextCanary, canaryWrite)
			canaryWrite = !canaryWrite
			nextCanary += canaryEvery
		}
		// The killOp actor.
		if k := s.arm.KillOp(); k != nil && s.now >= nextActor {
			nextActor = s.now + k.Interval
			s.actor(*k)
		}
		for _, mb := range s.members {
			if mb.up {
				mb.node.AdvanceTo(s.now)
			}
		}
		if s.now >= nextSample {
			nextSample = s.now + 100*time.Millisecond
			s.sample()
		}
		if s.now >= nextSecond {
			nextSecond = s.now + time.Second
			s.sampleSecond()
		}
		if s.cfg.Observer != nil && s.now >= nextObserve {
			nextObserve = s.now + s.cfg.SampleInterval
			for i, mb := range s.members {
				var n *model.Node
				if mb.up {
					n = mb.node
				}
				s.cfg.Observer.Member(s.now, i, n, mb.up && s.primary == i, mb.process, s.now-mb.startedAt)
			}
		}
	}
	// What is still unanswered when the trial ends timed out: the wire
	// driver bounds every operation by the trial's end the same way.
	for rec := range s.inflight {
		rec.Latency, rec.CodeName = s.now-rec.Scheduled, "Timeout"
		s.report(rec)
	}
}

// track registers a client operation the observer will hear about.
func (s *sim) track(at time.Duration, stage string, write bool) *OpRecord {
	if s.cfg.Observer == nil {
		return nil
	}
	rec := &OpRecord{Scheduled: at, Stage: stage, Write: write}
	s.inflight[rec] = true
	return rec
}

// answer ends a tracked operation with a server's code.
func (s *sim) answer(rec *OpRecord, code int32) {
	if rec == nil {
		return
	}
	rec.Latency, rec.Code, rec.CodeName = s.now-rec.Scheduled, code, codeName(code)
	s.report(rec)
}

func (s *sim) report(rec *OpRecord) {
	delete(s.inflight, rec)
	if rec.Stage == "" {
		s.cfg.Observer.Canary(*rec)
	} else {
		s.cfg.Observer.Storm(*rec)
	}
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

// startQuery sends a storm query's aggregate; a client that finds no
// primary waits for one (server selection) up to its timeout.
func (s *sim) startQuery(at time.Duration, q model.QueryShape, rec *OpRecord) {
	n := s.primaryNode()
	if n == nil {
		s.pending = append(s.pending, pendingQuery{at: at, shape: q, rec: rec})
		return
	}
	s.cursorSeq++
	gms := s.params.GetMoreWorks(q)
	agg := s.params.AggregateWork(q)
	cursor := int64(0)
	if len(gms) > 0 {
		cursor = s.cursorSeq
	}
	s.submitStorm(n, &model.Op{Kind: model.KindAggregate, AppName: s.cfg.Workload.AppName, Eligible: true, CursorID: cursor, Work: agg}, gms, rec)
}

func (s *sim) flushPending() {
	p := s.pending
	s.pending = nil
	for _, q := range p {
		if s.now-q.at > s.cfg.Workload.ServerSelectionTimeout {
			s.m.StormFailed++
			if q.rec != nil {
				q.rec.Latency, q.rec.CodeName = s.now-q.at, "Timeout"
				s.report(q.rec)
			}
			continue
		}
		s.startQuery(q.at, q.shape, q.rec)
	}
}

func (s *sim) submitStorm(n *model.Node, op *model.Op, rest []model.Work, rec *OpRecord) {
	op.Done = func(o model.Outcome) {
		if o.Code != 0 || len(rest) == 0 {
			if rec != nil && o.Code != 0 {
				rec.TrackedBytes = o.TrackedBytes
			}
			s.answer(rec, o.Code)
		}
		switch o.Code {
		case 0:
			if len(rest) == 0 {
				s.m.StormCompleted++
				return
			}
			if n.Dead() {
				s.m.StormFailed++
				s.answer(rec, model.CodeHostUnreachable)
				return
			}
			s.submitStorm(n, &model.Op{Kind: model.KindGetMore, AppName: op.AppName, Eligible: true, CursorID: op.CursorID, Work: rest[0]}, rest[1:], rec)
		case model.CodeQueryMemoryLimitExceeded:
			s.m.StormShed++
			s.victim(o)
		case model.CodeInterrupted:
			s.m.StormKilled++
			s.victim(o)
		default:
			s.m.StormFailed++
		}
	}
	n.Submit(op)
}

func (s *sim) victim(o model.Outcome) {
	if s.now >= s.stormStart && s.now < s.stormEnd {
		s.victims = append(s.victims, o.TrackedBytes)
		s.m.VictimStages[o.Stage]++
	}
}

func (s *sim) canary(at time.Duration, write bool) {
	s.canaryTotal++
	rec := s.track(at, "", write)
	n := s.primaryNode()
	if n == nil {
		// No primary: the client waits for one past the SLO.
		if rec != nil {
			rec.Latency, rec.CodeName = s.cfg.Workload.CanarySLO, "Timeout"
			s.report(rec)
		}
		return
	}
	kind := model.KindFind
	if write {
		kind = model.KindInsert
	}
	op := &model.Op{Kind: kind, AppName: s.cfg.Workload.CanaryAppName, Eligible: !write, Write: write, Work: model.PointWork()}
	op.Done = func(o model.Outcome) {
		s.answer(rec, o.Code)
		lat := s.now - at
		s.canaryLat = append(s.canaryLat, lat)
		if o.Code == 0 && lat <= s.cfg.Workload.CanarySLO {
			s.canaryOK++
		}
	}
	n.Submit(op)
}

// actor is arm D's killOp actor: the same decision function the real
// actor runs over serverStatus and $currentOp.
func (s *sim) actor(c killop.Config) {
	n := s.primaryNode()
	if n == nil {
		return
	}
	var ops []killop.Op
	n.Ops(func(op *model.Op) {
		ops = append(ops, killop.Op{ID: op.ID, AppName: op.AppName, TrackedBytes: op.Tracked(), Queued: op.Queued(), Stage: op.Work.Stage, Writes: op.Write})
	})
	rss := n.RSS()
	for _, k := range killop.Decide(c, rss, n.Hardware().MemLimitBytes, ops) {
		if !n.Kill(k.ID, model.CodeInterrupted) {
			continue
		}
		if s.inStorm() {
			s.m.ActorKills++
		}
		if s.cfg.Observer != nil {
			s.cfg.Observer.Kill(s.now, k, rss)
		}
	}
}

func (s *sim) inStorm() bool { return s.now >= s.stormStart && s.now < s.stormEnd }

// sample accumulates low-priority departures and sheds in the storm from
// every member's counters (a restarted member's counters start at zero).
func (s *sim) sample() {
	for _, mb := range s.members {
		if !mb.up {
			continue
		}
		n := mb.node
		cur := n.Pool(false, true)
		last := s.lastLow[n]
		shed := n.OperationsShed
		if s.inStorm() {
			s.m.LowKills += cur.Canceled - last.Canceled
			s.m.LowAdmissions += (cur.RemovedFromQueue - last.RemovedFromQueue) - (cur.Canceled - last.Canceled)
			s.m.ServerSheds += shed - s.lastShed[n]
		}
		s.lastLow[n], s.lastShed[n] = cur, shed
		s.m.RSSPeakBytes = max(s.m.RSSPeakBytes, n.RSSPeak())
	}
	if n := s.primaryNode(); n != nil && s.inStorm() {
		s.queueSamples = append(s.queueSamples, float64(n.Pool(false, true).QueueLength))
	}
}

// Debug, when set, receives a line per 10 s of model time.
var Debug func(string)

func (s *sim) sampleSecond() {
	if n := s.primaryNode(); Debug != nil && n != nil && int(s.now/time.Second)%10 == 0 {
		c := n.Census()
		Debug(fmt.Sprintf("t=%3.0fs rss=%4.1fG normal %d/%d q%d low %d/%d q%d running=%d(low %d) tracked=%.1fG cursors=%d(%.1fG) kinds=%v",
			s.now.Seconds(), float64(n.RSS())/(1<<30), n.Pool(false, false).Out, n.Pool(false, false).Total, c.QueuedNormal,
			n.Pool(false, true).Out, n.Pool(false, true).Total, c.QueuedLow, c.Running, c.RunningLow,
			float64(c.TrackedBytes)/(1<<30), c.Cursors, float64(c.CursorBytes)/(1<<30), c.ByState))
	}
	n := s.primaryNode()
	if n == nil || !s.inStorm() {
		return
	}
	s.tickets = append(s.tickets, n.ReadTickets())
	s.queueSeries = append(s.queueSeries, [2]float64{(s.now - s.stormStart).Seconds(), float64(n.Pool(false, true).QueueLength)})
}

func (s *sim) finish() {
	m := &s.m
	if s.canaryTotal > 0 {
		m.Availability = float64(s.canaryOK) / float64(s.canaryTotal)
	}
	m.Failovers-- // the first "election" is none: member 0 starts as primary
	m.Failovers = max(m.Failovers, 0)
	storm := s.cfg.Workload.Phases.Storm.Seconds()
	m.AdmissionsPerSec = float64(m.LowAdmissions) / storm
	m.KillsPerSec = float64(m.LowKills) / storm
	m.ShedsPerSec = float64(m.ServerSheds+m.ActorKills) / storm
	if len(s.tickets) > 0 {
		m.ReadTicketsMin = slices.Min(s.tickets)
		f := make([]float64, len(s.tickets))
		for i, t := range s.tickets {
			f[i] = float64(t)
		}
		m.ReadTicketsMedian = quantile(f, 0.5)
	}
	if len(s.queueSamples) > 0 {
		m.LowQueueP95 = quantile(s.queueSamples, 0.95)
		m.LowQueueMax = slices.Max(s.queueSamples)
	}
	m.LowQueueSlope = slope(s.queueSeries)
	if len(s.victims) > 0 {
		f := make([]float64, len(s.victims))
		for i, v := range s.victims {
			f[i] = float64(v)
		}
		m.VictimTrackedP50 = int64(quantile(f, 0.5))
	}
	if len(s.canaryLat) > 0 {
		f := make([]float64, len(s.canaryLat))
		for i, v := range s.canaryLat {
			f[i] = float64(v)
		}
		m.CanaryP50 = time.Duration(quantile(f, 0.5))
		m.CanaryP99 = time.Duration(quantile(f, 0.99))
	}
}

// quantile is the linear-interpolation quantile (numpy's default).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 1 {
		return s[0]
	}
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func slope(pts [][2]float64) float64 {
	if len(pts) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		sx += p[0]
		sy += p[1]
		sxx += p[0] * p[0]
		sxy += p[0] * p[1]
	}
	n := float64(len(pts))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}
