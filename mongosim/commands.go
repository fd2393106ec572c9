package mongosim

import (
	"errors"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// request is one command as the dispatcher sees it.
type request struct {
	conn   *conn
	body   bson.Raw
	seqs   map[string][]bson.Raw
	flags  wiremessage.MsgFlag
	legacy bool // arrived as OP_QUERY
	// secondaryOk is set by the legacy flag or a non-primary $readPreference.
	secondaryOk bool
	name        string
	db          string
	op          *Op
	// writeBatch is the $merge/$out write batch the model is running
	// (meaningful when writing).
	writeBatch int
	writing    bool
}

// str returns a string field of the command body.
func (r *request) str(key string) string {
	s, _ := r.body.Lookup(key).StringValueOK()
	return s
}

// doc returns a document field of the command body (nil when absent).
func (r *request) doc(key string) bson.Raw {
	d, _ := r.body.Lookup(key).DocumentOK()
	return bson.Raw(d)
}

// cmdKind decides where a command may run in a replica set.
type cmdKind int

const (
	anyState cmdKind = iota // hello, ping, serverStatus...
	readCmd                 // needs a primary, or secondaryOk on a secondary
	writeCmd                // needs the primary
)

type command struct {
	run  func(s *Server, r *request) (bson.D, error)
	kind cmdKind
	// untracked commands are not operations (no opid, not in currentOp).
	untracked bool
}

// commands is the command table, keyed by the name clients send.
var commands map[string]*command

func init() {
	commands = map[string]*command{
		"hello":                 {run: (*Server).cmdHello, untracked: true},
		"isMaster":              {run: (*Server).cmdHello, untracked: true},
		"ismaster":              {run: (*Server).cmdHello, untracked: true},
		"ping":                  {run: cmdOK},
		"buildInfo":             {run: (*Server).cmdBuildInfo},
		"buildinfo":             {run: (*Server).cmdBuildInfo},
		"getParameter":          {run: (*Server).cmdGetParameter},
		"setParameter":          {run: (*Server).cmdSetParameter},
		"serverStatus":          {run: (*Server).cmdServerStatus},
		"getCmdLineOpts":        {run: (*Server).cmdGetCmdLineOpts},
		"hostInfo":              {run: (*Server).cmdHostInfo},
		"getLog":                {run: (*Server).cmdGetLog},
		"endSessions":           {run: cmdOK},
		"sleep":                 {run: (*Server).cmdSleep},
		"configureFailPoint":    {run: (*Server).cmdConfigureFailPoint},
		"currentOp":             {run: (*Server).cmdCurrentOp},
		"killOp":                {run: (*Server).cmdKillOp},
		"insert":                {run: (*Server).cmdInsert, kind: writeCmd},
		"find":                  {run: (*Server).cmdFind, kind: readCmd},
		"count":                 {run: (*Server).cmdCount, kind: readCmd},
		"aggregate":             {run: (*Server).cmdAggregate, kind: readCmd},
		"getMore":               {run: (*Server).cmdGetMore, kind: readCmd},
		"killCursors":           {run: (*Server).cmdKillCursors},
		"listDatabases":         {run: (*Server).cmdListDatabases, kind: readCmd},
		"listCollections":       {run: (*Server).cmdListCollections, kind: readCmd},
		"drop":                  {run: (*Server).cmdDrop, kind: writeCmd},
		"update":                {run: (*Server).cmdUpdate, kind: writeCmd},
		"replSetInitiate":       {run: (*Server).cmdReplSetInitiate},
		"replSetGetStatus":      {run: (*Server).cmdReplSetGetStatus},
		"replSetGetConfig":      {run: (*Server).cmdReplSetGetConfig},
		"replSetStepDown":       {run: (*Server).cmdReplSetStepDown},
		"replSetStepUp":         {run: (*Server).cmdReplSetStepUp},
		"replSetHeartbeat":      {run: (*Server).cmdReplSetHeartbeat, untracked: true},
		"replSetRequestVotes":   {run: (*Server).cmdReplSetRequestVotes, untracked: true},
		"replSetUpdatePosition": {run: (*Server).cmdReplSetUpdatePosition, untracked: true},
	}
	for name, c := range shardCommands() {
		commands[name] = c
	}
}

func cmdOK(*Server, *request) (bson.D, error) { return bson.D{}, nil }

// genericArguments are the fields any command may carry (mongod's
// generic_argument.idl); commands that read their other fields as data
// (currentOp filters, getParameter names) skip these.
var genericArguments = map[string]bool{
	"$db": true, "lsid": true, "txnNumber": true, "$clusterTime": true, "$readPreference": true,
	"maxTimeMS": true, "readConcern": true, "writeConcern": true, "comment": true, "apiVersion": true,
	"apiStrict": true, "apiDeprecationErrors": true, "autocommit": true, "startTransaction": true,
	"stmtId": true, "$audit": true, "$client": true, "mayBypassWriteBlocking": true, "$queryOptions": true,
}

// legacyRequest turns an OP_QUERY on <db>.$cmd into a request. mongod (5.1+)
// accepts only the handshake commands this way.
func (c *conn) legacyRequest(msg *wire.Message) (*request, error) {
	db, coll, ok := strings.Cut(msg.FullCollectionName, ".")
	if !ok || coll != "$cmd" {
		return nil, mongoerr.New(352, "Unsupported OP_QUERY command: find. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal")
	}
	body := bson.Raw(msg.Query)
	if q, err := body.LookupErr("$query"); err == nil {
		if d, ok := q.DocumentOK(); ok {
			body = bson.Raw(d)
		}
	}
	r := &request{conn: c, body: body, legacy: true, db: db,
		secondaryOk: msg.QueryFlags&wiremessage.SecondaryOK != 0}
	first, err := body.IndexErr(0)
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "empty command")
	}
	switch first.Key() {
	case "hello", "isMaster", "ismaster":
		return r, nil
	}
	return nil, mongoerr.New(352, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", first.Key())
}

// dispatch runs a request and returns the reply body, and whether the reply
// is the first of an exhaust stream.
func (s *Server) dispatch(r *request) ([]byte, bool) {
	first, err := r.body.IndexErr(0)
	if err != nil {
		return errorReply(mongoerr.New(mongoerr.FailedToParse, "empty command")), false
	}
	r.name = first.Key()
	if !r.legacy {
		r.db = r.str("$db")
		if r.db == "" {
			return errorReply(mongoerr.New(40571, "OP_MSG requests require a $db argument")), false
		}
		if mode, ok := r.body.Lookup("$readPreference", "mode").StringValueOK(); ok && mode != "primary" {
			r.secondaryOk = true
		}
	}
	s.counters.command.Add(1)
	cmd := commands[r.name]
	if cmd == nil {
		s.log.Info("command not simulated", "name", r.name, "db", r.db)
		return s.finishReply(nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.name)), false
	}
	if err := s.checkState(r, cmd.kind); err != nil {
		s.log.Debug("command refused", "conn", r.conn.id, "name", r.name, "err", err)
		return s.finishReply(nil, err), false
	}
	if err := s.fail.failCommand(r); err != nil {
		if errors.Is(err, errCloseConnection) {
			r.conn.nc.Close()
			return nil, false
		}
		return s.finishReply(nil, err), false
	}
	if !cmd.untracked {
		r.op = s.ops.register(r)
		defer s.ops.unregister(r.op)
		if d, ok := timeLimit(r); ok {
			t := time.AfterFunc(d, func() { r.op.Kill(mongoerr.MaxTimeMSExpired) })
			defer t.Stop()
		}
	}
	reply, err := cmd.run(s, r)
	// A member the model OOM-killed answers nothing more, whatever its
	// handlers were doing (a SIGKILLed mongod sends no reply): not even
	// the ShutdownInProgress its operations are interrupted with while
	// the process goes down.
	if errors.Is(err, errProcessDied) || s.oomKilled.Load() {
		r.conn.nc.Close()
		return nil, false
	}
	if s.log.Enabled(s.ctx, slog.LevelDebug) {
		s.log.Debug("command", "conn", r.conn.id, "name", r.name, "db", r.db, "err", err)
	}
	isHello := r.name == "hello" || r.name == "isMaster" || r.name == "ismaster"
	stream := err == nil && isHello && !r.legacy && r.flags&wire.FlagExhaustAllowed != 0 &&
		r.body.Lookup("maxAwaitTimeMS").Type != 0
	return s.finishReply(reply, err), stream
}

// timeLimit is the command's maxTimeMS: the op is killed with
// MaxTimeMSExpired when it runs out, and fails at its next interrupt
// check. A getMore's maxTimeMS, and a tailable awaitData find's, is how
// long to wait for new data, not a limit (fetch.go's oplog find).
func timeLimit(r *request) (time.Duration, bool) {
	ms, ok := r.body.Lookup("maxTimeMS").AsInt64OK()
	if !ok || ms <= 0 || r.name == "getMore" {
		return 0, false
	}
	if await, _ := r.body.Lookup("awaitData").BooleanOK(); await && r.name == "find" {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// finishReply appends ok and the cluster-time fields, or renders the error.
func (s *Server) finishReply(reply bson.D, err error) []byte {
	if err != nil {
		var me *mongoerr.Error
		if !errors.As(err, &me) {
			me = &mongoerr.Error{Code: 1, Msg: err.Error()}
		}
		d := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: me.Msg}, {Key: "code", Value: me.Code}, {Key: "codeName", Value: me.CodeName()}}
		if len(me.Labels) > 0 {
			d = append(d, bson.E{Key: "errorLabels", Value: me.Labels})
		}
		switch me.Code {
		case mongoerr.NotWritablePrimary, mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary,
			mongoerr.InterruptedDueToReplStateChange, mongoerr.PrimarySteppedDown:
			d = append(d, bson.E{Key: "topologyVersion", Value: s.topologyVersion()})
		}
		reply = d
	} else {
		reply = append(reply, bson.E{Key: "ok", Value: 1.0})
	}
	reply = append(reply, s.clusterTimeFields()...)
	b, merr := bson.Marshal(reply)
	if merr != nil {
		return errorReply(merr)
	}
	return b
}

// errorReply renders an error without server context.
func errorReply(err error) []byte {
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		me = &mongoerr.Error{Code: 1, Msg: err.Error()}
	}
	b, _ := bson.Marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: me.Msg}, {Key: "code", Value: me.Code}, {Key: "codeName", Value: me.CodeName()}})
	return b
}

func (s *Server) cmdBuildInfo(*request) (bson.D, error) { return s.buildInfo(), nil }

func (s *Server) buildInfo() bson.D {
	return bson.D{
		{Key: "version", Value: Version},
		{Key: "gitVersion", Value: "mongosim"},
		{Key: "modules", Value: bson.A{"mongosim"}},
		{Key: "allocator", Value: "tcmalloc-google"},
		{Key: "javascriptEngine", Value: "none"},
		{Key: "sysInfo", Value: "deprecated"},
		{Key: "versionArray", Value: bson.A{int32(8), int32(3), int32(0), int32(0)}},
		{Key: "bits", Value: int32(64)},
		{Key: "debug", Value: false},
		{Key: "maxBsonObjectSize", Value: int32(16777216)},
		{Key: "storageEngines", Value: bson.A{"inMemory"}},
		{Key: "mongosim", Value: simulatedSection()},
	}
}

// simulatedSection marks replies that come from the model, not a server.
func simulatedSection() bson.D {
	return bson.D{{Key: "simulated", Value: true}, {Key: "note", Value: "mongosim: a simulated mongod; figures come from a model, not a real server"}}
}

func (s *Server) cmdGetCmdLineOpts(*request) (bson.D, error) {
	argv := bson.A{}
	for _, a := range os.Args {
		argv = append(argv, a)
	}
	parsed := bson.D{{Key: "net", Value: bson.D{{Key: "bindIp", Value: s.opts.BindIP}, {Key: "port", Value: int32(s.portNumber())}}}}
	if s.opts.ReplSet != "" {
		parsed = append(parsed, bson.E{Key: "replication", Value: bson.D{{Key: "replSet", Value: s.opts.ReplSet}}})
	}
	if s.opts.ClusterRole != "" {
		parsed = append(parsed, bson.E{Key: "sharding", Value: bson.D{{Key: "clusterRole", Value: s.opts.ClusterRole}}})
	}
	return bson.D{{Key: "argv", Value: argv}, {Key: "parsed", Value: parsed}}, nil
}

func (s *Server) portNumber() int {
	_, p, _ := strings.Cut(s.addr, ":")
	n := 0
	for _, c := range p {
		n = n*10 + int(c-'0')
	}
	return n
}

func (s *Server) cmdHostInfo(*request) (bson.D, error) {
	host, _ := os.Hostname()
	return bson.D{
		{Key: "system", Value: omit(bson.D{
			{Key: "currentTime", Value: time.Now()},
			{Key: "hostname", Value: host},
			{Key: "cpuAddrSize", Value: int32(64)},
			{Key: "memSizeMB", Value: int64(s.opts.MemLimitMB)},
			{Key: "memLimitMB", Value: int64(s.opts.MemLimitMB)},
			{Key: "numCores", Value: int32(runtime.NumCPU())},
			{Key: "cpuArch", Value: runtime.GOARCH},
		}, s.opts.Sim.OmitHostInfo)},
		{Key: "os", Value: bson.D{{Key: "type", Value: "Linux"}, {Key: "name", Value: "mongosim"}}},
		{Key: "extra", Value: bson.D{}},
	}, nil
}

func (s *Server) cmdGetLog(r *request) (bson.D, error) {
	switch r.str("getLog") {
	case "*":
		return bson.D{{Key: "names", Value: bson.A{"global", "startupWarnings"}}}, nil
	case "global", "startupWarnings":
		return bson.D{{Key: "totalLinesWritten", Value: int32(0)}, {Key: "log", Value: bson.A{}}}, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "No log named '%s'", r.str("getLog"))
}

func (s *Server) cmdListDatabases(r *request) (bson.D, error) {
	s.mu.Lock()
	names := s.data.databases()
	s.mu.Unlock()
	if !slices.Contains(names, "admin") {
		names = append([]string{"admin"}, names...)
	}
	dbs := bson.A{}
	for _, n := range names {
		dbs = append(dbs, bson.D{{Key: "name", Value: n}, {Key: "sizeOnDisk", Value: int64(0)}, {Key: "empty", Value: false}})
	}
	return bson.D{{Key: "databases", Value: dbs}, {Key: "totalSize", Value: int64(0)}}, nil
}

func (s *Server) cmdListCollections(r *request) (bson.D, error) {
	s.mu.Lock()
	names := s.data.collections(r.db)
	s.mu.Unlock()
	var docs []bson.Raw
	for _, n := range names {
		b, _ := bson.Marshal(bson.D{{Key: "name", Value: n}, {Key: "type", Value: "collection"}, {Key: "options", Value: bson.D{}},
			{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}}})
		docs = append(docs, b)
	}
	return cursorReply(r.db+".$cmd.listCollections", 0, docs, "firstBatch"), nil
}

// cursorReply is mongod's {cursor: {firstBatch|nextBatch, id, ns}} shape.
func cursorReply(ns string, id int64, docs []bson.Raw, batchKey string) bson.D {
	batch := make(bson.A, len(docs))
	for i, d := range docs {
		batch[i] = d
	}
	return bson.D{{Key: "cursor", Value: bson.D{{Key: batchKey, Value: batch}, {Key: "id", Value: id}, {Key: "ns", Value: ns}}}}
}
