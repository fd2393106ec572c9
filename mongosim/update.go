package mongosim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// cmdUpdate supports replacement updates and $set/$inc, with upsert and
// multi: what canaries and $merge forwarding send.
func (s *Server) cmdUpdate(r *request) (bson.D, error) {
	coll := r.str("update")
	ns := r.db + "." + coll
	updates := r.seqs["updates"]
	if updates == nil {
		arr, _ := r.body.Lookup("updates").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				updates = append(updates, bson.Raw(d))
			}
		}
	}
	lsid := r.body.Lookup("lsid")
	txn, _ := r.body.Lookup("txnNumber").AsInt64OK()
	s.counters.update.Add(int64(len(updates)))
	s.mu.Lock()
	if s.repl.state != statePrimary {
		s.mu.Unlock()
		return nil, s.checkState(r, writeCmd)
	}
	if k := sessionKey(lsid); k != "" && txn > 0 && s.repl.sessions[k].txn == txn {
		ot := s.repl.lastApplied
		s.mu.Unlock()
		return s.writeReply(r, bson.D{{Key: "n", Value: int32(s.repl.sessions[k].n)}, {Key: "nModified", Value: int32(0)}}, ot), nil
	}
	var entries []oplogEntry
	n, modified := 0, 0
	upserted := bson.A{}
	writeErrors := bson.A{}
	for i, u := range updates {
		q, _ := u.Lookup("q").DocumentOK()
		mod, _ := u.Lookup("u").DocumentOK()
		upsert, _ := u.Lookup("upsert").BooleanOK()
		multi, _ := u.Lookup("multi").BooleanOK()
		f, err := query.CompileFilter(bson.Raw(q))
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		var targets []bson.Raw
		if c := s.data.coll(ns, false); c != nil {
			if id, ok := query.IDEquality(bson.Raw(q)); ok {
				if d, found := c.get(id); found {
					targets = append(targets, d)
				}
			} else {
				for _, d := range c.snapshot() {
					if f.Match(d) {
						targets = append(targets, d)
						if !multi {
							break
						}
					}
				}
			}
		}
		if len(targets) == 0 && upsert {
			base := equalityFields(bson.Raw(q))
			doc, err := applyUpdate(base, bson.Raw(mod))
			if err != nil {
				writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: err.Code}, {Key: "errmsg", Value: err.Msg}})
				break
			}
			if doc.Lookup("_id").Type == 0 {
				doc = prependID(doc, bson.NewObjectID())
			}
			entries = append(entries, s.logLocked(oplogOp{op: "i", ns: ns, o: doc}, lsid, txn))
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: doc.Lookup("_id")}})
			n++
			continue
		}
		for _, t := range targets {
			doc, err := applyUpdate(t, bson.Raw(mod))
			if err != nil {
				writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: err.Code}, {Key: "errmsg", Value: err.Msg}})
				break
			}
			doc = withID(doc, t.Lookup("_id"))
			n++
			if string(doc) != string(t) {
				modified++
				entries = append(entries, s.logLocked(oplogOp{op: "u", ns: ns, o: doc, o2: idDoc(doc)}, lsid, txn))
			}
		}
	}
	err := s.persistLocked(entries)
	ot := s.repl.lastApplied
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	reply := bson.D{{Key: "n", Value: int32(n)}, {Key: "nModified", Value: int32(modified)}}
	if len(upserted) > 0 {
		reply = append(reply, bson.E{Key: "upserted", Value: upserted})
	}
	if len(writeErrors) > 0 {
		reply = append(reply, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	return s.writeReply(r, reply, ot), nil
}

// equalityFields is the document an upsert starts from: the query's plain
// equality fields.
func equalityFields(q bson.Raw) bson.Raw {
	out := bson.D{}
	elems, _ := q.Elements()
	for _, e := range elems {
		if strings.HasPrefix(e.Key(), "$") || strings.Contains(e.Key(), ".") {
			continue
		}
		if d, ok := e.Value().DocumentOK(); ok {
			if first, err := bson.Raw(d).IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
				continue
			}
		}
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	b, _ := bson.Marshal(out)
	return b
}

// applyUpdate applies a replacement or a $set/$inc modifier to doc.
func applyUpdate(doc, mod bson.Raw) (bson.Raw, *mongoerr.Error) {
	first, err := mod.IndexErr(0)
	if err != nil || !strings.HasPrefix(first.Key(), "$") {
		id := doc.Lookup("_id")
		if id.Type != 0 {
			return withID(mod, id), nil
		}
		return mod, nil
	}
	elems, _ := mod.Elements()
	out := bson.Raw(doc)
	for _, e := range elems {
		fields, ok := e.Value().DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s instead", e.Value().Type)
		}
		fe, _ := bson.Raw(fields).Elements()
		for _, f := range fe {
			v := f.Value()
			switch e.Key() {
			case "$set":
			case "$inc":
				cur := query.Lookup(out, f.Key())
				if cur.Type != 0 && !query.IsNumber(cur) {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "Cannot apply $inc to a value of non-numeric type")
				}
				v = addNumbers(cur, v)
			default:
				return nil, mongoerr.New(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", e.Key())
			}
			add, _ := bson.Marshal(bson.D{{Key: f.Key(), Value: v}})
			out = mergeDocs(out, add)
		}
	}
	return out, nil
}

func addNumbers(a, b bson.RawValue) bson.RawValue {
	if a.Type == 0 {
		return b
	}
	if a.Type == bson.TypeDouble || b.Type == bson.TypeDouble {
		return query.Double(query.Float(a) + query.Float(b))
	}
	x, _ := a.AsInt64OK()
	y, _ := b.AsInt64OK()
	if a.Type == bson.TypeInt32 && b.Type == bson.TypeInt32 && x+y == int64(int32(x+y)) {
		return query.Int32(int32(x + y))
	}
	return query.Int64(x + y)
}
