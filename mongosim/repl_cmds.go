package mongosim

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// checkState refuses commands the member's replication state does not allow,
// with mongod's codes: writes need the primary; reads on a secondary need
// secondaryOk; a member that is neither serves no reads.
func (s *Server) checkState(r *request, kind cmdKind) error {
	if kind == anyState || s.standalone() {
		return nil
	}
	s.mu.Lock()
	st := s.repl.state
	s.mu.Unlock()
	if r.db == "local" && kind == readCmd {
		return nil
	}
	switch {
	case st == statePrimary:
		return nil
	case kind == writeCmd:
		e := mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
		if r.body.Lookup("txnNumber").Type != 0 {
			e = e.WithLabels("RetryableWriteError")
		}
		return e
	case st == stateSecondary && (r.secondaryOk || r.name == "getMore" || r.name == "killCursors"):
		return nil
	case st == stateSecondary:
		return mongoerr.New(mongoerr.NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false")
	}
	return mongoerr.New(mongoerr.NotPrimaryOrSecondary, "node is not in primary or recovering state")
}

// clusterTimeFields are the $clusterTime and operationTime a replica-set
// member appends to every reply.
func (s *Server) clusterTimeFields() bson.D {
	if s.standalone() {
		return nil
	}
	s.mu.Lock()
	ts := s.repl.lastApplied.TS
	s.mu.Unlock()
	return bson.D{
		{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: ts},
			{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}},
		{Key: "operationTime", Value: ts},
	}
}

func (s *Server) cmdHello(r *request) (bson.D, error) {
	if client, ok := r.body.Lookup("client").DocumentOK(); ok {
		app, _ := bson.Raw(client).Lookup("application", "name").StringValueOK()
		r.conn.mu.Lock()
		if r.conn.client == nil {
			r.conn.client = append(bson.Raw(nil), client...)
			r.conn.appName = app
		}
		r.conn.mu.Unlock()
	}
	if tv := r.body.Lookup("topologyVersion"); tv.Type != 0 {
		if ms, ok := r.body.Lookup("maxAwaitTimeMS").AsInt64OK(); ok {
			s.waitTopologyChange(tv, time.Duration(ms)*time.Millisecond)
		}
	}
	return s.helloReply(r), nil
}

// waitTopologyChange blocks an awaitable hello until the member's topology
// version moves past tv or maxAwait passes.
func (s *Server) waitTopologyChange(tv bson.RawValue, maxAwait time.Duration) {
	d, ok := tv.DocumentOK()
	if !ok {
		return
	}
	pid, _ := bson.Raw(d).Lookup("processId").ObjectIDOK()
	counter, _ := bson.Raw(d).Lookup("counter").AsInt64OK()
	s.mu.Lock()
	if pid != s.processID || counter != s.repl.topoCounter {
		s.mu.Unlock()
		return
	}
	ch := s.repl.topoChanged
	s.mu.Unlock()
	t := time.NewTimer(maxAwait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-s.ctx.Done():
	}
}

// awaitHello produces the next reply of an exhaust hello stream.
func (s *Server) awaitHello(r *request, tv bson.RawValue) ([]byte, bool) {
	ms, _ := r.body.Lookup("maxAwaitTimeMS").AsInt64OK()
	s.waitTopologyChange(tv, time.Duration(ms)*time.Millisecond)
	return s.finishReply(s.helloReply(r), nil), true
}

func (s *Server) helloReply(req *request) bson.D {
	legacy := req.name != "hello"
	writableKey := "isWritablePrimary"
	if legacy {
		writableKey = "ismaster"
	}
	s.mu.Lock()
	r := s.repl
	d := bson.D{{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: s.processID}, {Key: "counter", Value: r.topoCounter}}}}
	switch {
	case s.standalone():
		d = append(d, bson.E{Key: writableKey, Value: true})
	case r.cfg == nil:
		d = append(d, bson.E{Key: writableKey, Value: false}, bson.E{Key: "secondary", Value: false},
			bson.E{Key: "info", Value: "Does not have a valid replica set config"}, bson.E{Key: "isreplicaset", Value: true})
	default:
		hosts := bson.A{}
		me := s.addr
		primary := ""
		for _, m := range r.cfg.members {
			hosts = append(hosts, m.host)
			if m.id == r.selfID {
				me = m.host
			}
			if m.id == r.primaryID {
				primary = m.host
			}
		}
		d = append(d, bson.E{Key: "hosts", Value: hosts}, bson.E{Key: "setName", Value: r.cfg.name},
			bson.E{Key: "setVersion", Value: int32(r.cfg.version)},
			bson.E{Key: writableKey, Value: r.state == statePrimary},
			bson.E{Key: "secondary", Value: r.state == stateSecondary})
		if primary != "" {
			d = append(d, bson.E{Key: "primary", Value: primary})
		}
		d = append(d, bson.E{Key: "me", Value: me})
		if r.state == statePrimary {
			d = append(d, bson.E{Key: "electionId", Value: r.electionID})
		}
		d = append(d, bson.E{Key: "lastWrite", Value: bson.D{
			{Key: "opTime", Value: r.lastApplied.doc()}, {Key: "lastWriteDate", Value: r.lastApplied.wall()},
			{Key: "majorityOpTime", Value: r.commitPoint.doc()}, {Key: "majorityWriteDate", Value: r.commitPoint.wall()}}})
	}
	s.mu.Unlock()
	d = append(d,
		bson.E{Key: "maxBsonObjectSize", Value: int32(16777216)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(100000)},
		bson.E{Key: "localTime", Value: time.Now()},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
		bson.E{Key: "connectionId", Value: int32(req.conn.id)},
		bson.E{Key: "minWireVersion", Value: int32(0)},
		bson.E{Key: "maxWireVersion", Value: int32(MaxWireVersion)},
		bson.E{Key: "readOnly", Value: false},
	)
	if s.opts.ClusterRole == RoleConfigServer {
		d = append(d, bson.E{Key: "configsvr", Value: int32(2)})
	}
	if ok, _ := req.body.Lookup("helloOk").BooleanOK(); ok {
		d = append(d, bson.E{Key: "helloOk", Value: true})
	}
	return d
}

func (s *Server) cmdReplSetInitiate(r *request) (bson.D, error) {
	if s.standalone() {
		return nil, mongoerr.New(76, "This node was not started with replication enabled.")
	}
	cfg := r.doc("replSetInitiate")
	if cfg == nil {
		cfg, _ = bson.Marshal(bson.D{{Key: "_id", Value: s.opts.ReplSet}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: s.addr}}}}})
	}
	s.mu.Lock()
	if s.repl.cfg != nil {
		s.mu.Unlock()
		return nil, mongoerr.New(mongoerr.AlreadyInitialized, "already initialized")
	}
	if err := s.adoptConfigLocked(cfg, true); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	msg, _ := bson.Marshal(bson.D{{Key: "msg", Value: "initiating set"}})
	e := s.logLocked(oplogOp{op: "n", o: msg}, bson.RawValue{}, 0)
	_ = s.persistLocked([]oplogEntry{e})
	s.mu.Unlock()
	s.log.Info("replSetInitiate", "config", cfg.String())
	// The initiating member stands for election as soon as the others have
	// its config (they get it with its heartbeats).
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for range 20 {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			s.mu.Lock()
			done := s.repl.primaryID >= 0 || s.repl.electing
			if !done {
				s.repl.electing = true
			}
			s.mu.Unlock()
			if !done {
				s.runElection("replSetInitiate")
			}
			s.mu.Lock()
			done = s.repl.primaryID >= 0
			s.mu.Unlock()
			if done {
				return
			}
		}
	}()
	return bson.D{}, nil
}

func (s *Server) cmdReplSetHeartbeat(r *request) (bson.D, error) {
	if s.standalone() {
		return nil, mongoerr.New(76, "not running with --replSet")
	}
	if name := r.str("replSetHeartbeat"); name != s.opts.ReplSet {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "Our set name of %s does not match name %s reported by remote node", s.opts.ReplSet, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repl
	if cfg := r.doc("config"); cfg != nil {
		v, _ := cfg.Lookup("version").AsInt64OK()
		if rs.cfg == nil || v > rs.cfg.version {
			if err := s.adoptConfigLocked(cfg, true); err != nil {
				s.log.Warn("could not adopt config from heartbeat", "err", err)
			}
		}
	}
	if t, ok := r.body.Lookup("term").AsInt64OK(); ok && t > rs.term {
		s.updateTermLocked(t, "heartbeat request")
	}
	if rs.primaryID < 0 && rs.state != statePrimary {
		// A member that knows no primary asks everyone at once rather than
		// waiting out its interval: the sender may be a new primary.
		rs.kickHeartbeats()
	}
	d := bson.D{{Key: "set", Value: s.opts.ReplSet}, {Key: "state", Value: int32(rs.state)}, {Key: "term", Value: rs.term},
		{Key: "appliedOpTime", Value: rs.lastApplied.doc()}, {Key: "durableOpTime", Value: rs.lastApplied.doc()}}
	if rs.cfg != nil {
		d = append(d, bson.E{Key: "configVersion", Value: int32(rs.cfg.version)})
	}
	if rs.state == statePrimary {
		d = append(d, bson.E{Key: "electionTime", Value: rs.electionTime})
	}
	return d, nil
}

func (s *Server) cmdReplSetRequestVotes(r *request) (bson.D, error) {
	term, _ := r.body.Lookup("term").AsInt64OK()
	cand, _ := r.body.Lookup("candidateIndex").AsInt64OK()
	dryRun, _ := r.body.Lookup("dryRun").BooleanOK()
	last := parseOpTime(r.body.Lookup("lastAppliedOpTime"))
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repl
	reply := func(granted bool, reason string) (bson.D, error) {
		return bson.D{{Key: "term", Value: rs.term}, {Key: "voteGranted", Value: granted}, {Key: "reason", Value: reason}}, nil
	}
	if rs.cfg == nil {
		return reply(false, "not yet initialized")
	}
	if term < rs.term {
		return reply(false, "candidate's term is lower than mine")
	}
	if dryRun {
		// A dry run votes for term+1 without moving anyone's term. Like
		// mongod's, a voter refuses only for the candidate's term, config
		// or data, never because it still hears from a primary: a voter
		// whose timer happened to be refreshed a moment later than the
		// candidate's turned elections under load into two or three
		// timeouts. A candidate only runs once it has not heard from a
		// primary for the election timeout.
		if last.less(rs.lastApplied) {
			return reply(false, "candidate's data is staler than mine")
		}
		return reply(true, "")
	}
	s.updateTermLocked(term, "vote request")
	if rs.voteTerm == term && rs.votedFor != int(cand) {
		return reply(false, "already voted for another candidate in this term")
	}
	if last.less(rs.lastApplied) {
		return reply(false, "candidate's data is staler than mine")
	}
	rs.voteTerm, rs.votedFor = term, int(cand)
	rs.lastPrimaryContact = time.Now()
	s.saveMetaLocked()
	return reply(true, "")
}

func (s *Server) cmdReplSetUpdatePosition(r *request) (bson.D, error) {
	arr, _ := r.body.Lookup("optimes").ArrayOK()
	vals, _ := arr.Values()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		id, _ := bson.Raw(d).Lookup("memberId").AsInt64OK()
		ot := parseOpTime(bson.Raw(d).Lookup("appliedOpTime"))
		if s.repl.state == statePrimary {
			s.advanceProgressLocked(int(id), ot)
		}
		if p := s.repl.peers[int(id)]; p != nil && p.applied.less(ot) {
			p.applied = ot
		}
	}
	return bson.D{}, nil
}

func (s *Server) cmdReplSetStepDown(r *request) (bson.D, error) {
	secs, ok := r.body.Lookup("replSetStepDown").AsInt64OK()
	if !ok {
		secs = 60
	}
	force, _ := r.body.Lookup("force").BooleanOK()
	catchUp := 10 * time.Second
	if c, ok := r.body.Lookup("secondaryCatchUpPeriodSecs").AsInt64OK(); ok {
		catchUp = time.Duration(c) * time.Second
	}
	deadline := time.Now().Add(catchUp)
	for {
		s.mu.Lock()
		rs := s.repl
		if rs.state != statePrimary {
			s.mu.Unlock()
			return nil, mongoerr.New(mongoerr.NotWritablePrimary, "not primary so can't step down")
		}
		best, bestHost := opTime{}, ""
		for _, p := range rs.peers {
			if p.up && p.state == stateSecondary && !p.applied.less(best) {
				best, bestHost = p.applied, p.host
			}
		}
		caughtUp := bestHost != "" && !best.less(rs.lastApplied)
		if caughtUp || force || time.Now().After(deadline) {
			if !caughtUp && !force {
				s.mu.Unlock()
				return nil, mongoerr.New(mongoerr.ExceededTimeLimit, "No electable secondaries caught up as of %s", time.Now().Format(time.RFC3339))
			}
			s.stepDownLocked("replSetStepDown command")
			rs.stepDownUntil = time.Now().Add(time.Duration(secs) * time.Second)
			s.mu.Unlock()
			if bestHost != "" {
				// mongod nominates the most caught-up secondary to stand at once.
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					c := &wire.Client{Addr: bestHost}
					defer c.Close()
					_, _ = c.Call(ctx, bson.D{{Key: "replSetStepUp", Value: int32(1)}, {Key: "$db", Value: "admin"}})
				}()
			}
			return bson.D{}, nil
		}
		ch := rs.commitChange
		s.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-r.op.Killed():
			return nil, r.op.CheckForInterrupt()
		}
	}
}

func (s *Server) cmdReplSetStepUp(r *request) (bson.D, error) {
	s.mu.Lock()
	rs := s.repl
	if rs.state != stateSecondary || rs.electing {
		s.mu.Unlock()
		return nil, mongoerr.New(mongoerr.NotPrimaryOrSecondary, "cannot step up from state %s", rs.state)
	}
	rs.electing = true
	s.mu.Unlock()
	s.runElection("replSetStepUp")
	return bson.D{}, nil
}

func (s *Server) cmdReplSetGetConfig(r *request) (bson.D, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repl.cfg == nil {
		return nil, mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	return bson.D{{Key: "config", Value: s.repl.cfg.raw}}, nil
}

func (s *Server) cmdReplSetGetStatus(r *request) (bson.D, error) {
	if s.standalone() {
		return nil, mongoerr.New(76, "not running with --replSet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repl
	if rs.cfg == nil {
		return nil, mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	now := time.Now()
	members := bson.A{}
	syncSource := ""
	for _, m := range rs.cfg.members {
		var d bson.D
		if m.id == rs.selfID {
			d = bson.D{{Key: "_id", Value: int32(m.id)}, {Key: "name", Value: m.host}, {Key: "health", Value: 1.0},
				{Key: "state", Value: int32(rs.state)}, {Key: "stateStr", Value: rs.state.String()},
				{Key: "uptime", Value: int32(now.Sub(s.started) / time.Second)},
				{Key: "optime", Value: rs.lastApplied.doc()}, {Key: "optimeDate", Value: rs.lastApplied.wall()},
				{Key: "lastAppliedWallTime", Value: rs.lastApplied.wall()}, {Key: "lastDurableWallTime", Value: rs.lastApplied.wall()},
				{Key: "syncSourceHost", Value: ""}, {Key: "syncSourceId", Value: int32(-1)}, {Key: "infoMessage", Value: ""}}
			if rs.state == statePrimary {
				d = append(d, bson.E{Key: "electionTime", Value: rs.electionTime}, bson.E{Key: "electionDate", Value: rs.electionDate})
			} else if p := rs.peers[rs.primaryID]; p != nil {
				syncSource = p.host
			}
			d = append(d, bson.E{Key: "configVersion", Value: int32(rs.cfg.version)}, bson.E{Key: "configTerm", Value: rs.term},
				bson.E{Key: "self", Value: true}, bson.E{Key: "lastHeartbeatMessage", Value: ""})
		} else {
			p := rs.peers[m.id]
			health, state := 0.0, stateDown
			if p.up {
				health, state = 1.0, p.state
			}
			d = bson.D{{Key: "_id", Value: int32(m.id)}, {Key: "name", Value: m.host}, {Key: "health", Value: health},
				{Key: "state", Value: int32(state)}, {Key: "stateStr", Value: state.String()},
				{Key: "uptime", Value: int32(0)},
				{Key: "optime", Value: p.applied.doc()}, {Key: "optimeDurable", Value: p.applied.doc()},
				{Key: "optimeDate", Value: p.applied.wall()}, {Key: "optimeDurableDate", Value: p.applied.wall()},
				{Key: "lastAppliedWallTime", Value: p.applied.wall()}, {Key: "lastDurableWallTime", Value: p.applied.wall()},
				{Key: "lastHeartbeat", Value: now}, {Key: "lastHeartbeatRecv", Value: p.lastOK},
				{Key: "pingMs", Value: p.pingMs}, {Key: "lastHeartbeatMessage", Value: p.lastErr},
				{Key: "syncSourceHost", Value: ""}, {Key: "syncSourceId", Value: int32(-1)}, {Key: "infoMessage", Value: ""},
				{Key: "configVersion", Value: int32(rs.cfg.version)}, {Key: "configTerm", Value: p.term}}
		}
		members = append(members, d)
	}
	votes := 0
	for _, m := range rs.cfg.members {
		votes += m.votes
	}
	optimes := bson.D{
		{Key: "lastCommittedOpTime", Value: rs.commitPoint.doc()}, {Key: "lastCommittedWallTime", Value: rs.commitPoint.wall()},
		{Key: "readConcernMajorityOpTime", Value: rs.commitPoint.doc()}, {Key: "readConcernMajorityWallTime", Value: rs.commitPoint.wall()},
		{Key: "appliedOpTime", Value: rs.lastApplied.doc()}, {Key: "writtenOpTime", Value: rs.lastApplied.doc()},
		{Key: "durableOpTime", Value: rs.lastApplied.doc()}, {Key: "lastAppliedWallTime", Value: rs.lastApplied.wall()},
		{Key: "lastWrittenWallTime", Value: rs.lastApplied.wall()}, {Key: "lastDurableWallTime", Value: rs.lastApplied.wall()},
	}
	return bson.D{{Key: "set", Value: rs.cfg.name}, {Key: "date", Value: now}, {Key: "myState", Value: int32(rs.state)},
		{Key: "term", Value: rs.term}, {Key: "syncSourceHost", Value: syncSource}, {Key: "syncSourceId", Value: int32(-1)},
		{Key: "heartbeatIntervalMillis", Value: int64(rs.cfg.heartbeatInterval / time.Millisecond)},
		{Key: "majorityVoteCount", Value: int32(rs.cfg.majority())}, {Key: "writeMajorityCount", Value: int32(rs.cfg.majority())},
		{Key: "votingMembersCount", Value: int32(votes)}, {Key: "writableVotingMembersCount", Value: int32(votes)},
		{Key: "optimes", Value: optimes}, {Key: "lastStableRecoveryTimestamp", Value: rs.commitPoint.TS},
		{Key: "members", Value: members}}, nil
}
