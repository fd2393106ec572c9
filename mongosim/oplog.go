package mongosim

import (
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// opTime orders oplog entries: by term, then by timestamp.
type opTime struct {
	TS bson.Timestamp
	T  int64
}

func (a opTime) less(b opTime) bool {
	if a.T != b.T {
		return a.T < b.T
	}
	return a.TS.Before(b.TS)
}

func (a opTime) isZero() bool { return a.T == 0 && a.TS.T == 0 && a.TS.I == 0 }

func (a opTime) doc() bson.D {
	return bson.D{{Key: "ts", Value: a.TS}, {Key: "t", Value: a.T}}
}

func parseOpTime(v bson.RawValue) opTime {
	d, ok := v.DocumentOK()
	if !ok {
		return opTime{}
	}
	var o opTime
	o.TS.T, o.TS.I, _ = bson.Raw(d).Lookup("ts").TimestampOK()
	o.T, _ = bson.Raw(d).Lookup("t").AsInt64OK()
	return o
}

func (a opTime) wall() time.Time { return time.Unix(int64(a.TS.T), 0) }

// oplogEntry is one replicated operation; raw is the document as stored in
// local.oplog.rs, fetched by secondaries and journaled to Storage.
type oplogEntry struct {
	ot  opTime
	raw bson.Raw
}

// oplogOp is what a write asks the oplog to record.
type oplogOp struct {
	op string // i u d c n
	ns string
	o  bson.Raw
	o2 bson.Raw
}

// sessionRecord remembers the last retryable write of a logical session, so
// a retry after a failover returns the first attempt's result instead of
// applying the write twice (mongod keeps this in config.transactions).
type sessionRecord struct {
	txn int64
	n   int
}

func sessionKey(lsid bson.RawValue) string {
	d, ok := lsid.DocumentOK()
	if !ok {
		return ""
	}
	_, data, ok := bson.Raw(d).Lookup("id").BinaryOK()
	if !ok {
		return ""
	}
	return string(data)
}

// nextTSLocked returns a timestamp after every one this member has used.
func (s *Server) nextTSLocked() bson.Timestamp {
	now := uint32(time.Now().Unix())
	last := s.repl.lastApplied.TS
	if now > last.T {
		return bson.Timestamp{T: now, I: 1}
	}
	return bson.Timestamp{T: last.T, I: last.I + 1}
}

// logLocked records op on the primary: it builds the oplog entry, applies it
// and returns it (callers persist the batch with persistLocked).
func (s *Server) logLocked(op oplogOp, lsid bson.RawValue, txn int64) oplogEntry {
	ot := opTime{TS: s.nextTSLocked(), T: s.repl.term}
	d := bson.D{{Key: "ts", Value: ot.TS}, {Key: "t", Value: ot.T}, {Key: "v", Value: int64(2)},
		{Key: "op", Value: op.op}, {Key: "ns", Value: op.ns}, {Key: "wall", Value: time.Now()}}
	if op.o != nil {
		d = append(d, bson.E{Key: "o", Value: op.o})
	} else {
		d = append(d, bson.E{Key: "o", Value: bson.D{}})
	}
	if op.o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: op.o2})
	}
	if lsid.Type != 0 && txn > 0 {
		d = append(d, bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: txn})
	}
	raw, _ := bson.Marshal(d)
	e := oplogEntry{ot: ot, raw: raw}
	s.applyLocked(e)
	return e
}

// applyLocked applies one oplog entry to the member's data. Application is
// idempotent (inserts upsert), as mongod's oplog application is.
func (s *Server) applyLocked(e oplogEntry) {
	r := s.repl
	raw := e.raw
	op, _ := raw.Lookup("op").StringValueOK()
	ns, _ := raw.Lookup("ns").StringValueOK()
	o, _ := raw.Lookup("o").DocumentOK()
	switch op {
	case "i", "u":
		s.data.coll(ns, true).put(bson.Raw(o))
	case "d":
		if c := s.data.coll(ns, false); c != nil {
			c.remove(bson.Raw(o).Lookup("_id"))
		}
	case "c":
		db, _, _ := cutNS(ns)
		if coll, ok := bson.Raw(o).Lookup("drop").StringValueOK(); ok {
			delete(s.data, db+"."+coll)
		}
		if coll, ok := bson.Raw(o).Lookup("create").StringValueOK(); ok {
			s.data.coll(db+"."+coll, true)
		}
	}
	if k := sessionKey(raw.Lookup("lsid")); k != "" {
		txn, _ := raw.Lookup("txnNumber").AsInt64OK()
		rec := r.sessions[k]
		if txn > rec.txn {
			rec = sessionRecord{txn: txn}
		}
		rec.n++
		r.sessions[k] = rec
	}
	r.oplog = append(r.oplog, e)
	r.lastApplied = e.ot
}

// persistLocked journals entries and wakes oplog readers.
func (s *Server) persistLocked(entries []oplogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	raws := make([]bson.Raw, len(entries))
	for i, e := range entries {
		raws[i] = e.raw
	}
	s.repl.notifyOplog()
	if err := s.store.Append(raws); err != nil {
		s.log.Error("journal write failed", "err", err)
		return mongoerr.New(1, "journal write failed: %v", err)
	}
	s.primaryDurableLocked()
	return nil
}

// oplogFrom returns the entries with ts >= from (or > when strict).
func (r *replState) oplogFrom(from bson.Timestamp, strict bool) []oplogEntry {
	i := sort.Search(len(r.oplog), func(i int) bool {
		ts := r.oplog[i].ot.TS
		if strict {
			return from.Before(ts)
		}
		return !ts.Before(from)
	})
	return r.oplog[i:]
}

func cutNS(ns string) (db, coll string, ok bool) {
	for i := 0; i < len(ns); i++ {
		if ns[i] == '.' {
			return ns[:i], ns[i+1:], true
		}
	}
	return ns, "", false
}
