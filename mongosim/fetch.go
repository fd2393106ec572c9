package mongosim

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/query"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// fetchLoop is a secondary's oplog fetcher: it tails the primary's
// local.oplog.rs with an awaitData find, applies what it gets, and reports
// its position so the primary can satisfy w:majority. A secondary whose last
// entry is missing from the source's oplog has diverged (it was a primary
// whose writes never reached a majority); it resyncs from scratch, which is
// how this simulator does rollback.
func (s *Server) fetchLoop() {
	fetch := &wire.Client{}
	report := &wire.Client{}
	defer fetch.Close()
	defer report.Close()
	for s.ctx.Err() == nil {
		s.mu.Lock()
		r := s.repl
		var src string
		srcID := -1
		if r.state == stateSecondary && r.primaryID >= 0 {
			if p := r.peers[r.primaryID]; p != nil {
				src, srcID = p.host, p.id
			}
		}
		last, empty := r.lastApplied, len(r.oplog) == 0
		s.mu.Unlock()
		if src == "" {
			sleepCtx(s.ctx, 100*time.Millisecond)
			continue
		}
		if fetch.Addr != src {
			fetch.Close()
			fetch.Addr = src
			report.Close()
			report.Addr = src
		}
		filter := bson.D{}
		if !empty {
			filter = bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: last.TS}}}}
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		reply, err := fetch.Call(ctx, bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "filter", Value: filter},
			{Key: "tailable", Value: true}, {Key: "awaitData", Value: true}, {Key: "maxTimeMS", Value: int64(1000)},
			{Key: "batchSize", Value: int32(5000)}, {Key: "$db", Value: "local"}})
		cancel()
		if err != nil {
			sleepCtx(s.ctx, 200*time.Millisecond)
			continue
		}
		batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
		vals, _ := batch.Values()
		s.mu.Lock()
		if s.ctx.Err() != nil || r.lastApplied != last {
			s.mu.Unlock()
			continue
		}
		if !empty {
			if len(vals) == 0 || entryOpTime(vals[0]) != last {
				s.resyncLocked(src)
				s.mu.Unlock()
				continue
			}
			vals = vals[1:]
		}
		var applied []oplogEntry
		for _, v := range vals {
			raw := bson.Raw(append([]byte(nil), v.Document()...))
			e := oplogEntry{ot: entryOpTime(v), raw: raw}
			s.applyLocked(e)
			applied = append(applied, e)
		}
		_ = s.persistLocked(applied)
		if cp := parseOpTime(reply.Lookup("$replData", "lastOpCommitted")); r.commitPoint.less(cp) {
			if r.lastApplied.less(cp) {
				cp = r.lastApplied
			}
			r.commitPoint = cp
			r.notifyCommit()
		}
		// Only a source that says it is primary counts as hearing from the
		// primary: a restarted old primary answers oplog reads as a
		// secondary, and counting those kept every member from calling an
		// election (found by the reliability suite: no failover, ever).
		if pi, ok := reply.Lookup("$replData", "primaryIndex").AsInt64OK(); ok && int(pi) == srcID {
			r.lastPrimaryContact = time.Now()
		}
		self, pos := r.selfID, r.lastApplied
		s.mu.Unlock()
		if len(applied) > 0 {
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			_, _ = report.Call(ctx, bson.D{{Key: "replSetUpdatePosition", Value: int32(1)},
				{Key: "optimes", Value: bson.A{bson.D{{Key: "memberId", Value: int32(self)}, {Key: "appliedOpTime", Value: pos.doc()},
					{Key: "durableOpTime", Value: pos.doc()}}}}, {Key: "$db", Value: "admin"}})
			cancel()
		}
	}
}

func entryOpTime(v bson.RawValue) opTime {
	d, _ := v.DocumentOK()
	var ot opTime
	ot.TS.T, ot.TS.I, _ = bson.Raw(d).Lookup("ts").TimestampOK()
	ot.T, _ = bson.Raw(d).Lookup("t").AsInt64OK()
	return ot
}

// resyncLocked throws away a diverged member's data and oplog; the next
// fetch copies the source's whole oplog.
func (s *Server) resyncLocked(src string) {
	s.log.Warn("oplog diverged from sync source; rolling back by resync", "source", src, "lastApplied", s.repl.lastApplied)
	s.data = catalog{}
	s.repl.oplog = nil
	s.repl.lastApplied = opTime{}
	s.repl.sessions = map[string]sessionRecord{}
	if err := s.store.Reset(nil); err != nil {
		s.log.Error("resetting the journal failed", "err", err)
	}
}

// findOplog serves a find on local.oplog.rs: a range scan on ts, waiting up
// to maxTimeMS for new entries when the find is tailable+awaitData.
func (s *Server) findOplog(r *request, filter bson.Raw, limit int) (bson.D, error) {
	f, err := query.CompileFilter(filter)
	if err != nil {
		return nil, err
	}
	var from bson.Timestamp
	strict := false
	if t, i, ok := filter.Lookup("ts", "$gte").TimestampOK(); ok {
		from = bson.Timestamp{T: t, I: i}
	} else if t, i, ok := filter.Lookup("ts", "$gt").TimestampOK(); ok {
		from, strict = bson.Timestamp{T: t, I: i}, true
	}
	await, _ := r.body.Lookup("awaitData").BooleanOK()
	wait := time.Second
	if ms, ok := r.body.Lookup("maxTimeMS").AsInt64OK(); ok && ms > 0 {
		wait = min(time.Duration(ms)*time.Millisecond, 5*time.Second)
	}
	deadline := time.Now().Add(wait)
	for {
		s.mu.Lock()
		entries := s.repl.oplogFrom(from, strict)
		var docs []bson.Raw
		for _, e := range entries {
			if len(docs) >= limit {
				break
			}
			if f.Match(e.raw) {
				docs = append(docs, e.raw)
			}
		}
		fresh := len(docs) > 1 || (len(docs) == 1 && (strict || entryOpTime(query.Doc(docs[0])).TS != from))
		ch := s.repl.oplogChanged
		replData := bson.D{{Key: "term", Value: s.repl.term}, {Key: "lastOpCommitted", Value: s.repl.commitPoint.doc()},
			{Key: "primaryIndex", Value: int32(s.repl.primaryID)}}
		s.mu.Unlock()
		if fresh || !await || time.Now().After(deadline) {
			reply := cursorReply("local.oplog.rs", 0, docs, "firstBatch")
			return append(reply, bson.E{Key: "$replData", Value: replData}), nil
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		case <-r.op.Killed():
			return nil, r.op.CheckForInterrupt()
		case <-s.ctx.Done():
			return nil, killError(0)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
