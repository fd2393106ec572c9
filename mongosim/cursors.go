package mongosim

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// cursor holds the rest of a result set between getMores: the documents
// (docs), or the execution that yields them as they are read (exec).
type cursor struct {
	id      int64
	ns      string
	docs    []bson.Raw
	exec    *query.Execution
	created time.Time
	// origin is what $currentOp's idleCursors lists besides the id: the
	// command that opened the cursor, its session, what the cursor has
	// returned so far and its tracked-memory peak.
	origin cursorOrigin
	// shape is the modelled query behind the cursor (nil: not modelled).
	shape *model.QueryShape
	// works, for a query that came with a shape hint, are its modelled
	// getMores not yet run: each real getMore runs its share of them.
	works  []model.Work
	hinted bool
}

type cursorTable struct {
	mu sync.Mutex
	m  map[int64]*cursor
}

func newCursorTable() *cursorTable { return &cursorTable{m: map[int64]*cursor{}} }

// cursorOrigin is a cursor's history as $currentOp shows an idle cursor.
type cursorOrigin struct {
	command            bson.Raw // the originating command, as sent
	lsid               bson.RawValue
	lastAccess         time.Time // the reply that opened the cursor, then its last getMore
	docs, batches      int64     // returned so far, first batch included
	peakTrackedBytes   int64     // the query's tracked-memory peak so far
	collectionlessPipe bool      // no plan over a collection (no planSummary)
}

// originOf starts a cursor's history at the reply to r that returned
// first documents.
func originOf(r *request, first int) cursorOrigin {
	o := cursorOrigin{command: slices.Clone(r.body), docs: int64(first), batches: 1}
	if v := r.body.Lookup("lsid"); v.Type != 0 {
		o.lsid = bson.RawValue{Type: v.Type, Value: slices.Clone(v.Value)}
	}
	return o
}

// returned records a getMore's batch of n documents.
func (o *cursorOrigin) returned(n int) {
	o.docs += int64(n)
	o.batches++
	o.lastAccess = time.Now()
}

func (t *cursorTable) open(ns string, docs []bson.Raw, origin cursorOrigin) *cursor {
	return t.add(&cursor{id: t.newID(), ns: ns, docs: docs, origin: origin})
}

// newID reserves a fresh cursor id.
func (t *cursorTable) newID() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		id := rand.Int64N(1<<62) + 1
		if t.m[id] == nil {
			return id
		}
	}
}

// add enters a cursor, complete: once in the table, $currentOp may read
// it (idle) until a getMore takes it.
func (t *cursorTable) add(c *cursor) *cursor {
	c.created = time.Now()
	c.origin.lastAccess = c.created // opening it is its first access
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[c.id] = c
	return c
}

// take removes the cursor while a getMore uses it (a cursor is pinned to
// one operation at a time).
func (t *cursorTable) take(id int64) *cursor {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[id]
	delete(t.m, id)
	return c
}

func (t *cursorTable) put(c *cursor) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[c.id] = c
}

// idle copies the cursors no operation holds: a getMore takes its cursor
// out of the table (take) until it puts it back, so what the table holds
// is idle, as mongod's idleCursors lists only cursors that are not pinned.
func (t *cursorTable) idle() []cursor {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]cursor, 0, len(t.m))
	for _, c := range t.m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b cursor) int { return a.created.Compare(b.created) })
	return out
}

func (t *cursorTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// maxBatchBytes keeps a batch's reply under the 16 MiB document limit.
const maxBatchBytes = 16 * 1000 * 1000

// batch splits off the first n documents (n <= 0: all), keeping the reply
// under the 16 MiB document limit.
func batch(docs []bson.Raw, n int) (first, rest []bson.Raw) {
	size := 0
	for i, d := range docs {
		if (n > 0 && i >= n) || (i > 0 && size+len(d) > maxBatchBytes) {
			return docs[:i], docs[i:]
		}
		size += len(d)
	}
	return docs, nil
}

// replyWithCursor returns r's first batch and opens a cursor for the rest.
func (s *Server) replyWithCursor(r *request, ns string, docs []bson.Raw, batchSize int, single bool) bson.D {
	first, rest := batch(docs, batchSize)
	var id int64
	if len(rest) > 0 && !single {
		id = s.cursor.open(ns, rest, originOf(r, len(first))).id
	}
	return cursorReply(ns, id, first, "firstBatch")
}

func (s *Server) cmdGetMore(r *request) (bson.D, error) {
	id, ok := r.body.Lookup("getMore").Int64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'getMore.getMore' is the wrong type, expected type 'long'")
	}
	coll := r.str("collection")
	c := s.cursor.take(id)
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != r.db+"."+coll {
		s.cursor.put(c)
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", r.db, coll, c.ns)
	}
	s.counters.getmore.Add(1)
	if err := r.op.CheckForInterrupt(); err != nil {
		s.dropModelCursor(c)
		return nil, err // a killed getMore destroys its cursor
	}
	n, _ := r.body.Lookup("batchSize").AsInt64OK()
	next, rest := batch(c.docs, int(n))
	more := len(rest) > 0
	if c.exec != nil {
		// The aggregate's pipeline goes on, in this operation: a kill,
		// maxTimeMS or shutdown interrupts it, and its errors end the
		// cursor. (The model's getMore below then charges the batch.)
		c.exec.SetEnv(&pipelineEnv{s: s, r: r})
		var err error
		if next, err = c.exec.Batch(int(n), maxBatchBytes); err == nil {
			more, err = c.exec.More()
		}
		if err != nil {
			s.dropModelCursor(c)
			return nil, err
		}
	}
	if c.shape != nil {
		// The getMore is a new operation: it queues for a ticket while the
		// cursor holds its buffer, and a kill or shed destroys the cursor.
		var w model.Work
		if c.hinted {
			w, c.works = takeShare(c.works, len(next), len(next)+len(rest), *c.shape)
		} else {
			w = s.sim.getMoreWork(*c.shape, len(next), !more)
		}
		op := &model.Op{Kind: model.KindGetMore, Eligible: true, CursorID: c.id, Work: w}
		err := s.enter(r, op)
		c.origin.peakTrackedBytes = max(c.origin.peakTrackedBytes, s.sim.peakTracked(op))
		if err != nil {
			s.dropModelCursor(c)
			return nil, err
		}
	}
	c.origin.returned(len(next))
	if more {
		c.docs = rest
		s.cursor.put(c)
	} else {
		id = 0
	}
	return cursorReply(c.ns, id, next, "nextBatch"), nil
}

func (s *Server) cmdKillCursors(r *request) (bson.D, error) {
	arr, _ := r.body.Lookup("cursors").ArrayOK()
	vals, _ := arr.Values()
	killed, notFound := bson.A{}, bson.A{}
	for _, v := range vals {
		id, _ := v.AsInt64OK()
		if c := s.cursor.take(id); c != nil {
			s.dropModelCursor(c)
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return bson.D{{Key: "cursorsKilled", Value: killed}, {Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}}, {Key: "cursorsUnknown", Value: bson.A{}}}, nil
}
