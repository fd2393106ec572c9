package mongosim

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// Op is one running operation: what currentOp lists and killOp interrupts.
type Op struct {
	ID      int32
	conn    *conn
	Command string
	NS      string
	body    bson.Raw
	Started time.Time
	// appName is the application a router named in the command's $client
	// (the client behind the router); empty for a direct client, whose
	// connection's hello names it.
	appName string

	killCode atomic.Int32
	killed   chan struct{}
	once     sync.Once
}

// Kill marks the op killed with code; it fails at its next interrupt check.
// The first kill wins.
func (o *Op) Kill(code int32) {
	o.once.Do(func() {
		o.killCode.Store(code)
		close(o.killed)
	})
}

// Killed is closed when the op is killed, so waits can be interruptible.
func (o *Op) Killed() <-chan struct{} { return o.killed }

// CheckForInterrupt returns the error a killed op fails with, or nil.
func (o *Op) CheckForInterrupt() error {
	if o == nil {
		return nil
	}
	select {
	case <-o.killed:
		return killError(o.killCode.Load())
	default:
		return nil
	}
}

func killError(code int32) error {
	switch code {
	case mongoerr.Interrupted:
		return mongoerr.New(code, "operation was interrupted")
	case mongoerr.InterruptedDueToReplStateChange:
		return mongoerr.New(code, "operation was interrupted because a node stepped down")
	case mongoerr.MaxTimeMSExpired:
		return mongoerr.New(code, "operation exceeded time limit")
	case 0:
		return mongoerr.New(mongoerr.ShutdownInProgress, "The server is in quiesce mode and will shut down")
	}
	return mongoerr.New(code, "operation was interrupted")
}

// opTable is the member's registry of running operations.
type opTable struct {
	mu   sync.Mutex
	next int32
	ops  map[int32]*Op
}

func newOpTable() *opTable { return &opTable{ops: map[int32]*Op{}} }

func (t *opTable) register(r *request) *Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	if t.next <= 0 {
		t.next = 1
	}
	op := &Op{ID: t.next, conn: r.conn, Command: r.name, body: r.body, Started: time.Now(), killed: make(chan struct{})}
	op.appName, _ = r.body.Lookup("$client", "application", "name").StringValueOK()
	if coll, ok := r.body.Lookup(r.name).StringValueOK(); ok {
		op.NS = r.db + "." + coll
	} else {
		op.NS = r.db + ".$cmd"
	}
	t.ops[op.ID] = op
	return op
}

func (t *opTable) unregister(op *Op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ops, op.ID)
}

func (t *opTable) get(id int32) *Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ops[id]
}

func (t *opTable) snapshot() []*Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Op, 0, len(t.ops))
	for _, o := range t.ops {
		out = append(out, o)
	}
	return out
}

// killConn kills the ops of a connection that went away.
func (t *opTable) killConn(c *conn) {
	for _, o := range t.snapshot() {
		if o.conn == c {
			o.Kill(279) // ClientDisconnect
		}
	}
}

// killAll kills every op with code (0 = shutdown).
func (t *opTable) killAll(code int32) {
	for _, o := range t.snapshot() {
		o.Kill(code)
	}
}

// currentOpDoc renders an op in currentOp's shape.
func (s *Server) currentOpDoc(o *Op, now time.Time) bson.D {
	client, appName := o.conn.metadata()
	if o.appName != "" {
		appName = o.appName
	}
	running := now.Sub(o.Started)
	cmd := o.body
	if len(cmd) > 1000 {
		cmd, _ = bson.Marshal(bson.D{{Key: "$truncated", Value: cmd.String()[:min(len(cmd.String()), 900)]}})
	}
	d := bson.D{
		{Key: "type", Value: "op"},
		{Key: "host", Value: s.addr},
		{Key: "desc", Value: "conn" + itoa(o.conn.id)},
		{Key: "connectionId", Value: int32(o.conn.id)},
		{Key: "client", Value: o.conn.remote},
	}
	if appName != "" {
		d = append(d, bson.E{Key: "appName", Value: appName})
	}
	if client != nil {
		d = append(d, bson.E{Key: "clientMetadata", Value: client})
	}
	d = append(d,
		bson.E{Key: "active", Value: true},
		bson.E{Key: "currentOpTime", Value: now.Format("2006-01-02T15:04:05.000-07:00")},
		bson.E{Key: "isFromUserConnection", Value: true},
		bson.E{Key: "threaded", Value: true},
		bson.E{Key: "opid", Value: o.ID},
	)
	select {
	case <-o.killed:
		d = append(d, bson.E{Key: "killPending", Value: true})
	default:
	}
	if lsid := o.body.Lookup("lsid"); lsid.Type != 0 {
		d = append(d, bson.E{Key: "lsid", Value: lsid})
	}
	d = append(d,
		bson.E{Key: "secs_running", Value: int64(running / time.Second)},
		bson.E{Key: "microsecs_running", Value: int64(running / time.Microsecond)},
		bson.E{Key: "op", Value: "command"},
		bson.E{Key: "ns", Value: o.NS},
		bson.E{Key: "redacted", Value: false},
		bson.E{Key: "command", Value: cmd},
	)
	d = append(d, s.modelOpFields(o)...)
	d = append(d,
		bson.E{Key: "locks", Value: bson.D{}},
		bson.E{Key: "waitingForLock", Value: false},
	)
	return d
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// currentOps lists active ops, filtered by a currentOp-style filter.
func (s *Server) currentOps(filter bson.Raw) ([]bson.Raw, error) {
	f, err := query.CompileFilter(filter)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []bson.Raw
	for _, o := range s.ops.snapshot() {
		b, err := bson.Marshal(s.currentOpDoc(o, now))
		if err != nil {
			return nil, err
		}
		if f.Match(b) {
			out = append(out, b)
		}
	}
	return out, nil
}

// currentOpStageOptions are the $currentOp stage's options, all boolean,
// as mongod parses them. mongosim lists active operations whatever the
// others say (one user, no idle connections or sessions of note) and
// idle cursors when idleCursors is true.
var currentOpStageOptions = []string{"allUsers", "idleConnections", "idleCursors", "idleSessions", "localOps", "truncateOps", "backtrace"}

// currentOpStage is what a $currentOp stage with opts lists: the active
// operations, then (idleCursors: true) the cursors no operation holds.
func (s *Server) currentOpStage(opts bson.Raw) ([]bson.Raw, error) {
	elems, err := opts.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object")
	}
	idleCursors := false
	for _, e := range elems {
		name := e.Key()
		if !slices.Contains(currentOpStageOptions, name) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", name)
		}
		b, ok := e.Value().BooleanOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s",
				name, query.TypeName(e.Value().Type))
		}
		if name == "idleCursors" {
			idleCursors = b
		}
	}
	ops, err := s.currentOps(nil)
	if err != nil || !idleCursors {
		return ops, err
	}
	for _, c := range s.cursor.idle() {
		b, err := bson.Marshal(s.idleCursorDoc(c))
		if err != nil {
			return nil, err
		}
		ops = append(ops, b)
	}
	return ops, nil
}

// idleCursorDoc is an idle cursor as mongod's $currentOp lists it: type
// "idleCursor", the host, namespace and session, the plan, the cursor's
// history with the command that opened it, and the tracked memory its
// query holds (the model's figure for the buffer a modelled cursor keeps
// between getMores).
func (s *Server) idleCursorDoc(c cursor) bson.D {
	d := bson.D{{Key: "type", Value: "idleCursor"}, {Key: "host", Value: s.addr}, {Key: "ns", Value: c.ns}}
	if c.origin.lsid.Type != 0 {
		d = append(d, bson.E{Key: "lsid", Value: c.origin.lsid})
	}
	if !c.origin.collectionlessPipe {
		d = append(d, bson.E{Key: "planSummary", Value: "COLLSCAN"})
	}
	d = append(d, bson.E{Key: "cursor", Value: bson.D{
		{Key: "cursorId", Value: c.id},
		{Key: "createdDate", Value: c.created},
		{Key: "lastAccessDate", Value: c.origin.lastAccess},
		{Key: "nDocsReturned", Value: c.origin.docs},
		{Key: "nBatchesReturned", Value: c.origin.batches},
		{Key: "noCursorTimeout", Value: false},
		{Key: "tailable", Value: false},
		{Key: "awaitData", Value: false},
		{Key: "originatingCommand", Value: c.origin.command},
	}})
	if c.shape != nil {
		if tracked := s.sim.cursorTracked(c.id); tracked > 0 {
			d = append(d, bson.E{Key: "inUseTrackedMemBytes", Value: tracked},
				bson.E{Key: "peakTrackedMemBytes", Value: max(tracked, c.origin.peakTrackedBytes)})
		}
	}
	return d
}

func (s *Server) cmdCurrentOp(r *request) (bson.D, error) {
	// The command's own fields other than the flags are a filter.
	var keys []string
	var vals []bson.RawValue
	elems, _ := r.body.Elements()
	for _, e := range elems {
		k := e.Key()
		if k == "currentOp" || k == "$all" || k == "$ownOps" || genericArguments[k] {
			continue
		}
		keys, vals = append(keys, k), append(vals, e.Value())
	}
	ops, err := s.currentOps(query.Build(keys, vals))
	if err != nil {
		return nil, err
	}
	arr := bson.A{}
	for _, o := range ops {
		arr = append(arr, o)
	}
	return bson.D{{Key: "inprog", Value: arr}}, nil
}

func (s *Server) cmdKillOp(r *request) (bson.D, error) {
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "killOp may only be run against the admin database.")
	}
	v := r.body.Lookup("op")
	id, ok := v.AsInt64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Did not provide \"op\" field")
	}
	if op := s.ops.get(int32(id)); op != nil {
		s.log.Info("going to kill op", "opid", id)
		op.Kill(mongoerr.Interrupted)
	}
	return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
}

// cmdSleep is mongod's test command: it holds its thread for millis (or
// secs) and is interruptible by killOp.
func (s *Server) cmdSleep(r *request) (bson.D, error) {
	d := 100 * time.Millisecond
	if ms, ok := r.body.Lookup("millis").AsInt64OK(); ok {
		d = time.Duration(ms) * time.Millisecond
	} else if secs, ok := r.body.Lookup("secs").AsInt64OK(); ok {
		d = time.Duration(secs) * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return bson.D{}, nil
	case <-r.op.Killed():
		return nil, r.op.CheckForInterrupt()
	case <-s.ctx.Done():
		return nil, killError(0)
	}
}
