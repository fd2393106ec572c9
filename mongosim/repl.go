package mongosim

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// memberState is a replica-set member state, numbered as mongod numbers it.
type memberState int

const (
	stateStartup    memberState = 0
	statePrimary    memberState = 1
	stateSecondary  memberState = 2
	stateRecovering memberState = 3
	stateDown       memberState = 8
)

func (m memberState) String() string {
	switch m {
	case stateStartup:
		return "STARTUP"
	case statePrimary:
		return "PRIMARY"
	case stateSecondary:
		return "SECONDARY"
	case stateRecovering:
		return "RECOVERING"
	case stateDown:
		return "(not reachable/healthy)"
	}
	return "UNKNOWN"
}

// replConfig is a parsed replica-set configuration.
type replConfig struct {
	raw               bson.Raw
	name              string
	version           int64
	members           []memberConfig
	electionTimeout   time.Duration
	heartbeatInterval time.Duration
}

type memberConfig struct {
	id    int
	host  string
	votes int
}

func (c *replConfig) majority() int {
	v := 0
	for _, m := range c.members {
		v += m.votes
	}
	return v/2 + 1
}

func (c *replConfig) member(id int) (memberConfig, bool) {
	for _, m := range c.members {
		if m.id == id {
			return m, true
		}
	}
	return memberConfig{}, false
}

// peer is what this member knows of another, from heartbeats.
type peer struct {
	id      int
	host    string
	hb      *wire.Client
	state   memberState
	term    int64
	applied opTime
	lastOK  time.Time
	up      bool
	lastErr string
	pingMs  int64
}

// replState is the member's replication state, guarded by Server.mu.
type replState struct {
	cfg      *replConfig
	selfID   int
	state    memberState
	term     int64
	voteTerm int64
	votedFor int

	oplog       []oplogEntry
	lastApplied opTime
	commitPoint opTime
	sessions    map[string]sessionRecord

	peers              map[int]*peer
	primaryID          int
	lastPrimaryContact time.Time
	electionID         bson.ObjectID
	electionTime       bson.Timestamp
	electionDate       time.Time
	stepDownUntil      time.Time
	progress           map[int]opTime
	electing           bool

	topoCounter  int64
	topoChanged  chan struct{}
	oplogChanged chan struct{}
	commitChange chan struct{}
	kick         chan struct{}
}

func newReplState() *replState {
	return &replState{
		primaryID: -1, votedFor: -1,
		sessions: map[string]sessionRecord{}, peers: map[int]*peer{}, progress: map[int]opTime{},
		topoChanged: make(chan struct{}), oplogChanged: make(chan struct{}), commitChange: make(chan struct{}),
		kick: make(chan struct{}, 1),
	}
}

func (r *replState) notifyTopology() {
	r.topoCounter++
	close(r.topoChanged)
	r.topoChanged = make(chan struct{})
}

// kickHeartbeats makes the heartbeat loop send a round now, as mongod
// reschedules heartbeats on a change of state.
func (r *replState) kickHeartbeats() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *replState) notifyOplog() {
	close(r.oplogChanged)
	r.oplogChanged = make(chan struct{})
}

func (r *replState) notifyCommit() {
	close(r.commitChange)
	r.commitChange = make(chan struct{})
}

// wake releases every waiter (used when the member dies).
func (r *replState) wake() {
	r.notifyOplog()
	r.notifyCommit()
	r.notifyTopology()
}

// recover rebuilds the member from Storage: metadata, then the oplog
// replayed into data.
func (s *Server) recover() error {
	var meta Meta
	var entries []bson.Raw
	var err error
	if ds, ok := s.store.(*DirStorage); ok && ds.Logger == nil {
		meta, entries, err = ds.load(s.log) // a torn tail cut off is the member's to log
	} else {
		meta, entries, err = s.store.Load()
	}
	if err != nil {
		return err
	}
	s.repl = newReplState()
	r := s.repl
	r.term, r.voteTerm, r.votedFor = meta.Term, meta.VoteTerm, meta.VotedFor
	for _, raw := range entries {
		var ot opTime
		ot.TS.T, ot.TS.I, _ = raw.Lookup("ts").TimestampOK()
		ot.T, _ = raw.Lookup("t").AsInt64OK()
		s.applyLocked(oplogEntry{ot: ot, raw: raw})
	}
	r.lastPrimaryContact = time.Now()
	switch {
	case s.opts.ReplSet == "":
		r.state = statePrimary
	case meta.Config != nil:
		if err := s.adoptConfigLocked(meta.Config, false); err != nil {
			s.log.Warn("stored replica set config not usable", "err", err)
			r.state = stateStartup
		}
	default:
		r.state = stateStartup
	}
	return nil
}

func (s *Server) standalone() bool { return s.opts.ReplSet == "" }

func (s *Server) saveMetaLocked() {
	r := s.repl
	meta := Meta{Term: r.term, VoteTerm: r.voteTerm, VotedFor: r.votedFor}
	if r.cfg != nil {
		meta.Config = r.cfg.raw
	}
	if err := s.store.SaveMeta(meta); err != nil {
		s.log.Error("saving replica set metadata failed", "err", err)
	}
}

// parseConfig validates a replica-set config document and fills defaults.
func (s *Server) parseConfig(raw bson.Raw) (*replConfig, error) {
	c := &replConfig{electionTimeout: DefaultElectionTimeout, heartbeatInterval: DefaultHeartbeatInterval, version: 1}
	c.name, _ = raw.Lookup("_id").StringValueOK()
	if c.name != s.opts.ReplSet {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "Attempting to initiate a replica set with name %s, but command line reports %s; rejecting", c.name, s.opts.ReplSet)
	}
	if v, ok := raw.Lookup("version").AsInt64OK(); ok {
		c.version = v
	}
	arr, ok := raw.Lookup("members").ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "replica set configuration must have a non-empty members array")
	}
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "members must be documents")
		}
		m := memberConfig{votes: 1}
		id, _ := bson.Raw(d).Lookup("_id").AsInt64OK()
		m.id = int(id)
		m.host, _ = bson.Raw(d).Lookup("host").StringValueOK()
		if vts, ok := bson.Raw(d).Lookup("votes").AsInt64OK(); ok {
			m.votes = int(vts)
		}
		if m.host == "" {
			return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "member %d has no host", m.id)
		}
		if slices.ContainsFunc(c.members, func(o memberConfig) bool { return o.id == m.id || o.host == m.host }) {
			return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "duplicate member _id or host: %d %s", m.id, m.host)
		}
		c.members = append(c.members, m)
	}
	if ms, ok := raw.Lookup("settings", "electionTimeoutMillis").AsInt64OK(); ok && ms > 0 {
		c.electionTimeout = time.Duration(ms) * time.Millisecond
	}
	if ms, ok := raw.Lookup("settings", "heartbeatIntervalMillis").AsInt64OK(); ok && ms > 0 {
		c.heartbeatInterval = time.Duration(ms) * time.Millisecond
	}
	// Store the normalised config so every member reports the same one.
	members := bson.A{}
	for _, m := range c.members {
		members = append(members, bson.D{{Key: "_id", Value: int32(m.id)}, {Key: "host", Value: m.host},
			{Key: "arbiterOnly", Value: false}, {Key: "buildIndexes", Value: true}, {Key: "hidden", Value: false},
			{Key: "priority", Value: 1.0}, {Key: "tags", Value: bson.D{}}, {Key: "secondaryDelaySecs", Value: int64(0)},
			{Key: "votes", Value: int32(m.votes)}})
	}
	c.raw, _ = bson.Marshal(bson.D{{Key: "_id", Value: c.name}, {Key: "version", Value: int32(c.version)}, {Key: "term", Value: int32(0)},
		{Key: "protocolVersion", Value: int64(1)}, {Key: "writeConcernMajorityJournalDefault", Value: true},
		{Key: "members", Value: members},
		{Key: "settings", Value: bson.D{{Key: "chainingAllowed", Value: true},
			{Key: "heartbeatIntervalMillis", Value: int32(c.heartbeatInterval / time.Millisecond)},
			{Key: "heartbeatTimeoutSecs", Value: int32(10)},
			{Key: "electionTimeoutMillis", Value: int32(c.electionTimeout / time.Millisecond)},
			{Key: "catchUpTimeoutMillis", Value: int32(-1)}}}})
	return c, nil
}

// isSelf reports whether a configured host names this member.
func (s *Server) isSelf(host string) bool {
	if host == s.addr {
		return true
	}
	h, p, err := net.SplitHostPort(host)
	mh, mp, _ := net.SplitHostPort(s.addr)
	return err == nil && p == mp && isLoopback(h) && isLoopback(mh)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// adoptConfigLocked installs a config that names this member.
func (s *Server) adoptConfigLocked(raw bson.Raw, persist bool) error {
	c, err := s.parseConfig(raw)
	if err != nil {
		return err
	}
	r := s.repl
	self := -1
	for _, m := range c.members {
		if s.isSelf(m.host) {
			self = m.id
		}
	}
	if self < 0 {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, "No host described in new configuration with {version: %d, term: 0} for replica set %s maps to this node", c.version, c.name)
	}
	r.cfg, r.selfID = c, self
	for id, p := range r.peers {
		if m, ok := c.member(id); !ok || m.host != p.host {
			p.hb.Close()
			delete(r.peers, id)
		}
	}
	for _, m := range c.members {
		if m.id != self && r.peers[m.id] == nil {
			r.peers[m.id] = &peer{id: m.id, host: m.host, hb: &wire.Client{Addr: m.host}, state: stateStartup}
		}
	}
	if r.state == stateStartup {
		r.state = stateSecondary
	}
	r.notifyTopology()
	if persist {
		s.saveMetaLocked()
	}
	r.kickHeartbeats()
	return nil
}

// startReplication starts the member's background replication work.
func (s *Server) startReplication() {
	for _, f := range []func(){s.heartbeatLoop, s.electionLoop, s.fetchLoop} {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); f() }()
	}
}

func (s *Server) heartbeatLoop() {
	for {
		s.mu.Lock()
		r := s.repl
		interval := 2 * time.Second
		var peers []*peer
		var req bson.D
		if r.cfg != nil {
			interval = r.cfg.heartbeatInterval
			for _, p := range r.peers {
				peers = append(peers, p)
			}
			req = bson.D{{Key: "replSetHeartbeat", Value: r.cfg.name}, {Key: "configVersion", Value: r.cfg.version},
				{Key: "hbv", Value: int32(1)}, {Key: "from", Value: s.addr}, {Key: "fromId", Value: int32(r.selfID)},
				{Key: "term", Value: r.term}, {Key: "config", Value: r.cfg.raw}, {Key: "$db", Value: "admin"}}
		}
		kick := r.kick
		s.mu.Unlock()
		for _, p := range peers {
			go s.heartbeat(p, req, interval)
		}
		t := time.NewTimer(interval)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-kick:
			t.Stop()
		case <-t.C:
		}
	}
}

func (s *Server) heartbeat(p *peer, req bson.D, interval time.Duration) {
	ctx, cancel := context.WithTimeout(s.ctx, max(interval, 2*time.Second))
	defer cancel()
	start := time.Now()
	reply, err := p.hb.Call(ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repl
	if s.ctx.Err() != nil || r.peers[p.id] != p {
		return
	}
	if err != nil {
		if p.up {
			s.log.Info("heartbeat failed", "peer", p.host, "err", err)
		}
		p.up, p.lastErr = false, err.Error()
		return
	}
	p.up, p.lastErr, p.lastOK, p.pingMs = true, "", time.Now(), time.Since(start).Milliseconds()
	st, _ := reply.Lookup("state").AsInt64OK()
	p.state = memberState(st)
	p.term, _ = reply.Lookup("term").AsInt64OK()
	p.applied = parseOpTime(reply.Lookup("appliedOpTime"))
	if p.term > r.term {
		s.updateTermLocked(p.term, "heartbeat response")
	}
	if p.state == statePrimary && p.term >= r.term && r.state != statePrimary {
		if r.primaryID != p.id {
			r.primaryID = p.id
			r.notifyTopology()
		}
		r.lastPrimaryContact = time.Now()
	}
	if r.state == statePrimary {
		s.advanceProgressLocked(p.id, p.applied)
	}
}

// updateTermLocked moves to a newer term, stepping down a primary.
func (s *Server) updateTermLocked(term int64, why string) {
	r := s.repl
	if term <= r.term {
		return
	}
	r.term = term
	s.saveMetaLocked()
	if r.state == statePrimary {
		s.stepDownLocked("saw a newer term (" + why + ")")
	}
}

func (s *Server) stepDownLocked(why string) {
	r := s.repl
	s.log.Info("stepping down from primary", "reason", why, "term", r.term)
	r.state = stateSecondary
	r.primaryID = -1
	r.lastPrimaryContact = time.Now()
	r.notifyTopology()
	r.notifyCommit()
	r.kickHeartbeats()
}

// electionLoop runs for election when the primary has been silent for the
// election timeout (plus a random offset of up to 15 %, as mongod adds), and
// steps a primary down when it cannot see a majority.
func (s *Server) electionLoop() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// mongod adds a random offset of up to 15 % to every election timeout it
	// schedules; starting at 0 made every secondary of a set fire at once
	// after a primary died, and split votes cost a whole extra timeout.
	offset := rand.Float64() * 0.15
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		r := s.repl
		if r.cfg == nil {
			s.mu.Unlock()
			continue
		}
		now := time.Now()
		timeout := r.cfg.electionTimeout + time.Duration(offset*float64(r.cfg.electionTimeout))
		switch r.state {
		case stateSecondary:
			if r.primaryID >= 0 && now.Sub(r.lastPrimaryContact) > r.cfg.electionTimeout {
				r.primaryID = -1
				r.notifyTopology()
			}
			if !r.electing && now.After(r.stepDownUntil) && now.Sub(r.lastPrimaryContact) > timeout {
				offset = rand.Float64() * 0.15
				r.electing = true
				s.wg.Add(1)
				go func() { defer s.wg.Done(); s.runElection("election timeout") }()
			}
		case statePrimary:
			seen := 1
			for _, p := range r.peers {
				if now.Sub(p.lastOK) < r.cfg.electionTimeout {
					seen++
				}
			}
			if seen < r.cfg.majority() && now.Sub(r.electionDate) > r.cfg.electionTimeout {
				s.stepDownLocked("could not see a majority of the set")
			}
		}
		s.mu.Unlock()
	}
}

// runElection asks the other members for votes in a new term. Like mongod
// it first runs a dry run that changes no one's term, so a member that
// cannot win (its data is stale, say) never disrupts a healthy primary.
func (s *Server) runElection(reason string) {
	defer func() { s.mu.Lock(); s.repl.electing = false; s.mu.Unlock() }()
	s.mu.Lock()
	if s.repl.state != stateSecondary || s.repl.cfg == nil {
		s.mu.Unlock()
		return
	}
	s.repl.lastPrimaryContact = time.Now() // restart the timer whatever happens
	s.mu.Unlock()
	if !s.requestVotes(true) {
		return
	}
	s.mu.Lock()
	r := s.repl
	if r.state != stateSecondary {
		s.mu.Unlock()
		return
	}
	r.term++
	r.voteTerm, r.votedFor = r.term, r.selfID
	s.saveMetaLocked()
	s.mu.Unlock()
	s.log.Info("running for election", "reason", reason)
	s.requestVotes(false)
}

// requestVotes runs one round of replSetRequestVotes for term+1 (dry run) or
// the current term, and becomes primary when a real round wins.
func (s *Server) requestVotes(dryRun bool) bool {
	s.mu.Lock()
	r := s.repl
	term := r.term
	if dryRun {
		term++
	}
	req := bson.D{{Key: "replSetRequestVotes", Value: int32(1)}, {Key: "setName", Value: r.cfg.name}, {Key: "dryRun", Value: dryRun},
		{Key: "term", Value: term}, {Key: "candidateIndex", Value: int64(r.selfID)}, {Key: "configVersion", Value: r.cfg.version},
		{Key: "lastAppliedOpTime", Value: r.lastApplied.doc()}, {Key: "$db", Value: "admin"}}
	var hosts []string
	for _, p := range r.peers {
		if m, _ := r.cfg.member(p.id); m.votes > 0 {
			hosts = append(hosts, p.host)
		}
	}
	need := r.cfg.majority()
	timeout := min(r.cfg.electionTimeout, 5*time.Second)
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	type vote struct {
		granted bool
		term    int64
		reason  string
	}
	votes := make(chan vote, len(hosts))
	for _, h := range hosts {
		go func() {
			c := &wire.Client{Addr: h}
			defer c.Close()
			reply, err := c.Call(ctx, req)
			if err != nil {
				votes <- vote{}
				return
			}
			g, _ := reply.Lookup("voteGranted").BooleanOK()
			t, _ := reply.Lookup("term").AsInt64OK()
			why, _ := reply.Lookup("reason").StringValueOK()
			votes <- vote{granted: g, term: t, reason: h + ": " + why}
		}()
	}
	granted := 1
	var refusals []string
	for range hosts {
		v := <-votes
		if v.granted {
			granted++
		} else {
			refusals = append(refusals, v.reason)
		}
		s.mu.Lock()
		if v.term > r.term && !(dryRun && v.term == term) {
			s.updateTermLocked(v.term, "vote response")
		}
		s.mu.Unlock()
		if granted >= need {
			break
		}
	}
	won := granted >= need
	if dryRun {
		if !won {
			s.log.Info("dry-run election lost", "votes", granted, "needed", need, "refusals", refusals)
		}
		return won
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if won && r.term == term && r.state == stateSecondary && s.ctx.Err() == nil {
		s.becomePrimaryLocked()
		return true
	}
	s.log.Info("election lost", "term", term, "votes", granted, "needed", need)
	return false
}

func (s *Server) becomePrimaryLocked() {
	r := s.repl
	r.state = statePrimary
	r.primaryID = r.selfID
	var oid bson.ObjectID // mongod's OID::fromTerm: 0x7fffffff then the term
	binary.BigEndian.PutUint32(oid[0:4], 0x7fffffff)
	binary.BigEndian.PutUint64(oid[4:12], uint64(r.term))
	r.electionID = oid
	r.electionDate = time.Now()
	r.progress = map[int]opTime{}
	for id, p := range r.peers {
		r.progress[id] = p.applied
	}
	noop, _ := bson.Marshal(bson.D{{Key: "msg", Value: "new primary"}})
	e := s.logLocked(oplogOp{op: "n", ns: "", o: noop}, bson.RawValue{}, 0)
	r.electionTime = e.ot.TS
	_ = s.persistLocked([]oplogEntry{e})
	s.advanceProgressLocked(r.selfID, r.lastApplied)
	r.notifyTopology()
	r.kickHeartbeats()
	s.log.Info("transition to PRIMARY", "term", r.term)
}

// advanceProgressLocked records a member's applied optime on the primary and
// moves the majority commit point.
func (s *Server) advanceProgressLocked(id int, ot opTime) {
	r := s.repl
	if r.cfg == nil {
		return
	}
	if id != r.selfID {
		if cur := r.progress[id]; cur.less(ot) {
			r.progress[id] = ot
		}
	}
	var applied []opTime
	for _, m := range r.cfg.members {
		if m.votes == 0 {
			continue
		}
		if m.id == r.selfID {
			applied = append(applied, r.lastApplied)
		} else {
			applied = append(applied, r.progress[m.id])
		}
	}
	slices.SortFunc(applied, func(a, b opTime) int {
		switch {
		case b.less(a):
			return -1
		case a.less(b):
			return 1
		}
		return 0
	})
	cp := applied[r.cfg.majority()-1]
	if r.commitPoint.less(cp) {
		r.commitPoint = cp
		r.notifyCommit()
	}
	if r.state == statePrimary {
		s.notifyWaitersLocked()
	}
}

// primaryDurableLocked counts the primary's own journaled writes toward the
// majority commit point. In a set of several members the point moves when
// the secondaries report their progress; in a one-member set the primary is
// the whole majority, so its own durable write is committed at once.
func (s *Server) primaryDurableLocked() {
	if s.repl.cfg != nil && s.repl.state == statePrimary {
		s.advanceProgressLocked(s.repl.selfID, s.repl.lastApplied)
	}
}

func (s *Server) notifyWaitersLocked() { s.repl.notifyCommit() }

// topologyVersion is hello's {processId, counter}.
func (s *Server) topologyVersion() bson.D {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bson.D{{Key: "processId", Value: s.processID}, {Key: "counter", Value: s.repl.topoCounter}}
}
