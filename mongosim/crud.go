package mongosim

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

func (s *Server) cmdInsert(r *request) (bson.D, error) {
	coll := r.str("insert")
	if coll == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "collection name has invalid type")
	}
	ns := r.db + "." + coll
	docs := r.seqs["documents"]
	if docs == nil {
		if arr, ok := r.body.Lookup("documents").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					docs = append(docs, bson.Raw(d))
				}
			}
		}
	}
	ordered := true
	if o, ok := r.body.Lookup("ordered").BooleanOK(); ok {
		ordered = o
	}
	lsid := r.body.Lookup("lsid")
	txn, _ := r.body.Lookup("txnNumber").AsInt64OK()
	s.counters.insert.Add(int64(len(docs)))
	if err := s.pointOp(r, true); err != nil {
		return nil, err
	}

	s.mu.Lock()
	if s.repl.state != statePrimary {
		s.mu.Unlock()
		return nil, s.checkState(r, writeCmd)
	}
	if k := sessionKey(lsid); k != "" && txn > 0 {
		if rec := s.repl.sessions[k]; rec.txn == txn {
			// A retry of a write this set already applied.
			ot := s.repl.lastApplied
			s.mu.Unlock()
			return s.writeReply(r, bson.D{{Key: "n", Value: int32(rec.n)}}, ot), nil
		} else if rec.txn > txn {
			s.mu.Unlock()
			return nil, mongoerr.New(225, "Retryable write with txnNumber %d is prohibited on session because a newer retryable write with txnNumber %d has already started on this session.", txn, rec.txn)
		}
	}
	c := s.data.coll(ns, false)
	var entries []oplogEntry
	writeErrors := bson.A{}
	n := 0
	for i, d := range docs {
		doc := bson.Raw(append([]byte(nil), d...))
		id := doc.Lookup("_id")
		if id.Type == 0 {
			oid := bson.NewObjectID()
			doc = prependID(doc, oid)
			id = doc.Lookup("_id")
		}
		if c != nil {
			if _, dup := c.get(id); dup {
				writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: int32(mongoerr.DuplicateKey)},
					{Key: "errmsg", Value: "E11000 duplicate key error collection: " + ns + " index: _id_ dup key: { _id: " + id.String() + " }"}})
				if ordered {
					break
				}
				continue
			}
		}
		entries = append(entries, s.logLocked(oplogOp{op: "i", ns: ns, o: doc}, lsid, txn))
		c = s.data.coll(ns, false)
		n++
	}
	if len(entries) == 0 && txn > 0 {
		// Record the attempt so a retry is recognised even if nothing landed.
		if k := sessionKey(lsid); k != "" {
			s.repl.sessions[k] = sessionRecord{txn: txn}
		}
	}
	err := s.persistLocked(entries)
	ot := s.repl.lastApplied
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	reply := bson.D{{Key: "n", Value: int32(n)}}
	if len(writeErrors) > 0 {
		reply = append(reply, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	return s.writeReply(r, reply, ot), nil
}

func prependID(doc bson.Raw, id bson.ObjectID) bson.Raw {
	elems, _ := doc.Elements()
	d := bson.D{{Key: "_id", Value: id}}
	for _, e := range elems {
		d = append(d, bson.E{Key: e.Key(), Value: e.Value()})
	}
	b, _ := bson.Marshal(d)
	return b
}

// writeReply waits for the write concern and adds writeConcernError when it
// is not met.
func (s *Server) writeReply(r *request, reply bson.D, ot opTime) bson.D {
	if wce := s.waitForWriteConcern(r, ot); wce != nil {
		reply = append(reply, bson.E{Key: "writeConcernError", Value: wce})
		if r.body.Lookup("txnNumber").Type != 0 {
			if code, _ := wce.(bson.D)[0].Value.(int32); code == mongoerr.InterruptedDueToReplStateChange {
				reply = append(reply, bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
			}
		}
	}
	return reply
}

// waitForWriteConcern blocks until ot is acknowledged as the request's write
// concern asks (a replica set's implicit default is w:majority, as since
// mongod 5.0), or wtimeout passes.
func (s *Server) waitForWriteConcern(r *request, ot opTime) any {
	if s.standalone() {
		return nil
	}
	wc := r.doc("writeConcern")
	majority, need := true, 0
	if wc != nil {
		w := wc.Lookup("w")
		if n, ok := w.AsInt64OK(); ok {
			majority, need = false, int(n)
		} else if str, ok := w.StringValueOK(); ok && str != "majority" {
			return bson.D{{Key: "code", Value: int32(79)}, {Key: "codeName", Value: "UnknownReplWriteConcern"}, {Key: "errmsg", Value: "unrecognized write concern mode: " + str}}
		}
	}
	if !majority && need <= 1 {
		return nil
	}
	var deadline <-chan time.Time
	if ms, ok := wc.Lookup("wtimeout").AsInt64OK(); ok && ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	for {
		s.mu.Lock()
		rs := s.repl
		if rs.state != statePrimary {
			s.mu.Unlock()
			return bson.D{{Key: "code", Value: int32(mongoerr.InterruptedDueToReplStateChange)}, {Key: "codeName", Value: "InterruptedDueToReplStateChange"},
				{Key: "errmsg", Value: "operation was interrupted because a node stepped down"}}
		}
		done := false
		if majority {
			done = !rs.commitPoint.less(ot)
		} else {
			acks := 1
			for _, p := range rs.progress {
				if !p.less(ot) {
					acks++
				}
			}
			done = acks >= need
		}
		ch := rs.commitChange
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-deadline:
			return bson.D{{Key: "code", Value: int32(mongoerr.WriteConcernFailed)}, {Key: "codeName", Value: "WriteConcernFailed"},
				{Key: "errmsg", Value: "waiting for replication timed out"}, {Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}}}}
		case <-r.op.Killed():
			return bson.D{{Key: "code", Value: int32(mongoerr.Interrupted)}, {Key: "codeName", Value: "Interrupted"}, {Key: "errmsg", Value: "operation was interrupted"}}
		case <-s.ctx.Done():
			return bson.D{{Key: "code", Value: int32(mongoerr.ShutdownInProgress)}, {Key: "codeName", Value: "ShutdownInProgress"}, {Key: "errmsg", Value: "shutting down"}}
		}
	}
}

// scan returns a snapshot of a collection's documents matching filter.
func (s *Server) scan(ns string, filter bson.Raw) ([]bson.Raw, error) {
	f, err := query.CompileFilter(filter)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	c := s.data.coll(ns, false)
	if c == nil {
		s.mu.Unlock()
		return nil, nil
	}
	if id, ok := query.IDEquality(filter); ok {
		d, found := c.get(id)
		s.mu.Unlock()
		if found {
			return []bson.Raw{d}, nil
		}
		return nil, nil
	}
	all := c.snapshot()
	s.mu.Unlock()
	out := all[:0]
	for _, d := range all {
		if f.Match(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (s *Server) cmdFind(r *request) (bson.D, error) {
	coll := r.str("find")
	filter := r.doc("filter")
	n, _ := r.body.Lookup("batchSize").AsInt64OK()
	limit, _ := r.body.Lookup("limit").AsInt64OK()
	skip, _ := r.body.Lookup("skip").AsInt64OK()
	single, _ := r.body.Lookup("singleBatch").BooleanOK()
	// The find command takes non-negative skip, limit and batchSize (a
	// driver turns a negative limit into limit plus singleBatch itself).
	for name, v := range map[string]int64{"skip": skip, "limit": limit, "batchSize": n} {
		if v < 0 {
			return nil, mongoerr.New(51024, "BSON field '%s' value must be >= 0, actual value '%d'", name, v)
		}
	}
	if r.db == "local" && coll == "oplog.rs" {
		max := 5000
		if n > 0 {
			max = int(n)
		}
		return s.findOplog(r, filter, max)
	}
	s.counters.query.Add(1)
	var keys []query.SortKey
	if spec := r.doc("sort"); len(spec) > 5 {
		var err error
		if keys, err = query.CompileSort(spec); err != nil {
			return nil, err
		}
	}
	var proj *query.Projection
	if spec := r.doc("projection"); len(spec) > 5 {
		var err error
		if proj, err = query.CompileProjection(spec); err != nil {
			return nil, err
		}
	}
	if err := s.pointOp(r, false); err != nil {
		return nil, err
	}
	docs, err := s.scan(r.db+"."+coll, filter)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		query.Sort(docs, keys)
	}
	if skip > 0 {
		docs = docs[min(int(skip), len(docs)):]
	}
	if limit > 0 && int(limit) < len(docs) {
		docs = docs[:limit]
	}
	if proj != nil {
		out := make([]bson.Raw, len(docs))
		for i, d := range docs {
			if out[i], err = proj.Apply(d); err != nil {
				return nil, err
			}
		}
		docs = out
	}
	if n == 0 && !r.body.Lookup("batchSize").IsNumber() {
		n = 101
	}
	return s.replyWithCursor(r, r.db+"."+coll, docs, int(n), single), nil
}

func (s *Server) cmdCount(r *request) (bson.D, error) {
	s.counters.query.Add(1)
	if err := s.pointOp(r, false); err != nil {
		return nil, err
	}
	docs, err := s.scan(r.db+"."+r.str("count"), r.doc("query"))
	if err != nil {
		return nil, err
	}
	n := len(docs)
	if skip, ok := r.body.Lookup("skip").AsInt64OK(); ok && skip > 0 {
		n = max(n-int(skip), 0)
	}
	if limit, ok := r.body.Lookup("limit").AsInt64OK(); ok && limit != 0 {
		if limit < 0 {
			limit = -limit
		}
		n = min(n, int(limit))
	}
	return bson.D{{Key: "n", Value: int32(n)}}, nil
}

func (s *Server) cmdDrop(r *request) (bson.D, error) {
	ns := r.db + "." + r.str("drop")
	s.mu.Lock()
	if s.data.coll(ns, false) == nil {
		s.mu.Unlock()
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns not found")
	}
	o, _ := bson.Marshal(bson.D{{Key: "drop", Value: r.str("drop")}})
	e := s.logLocked(oplogOp{op: "c", ns: r.db + ".$cmd", o: o}, bson.RawValue{}, 0)
	err := s.persistLocked([]oplogEntry{e})
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.writeReply(r, bson.D{{Key: "nIndexesWas", Value: int32(1)}, {Key: "ns", Value: ns}}, e.ot), nil
}

func (s *Server) cmdAggregate(r *request) (bson.D, error) {
	var stages []bson.Raw
	arr, ok := r.body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array")
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		stages = append(stages, bson.Raw(d))
	}
	if r.body.Lookup("cursor").Type == 0 && r.body.Lookup("explain").Type == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	p, err := query.Compile(r.db, stages)
	if err != nil {
		return nil, err
	}
	coll, isColl := r.body.Lookup("aggregate").StringValueOK()
	if !isColl && !p.Collectionless {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for '%s'; a collection is required.", firstStage(p))
	}
	s.counters.query.Add(1)
	ns := r.db + "." + coll
	if !isColl {
		ns = r.db + ".$cmd.aggregate"
	}
	var in []bson.Raw
	if !p.Collectionless {
		s.mu.Lock()
		if c := s.data.coll(ns, false); c != nil {
			in = c.snapshot()
		}
		s.mu.Unlock()
	}
	n, _ := r.body.Lookup("cursor", "batchSize").AsInt64OK()
	if r.body.Lookup("cursor", "batchSize").Type == 0 {
		n = 101
	}
	env := &pipelineEnv{s: s, r: r}
	shape, modelled := s.sim.shapeOf(p, in, int(n))
	hint, hinted, err := shapeHint(r.body)
	if err != nil {
		return nil, err
	}
	if modelled && hinted {
		shape = hint
	}
	cursorID := s.cursor.newID()
	if modelled {
		// The aggregate builds its blocking stage (and spills) as the model
		// says, holding a ticket; its cursor keeps the stage's buffer.
		work := s.sim.params().AggregateWork(shape)
		work.Exhausts = false
		env.modelOp = &model.Op{Kind: model.KindAggregate, Eligible: true, CursorID: cursorID, Work: work,
			ForwardsWrites: p.HasWriteStage() && (!s.IsPrimary() || s.clusterWriter(r) != nil)}
		if !p.HasWriteStage() {
			if err := s.enter(r, env.modelOp); err != nil {
				return nil, err
			}
		}
	}
	// The pipeline runs as the cursor is read: the first batch now, the
	// rest at each getMore (the execution stays with the cursor). A
	// hinted cursor's getMores share the modelled ones by the documents
	// left, so its rest is read now, counted against the operation's
	// memory limit.
	x := p.Open(env, in, s.queryLimits(r))
	first, err := x.Batch(int(n), maxBatchBytes)
	var rest []bson.Raw
	more := false
	if err == nil {
		more, err = x.More()
	}
	if err == nil && more && modelled && hinted && !p.HasWriteStage() {
		rest, err = x.Collect()
	}
	if err != nil {
		if modelled {
			s.sim.killCursor(cursorID)
		}
		return nil, err
	}
	id := int64(0)
	origin := originOf(r, len(first))
	origin.collectionlessPipe = p.Collectionless
	if env.modelOp != nil {
		origin.peakTrackedBytes = s.sim.peakTracked(env.modelOp)
	}
	switch {
	case !more:
		if modelled {
			s.sim.killCursor(cursorID)
		}
	case modelled && hinted && !p.HasWriteStage():
		id = s.cursor.add(&cursor{id: cursorID, ns: ns, docs: rest, shape: &shape, origin: origin,
			hinted: true, works: s.sim.params().GetMoreWorks(shape)}).id
	case modelled && !p.HasWriteStage():
		id = s.cursor.add(&cursor{id: cursorID, ns: ns, exec: x, shape: &shape, origin: origin}).id
	default:
		if modelled {
			s.sim.killCursor(cursorID)
		}
		id = s.cursor.add(&cursor{id: s.cursor.newID(), ns: ns, exec: x, origin: origin}).id
	}
	reply := cursorReply(ns, id, first, "firstBatch")
	if env.wrote {
		return s.writeReply(r, reply, env.ot), nil
	}
	return reply, nil
}

// queryLimits are the memory limits of r's pipeline: the server's
// parameters, and the command's allowDiskUse (allowDiskUseByDefault when
// it says nothing).
func (s *Server) queryLimits(r *request) query.Limits {
	allow, ok := r.body.Lookup("allowDiskUse").BooleanOK()
	if !ok {
		allow = s.params.Bool("allowDiskUseByDefault")
	}
	return query.Limits{
		SortBytes:      s.params.Int("internalQueryMaxBlockingSortMemoryUsageBytes"),
		GroupBytes:     s.params.Int("internalDocumentSourceGroupMaxMemoryBytes"),
		WindowBytes:    s.params.Int("internalDocumentSourceSetWindowFieldsMaxMemoryBytes"),
		PushBytes:      s.params.Int("internalQueryMaxPushBytes"),
		AddToSetBytes:  s.params.Int("internalQueryMaxAddToSetBytes"),
		OperationBytes: s.params.Int("internalQueryMaxMemoryUsageBytesPerOperation"),
		AllowDiskUse:   allow,
	}
}

func firstStage(p *query.Pipeline) string {
	if len(p.Stages) == 0 {
		return "an empty pipeline"
	}
	return p.Stages[0].Name()
}

// pipelineEnv connects a running pipeline to the member.
type pipelineEnv struct {
	s     *Server
	r     *request
	wrote bool
	ot    opTime
	// modelOp, for a modelled $merge/$out, is run batch by batch as the
	// writes happen, so a shed can land after documents were written.
	modelOp *model.Op
}

// mergeBatchDocs is how many documents a $merge/$out writes per batch.
const mergeBatchDocs = 100

// modelWriteBatch runs the model for the k-th write batch of a modelled
// $merge/$out, before that batch is written: batch 0 carries the blocking
// stage's build, later ones only the write stage's checkpoints. A shed
// therefore lands after earlier batches were written (the partial-write investigation), unless
// the op holds the write-intent latch (a local write on the primary) or
// the write-started flag latched it.
func (e *pipelineEnv) modelWriteBatch(k, docs int) error {
	if e.modelOp == nil {
		return nil
	}
	scaled := max(int64(float64(docs)*e.s.sim.scale(e.s)), 128)
	op := &model.Op{Kind: model.KindAggregate, Eligible: true, ForwardsWrites: e.modelOp.ForwardsWrites,
		Work: model.Work{WriteDocs: scaled, CPUPerDoc: model.MergeCPUPerDoc, Stage: e.modelOp.Work.Stage, Exhausts: true,
			StartTracked: max(e.modelOp.Work.HoldBytes, 1)}}
	if k == 0 {
		op.Work = e.modelOp.Work
		op.Work.WriteDocs, op.Work.Exhausts, op.Work.HoldBytes = scaled, true, 0
	}
	e.r.writeBatch, e.r.writing = k, true
	return e.s.enter(e.r, op)
}

func (e *pipelineEnv) Scan(db, coll string) []bson.Raw {
	docs, _ := e.s.scan(db+"."+coll, nil)
	return docs
}

func (e *pipelineEnv) CurrentOp(opts bson.Raw) ([]bson.Raw, error) { return e.s.currentOpStage(opts) }

func (e *pipelineEnv) CheckForInterrupt() error { return e.r.op.CheckForInterrupt() }

// Merge applies $merge. On the primary the writes are local; on a secondary
// they are sent to the primary as update commands, as mongod's
// ReplicaSetNodeProcessInterface does — so the aggregating operation itself
// never takes a write lock (the partial-write investigation).
func (e *pipelineEnv) Merge(spec *query.MergeSpec, docs []bson.Raw) error {
	ns := spec.DB + "." + spec.Coll
	s := e.s
	if cc := s.clusterWriter(e.r); cc != nil {
		return e.routeMerge(cc, spec, docs)
	}
	s.mu.Lock()
	if s.repl.state != statePrimary {
		var primary string
		if p := s.repl.peers[s.repl.primaryID]; p != nil {
			primary = p.host
		}
		s.mu.Unlock()
		if primary == "" {
			return mongoerr.New(mongoerr.NotWritablePrimary, "not primary and no primary known to forward $merge writes to")
		}
		return e.forwardMerge(primary, spec, docs)
	}
	s.mu.Unlock()
	for k := 0; k*mergeBatchDocs < len(docs) || (k == 0 && e.modelOp != nil); k++ {
		chunk := docs[k*mergeBatchDocs : min((k+1)*mergeBatchDocs, len(docs))]
		if err := e.modelWriteBatch(k, len(chunk)); err != nil {
			return err
		}
		if err := e.mergeLocal(spec, ns, chunk); err != nil {
			return err
		}
		if len(chunk) < mergeBatchDocs {
			break
		}
	}
	return nil
}

// mergeLocal writes one batch of $merge output on the primary.
func (e *pipelineEnv) mergeLocal(spec *query.MergeSpec, ns string, docs []bson.Raw) error {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repl.state != statePrimary {
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
	}
	var entries []oplogEntry
	for _, d := range docs {
		if err := e.r.op.CheckForInterrupt(); err != nil {
			_ = s.persistLocked(entries)
			return err
		}
		c := s.data.coll(ns, false)
		var existing bson.Raw
		if c != nil {
			existing = findOn(c, spec.On, d)
		}
		var out bson.Raw
		switch {
		case existing == nil && spec.WhenNotMatched == "discard":
			continue
		case existing == nil && spec.WhenNotMatched == "fail":
			_ = s.persistLocked(entries)
			return mongoerr.New(13113, "$merge could not find a matching document in the target collection for at least one document in the source collection")
		case existing == nil:
			out = d
			if d.Lookup("_id").Type == 0 {
				out = prependID(d, bson.NewObjectID())
			}
		case spec.WhenMatched == "keepExisting":
			continue
		case spec.WhenMatched == "fail":
			_ = s.persistLocked(entries)
			return mongoerr.New(mongoerr.DuplicateKey, "$merge failed due to a DuplicateKey error")
		case spec.WhenMatched == "replace":
			out = withID(d, existing.Lookup("_id"))
		default: // merge
			out = mergeDocs(existing, d)
		}
		entries = append(entries, s.logLocked(oplogOp{op: "u", ns: ns, o: out, o2: idDoc(out)}, bson.RawValue{}, 0))
	}
	e.wrote = e.wrote || len(entries) > 0
	e.ot = s.repl.lastApplied
	return s.persistLocked(entries)
}

func (e *pipelineEnv) forwardMerge(primary string, spec *query.MergeSpec, docs []bson.Raw) error {
	c := &wire.Client{Addr: primary}
	defer c.Close()
	for k := 0; len(docs) > 0; k++ {
		chunk := docs[:min(len(docs), mergeBatchDocs)]
		docs = docs[len(chunk):]
		if err := e.modelWriteBatch(k, len(chunk)); err != nil {
			return err
		}
		updates := bson.A{}
		for _, u := range mergeUpdates(spec, chunk) {
			updates = append(updates, u)
		}
		if err := e.r.op.CheckForInterrupt(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(e.s.ctx, 30*time.Second)
		_, err := c.Call(ctx, bson.D{{Key: "update", Value: spec.Coll}, {Key: "updates", Value: updates},
			{Key: "ordered", Value: true}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "$db", Value: spec.DB}})
		cancel()
		if err != nil {
			return mongoerr.New(mongoerr.NotWritablePrimary, "forwarding $merge writes to the primary failed: %v", err)
		}
	}
	return nil
}

// mergeUpdates are the update statements that write $merge output docs
// on another member.
func mergeUpdates(spec *query.MergeSpec, docs []bson.Raw) []bson.D {
	var out []bson.D
	for _, d := range docs {
		q := bson.D{}
		for _, f := range spec.On {
			q = append(q, bson.E{Key: f, Value: query.Lookup(d, f)})
		}
		var u any = d
		if spec.WhenMatched == "merge" {
			u = bson.D{{Key: "$set", Value: withoutID(d)}}
		}
		out = append(out, bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}, {Key: "upsert", Value: spec.WhenNotMatched == "insert"}})
	}
	return out
}

// Out replaces the target collection with docs ($out).
func (e *pipelineEnv) Out(db, coll string, docs []bson.Raw) error {
	s := e.s
	if cc := s.clusterWriter(e.r); cc != nil {
		return e.routeOut(cc, db, coll, docs)
	}
	if err := e.modelWriteBatch(0, len(docs)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repl.state != statePrimary {
		return mongoerr.New(mongoerr.NotWritablePrimary, "$out on a secondary is not supported by mongosim")
	}
	ns := db + "." + coll
	var entries []oplogEntry
	if s.data.coll(ns, false) != nil {
		o, _ := bson.Marshal(bson.D{{Key: "drop", Value: coll}})
		entries = append(entries, s.logLocked(oplogOp{op: "c", ns: db + ".$cmd", o: o}, bson.RawValue{}, 0))
	}
	o, _ := bson.Marshal(bson.D{{Key: "create", Value: coll}})
	entries = append(entries, s.logLocked(oplogOp{op: "c", ns: db + ".$cmd", o: o}, bson.RawValue{}, 0))
	for _, d := range docs {
		if d.Lookup("_id").Type == 0 {
			d = prependID(d, bson.NewObjectID())
		}
		entries = append(entries, s.logLocked(oplogOp{op: "i", ns: ns, o: d}, bson.RawValue{}, 0))
	}
	e.wrote, e.ot = true, s.repl.lastApplied
	return s.persistLocked(entries)
}

func findOn(c *collection, on []string, d bson.Raw) bson.Raw {
	if len(on) == 1 && on[0] == "_id" {
		id := d.Lookup("_id")
		if id.Type == 0 {
			return nil
		}
		doc, _ := c.get(id)
		return doc
	}
	for _, cand := range c.snapshot() {
		match := true
		for _, f := range on {
			if query.Compare(query.Lookup(cand, f), query.Lookup(d, f)) != 0 {
				match = false
				break
			}
		}
		if match {
			return cand
		}
	}
	return nil
}

func idDoc(d bson.Raw) bson.Raw {
	b, _ := bson.Marshal(bson.D{{Key: "_id", Value: d.Lookup("_id")}})
	return b
}

func withID(d bson.Raw, id bson.RawValue) bson.Raw {
	out := bson.D{{Key: "_id", Value: id}}
	elems, _ := d.Elements()
	for _, e := range elems {
		if e.Key() != "_id" {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	b, _ := bson.Marshal(out)
	return b
}

func withoutID(d bson.Raw) bson.D {
	out := bson.D{}
	elems, _ := d.Elements()
	for _, e := range elems {
		if e.Key() != "_id" {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	return out
}

// mergeDocs overlays src's top-level fields on dst.
func mergeDocs(dst, src bson.Raw) bson.Raw {
	out := bson.D{}
	seen := map[string]bool{}
	elems, _ := dst.Elements()
	for _, e := range elems {
		v := e.Value()
		if sv := src.Lookup(e.Key()); sv.Type != 0 && e.Key() != "_id" {
			v = sv
		}
		out = append(out, bson.E{Key: e.Key(), Value: v})
		seen[e.Key()] = true
	}
	elems, _ = src.Elements()
	for _, e := range elems {
		if !seen[e.Key()] {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	b, _ := bson.Marshal(out)
	return b
}
