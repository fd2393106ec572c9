package mongosim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// RouterOptions configure one router.
type RouterOptions struct {
	// BindIP is the address to listen on (default 127.0.0.1).
	BindIP string
	// Port to listen on; 0 picks a free one.
	Port int
	// Listener, when set, is used instead of listening on BindIP:Port.
	Listener net.Listener
	// ConfigDB is the config server replica set, "<setName>/host:port,...",
	// as mongos's --configdb.
	ConfigDB string
	// Logger receives the router's log; nil discards it.
	Logger *slog.Logger
	// Limits bound what clients may hold of the router (conns.go).
	Limits ConnLimits
}

// Router is one simulated mongos: it answers hello as a router does
// (msg: "isdbgrid", no setName), keeps the cluster's metadata in the config
// server's config.* collections, and routes reads and writes to the shards'
// primaries over the wire by shard key (router_cmds.go, router_cursor.go).
// It has no memory model and sheds nothing; a write pipeline's operation on
// the router is recorded as shedding-ineligible, as mongos marks it.
type Router struct {
	opts      RouterOptions
	addr      string
	ln        net.Listener
	log       *slog.Logger
	cc        *clusterClient
	started   time.Time
	processID bson.ObjectID

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	conns  connTable[net.Conn]
	limits ConnLimits      // opts.Limits resolved
	read   wire.ReadLimits // every connection's, one budget for all

	opMu    sync.Mutex
	ops     map[int32]*routerOp
	nextOp  int32
	curMu   sync.Mutex
	cursors map[int64]*routerCursor

	counters opCounters
	// ddlMu serialises the router's metadata changes.
	ddlMu sync.Mutex
}

// routerOp is an operation running on the router (currentOp localOps).
type routerOp struct {
	id       int32
	name, ns string
	body     bson.Raw
	started  time.Time
	connID   int64
	client   string
	// eligible is whether mongos would mark the operation eligible for
	// query-memory shedding: reads yes, write pipelines never.
	eligible bool
	cancel   context.CancelFunc
}

// StartRouter listens and starts routing. The config server need not be
// up yet; commands wait for it.
func StartRouter(opts RouterOptions) (*Router, error) {
	if opts.BindIP == "" {
		opts.BindIP = "127.0.0.1"
	}
	cc, err := newClusterClient(opts.ConfigDB)
	if err != nil {
		return nil, fmt.Errorf("starting router: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limits, err := opts.Limits.resolve("RouterOptions.Limits")
	if err != nil {
		return nil, fmt.Errorf("starting router: %w", err)
	}
	ln := opts.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", net.JoinHostPort(opts.BindIP, strconv.Itoa(opts.Port)))
		if err != nil {
			return nil, fmt.Errorf("starting router: %w", err)
		}
	}
	host := opts.BindIP
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && opts.Listener != nil {
		host = tcp.IP.String()
	}
	if host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	rt := &Router{opts: opts, addr: addr, ln: ln, log: log.With("router", addr), cc: cc, started: time.Now(),
		limits: limits, read: limits.readLimits(),
		processID: bson.NewObjectID(), ops: map[int32]*routerOp{}, cursors: map[int64]*routerCursor{}}
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.wg.Add(2)
	go rt.acceptLoop()
	go rt.pingLoop()
	rt.log.Info("router waiting for connections", "configdb", opts.ConfigDB, "simulated", true)
	return rt, nil
}

// Addr is the router's host:port.
func (rt *Router) Addr() string { return rt.addr }

// Close stops the router: listener, connections, cursors.
func (rt *Router) Close() error {
	rt.cancel()
	err := rt.ln.Close()
	rt.conns.closeAll()
	rt.curMu.Lock()
	for id, c := range rt.cursors {
		c.close(context.Background())
		delete(rt.cursors, id)
	}
	rt.curMu.Unlock()
	rt.wg.Wait()
	rt.cc.close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// pingLoop keeps the router's config.mongos document, as mongos does about
// every 30 s.
func (rt *Router) pingLoop() {
	defer rt.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(rt.ctx, 10*time.Second)
		_, err := rt.cc.callConfig(ctx, bson.D{{Key: "update", Value: "mongos"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: rt.addr}}},
			{Key: "u", Value: bson.D{{Key: "_id", Value: rt.addr}, {Key: "advisoryHostFQDNs", Value: bson.A{}}, {Key: "mongoVersion", Value: Version},
				{Key: "ping", Value: time.Now()}, {Key: "up", Value: int64(time.Since(rt.started) / time.Second)}, {Key: "waiting", Value: true}}},
			{Key: "upsert", Value: true}}}}, {Key: "$db", Value: "config"}})
		cancel()
		wait := 30 * time.Second
		if err != nil {
			wait = time.Second // the config server is not up yet
		}
		select {
		case <-rt.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (rt *Router) acceptLoop() {
	defer rt.wg.Done()
	for {
		nc, err := rt.ln.Accept()
		if err != nil {
			if rt.ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err := rt.conns.add(rt.ctx, nc, nc, rt.limits.MaxIncomingConnections); err != nil {
			if errors.Is(err, errTooManyConnections) {
				rt.log.Warn("connection refused because there are too many open connections",
					"remote", nc.RemoteAddr().String(), "maxIncomingConnections", rt.limits.MaxIncomingConnections)
				continue
			}
			return
		}
		rt.wg.Add(1)
		go rt.serve(nc, rt.conns.nextID())
	}
}

// routerConn is one client connection to the router.
type routerConn struct {
	nc     net.Conn
	id     int64
	remote string
	// appName is the application its first hello named; the router
	// passes it on to the shards in each command's $client, as mongos
	// does, so a shard's $currentOp names the client behind the router.
	appName string
}

func (rt *Router) serve(nc net.Conn, id int64) {
	defer rt.wg.Done()
	defer func() {
		nc.Close()
		rt.conns.remove(nc)
	}()
	defer func() {
		if r := recover(); r != nil {
			rt.log.Error("router command panicked; closing connection", "panic", fmt.Sprint(r))
		}
	}()
	c := &routerConn{nc: nc, id: id, remote: nc.RemoteAddr().String()}
	br := bufio.NewReaderSize(nc, 16<<10)
	for {
		msg, err := wire.ReadConn(rt.ctx, nc, br, rt.read)
		if err != nil {
			if !errors.Is(err, io.EOF) && rt.ctx.Err() == nil {
				rt.log.Debug("closing connection", "conn", id, "err", err)
			}
			return
		}
		if !rt.handle(c, &msg) {
			return
		}
	}
}

// handle runs one request; false closes the connection.
func (rt *Router) handle(c *routerConn, msg *wire.Message) bool {
	var body bson.Raw
	seqs := map[string][]bson.Raw{}
	switch msg.OpCode {
	case wire.OpQuery:
		db, coll, _ := strings.Cut(msg.FullCollectionName, ".")
		body = bson.Raw(msg.Query)
		if q, err := body.LookupErr("$query"); err == nil {
			if d, ok := q.DocumentOK(); ok {
				body = bson.Raw(d)
			}
		}
		first, err := body.IndexErr(0)
		if coll != "$cmd" || err != nil || (first.Key() != "hello" && first.Key() != "isMaster" && first.Key() != "ismaster") {
			out := wire.AppendReply(nil, wire.NextRequestID(), msg.RequestID, rt.finish(nil,
				mongoerr.New(352, "Unsupported OP_QUERY command. The client driver may require an upgrade.")))
			_, err := c.nc.Write(out)
			return err == nil
		}
		c.noteClient(body)
		reply := rt.finish(rt.helloReply(c, body, first.Key() != "hello"), nil)
		_ = db
		_, err = c.nc.Write(wire.AppendReply(nil, wire.NextRequestID(), msg.RequestID, reply))
		return err == nil
	case wire.OpMsg:
		body = bson.Raw(msg.Body)
		for _, seq := range msg.Sequences {
			for _, d := range seq.Docs {
				seqs[seq.Identifier] = append(seqs[seq.Identifier], bson.Raw(d))
			}
		}
	default:
		return false
	}
	first, err := body.IndexErr(0)
	if err != nil {
		return rt.write(c, msg, 0, rt.finish(nil, mongoerr.New(mongoerr.FailedToParse, "empty command")))
	}
	name := first.Key()
	if name == "hello" || name == "isMaster" || name == "ismaster" {
		c.noteClient(body)
		legacy := name != "hello"
		reply := rt.helloReply(c, body, legacy)
		_, hasAwait := body.Lookup("maxAwaitTimeMS").AsInt64OK()
		if hasAwait && body.Lookup("topologyVersion").Type != 0 {
			rt.awaitHello(body)
			reply = rt.helloReply(c, body, legacy)
		}
		if msg.MoreToCome() {
			return true
		}
		if !hasAwait || msg.Flags&wire.FlagExhaustAllowed == 0 {
			return rt.write(c, msg, 0, rt.finish(reply, nil))
		}
		// Exhaust hello: the router's topology never changes, so each
		// later reply comes after maxAwaitTimeMS.
		respTo := msg.RequestID
		for {
			reqID := wire.NextRequestID()
			out := wire.AppendMsg(nil, reqID, respTo, wire.FlagMoreToCome, rt.finish(rt.helloReply(c, body, legacy), nil))
			if _, err := c.nc.Write(out); err != nil {
				return false
			}
			respTo = reqID
			rt.awaitHello(body)
			if rt.ctx.Err() != nil {
				return false
			}
		}
	}
	reply, err := rt.dispatch(c, name, body, seqs)
	if msg.MoreToCome() {
		return true
	}
	return rt.write(c, msg, 0, rt.finish(reply, err))
}

// noteClient keeps the application name of the connection's first hello
// that carries client metadata.
func (c *routerConn) noteClient(hello bson.Raw) {
	if c.appName != "" {
		return
	}
	c.appName, _ = hello.Lookup("client", "application", "name").StringValueOK()
}

// clientAppKey carries, in a command's context, the application of the
// router's client it runs for.
type clientAppKey struct{}

// withClientApp is ctx carrying the router client's application name.
func withClientApp(ctx context.Context, app string) context.Context {
	if app == "" {
		return ctx
	}
	return context.WithValue(ctx, clientAppKey{}, app)
}

// withClientMetadata adds to cmd, sent to a shard or the config server
// for a router's client, that client's application as $client, so the
// shard's $currentOp names it (mongos forwards client metadata the same
// way). A command run for no client is left as it is.
func withClientMetadata(ctx context.Context, cmd bson.D) bson.D {
	app, _ := ctx.Value(clientAppKey{}).(string)
	if app == "" {
		return cmd
	}
	// Clipped: the caller's cmd may be sent again or from other goroutines.
	return append(slices.Clip(cmd), bson.E{Key: "$client", Value: bson.D{{Key: "application", Value: bson.D{{Key: "name", Value: app}}}}})
}

func (rt *Router) awaitHello(body bson.Raw) {
	ms, _ := body.Lookup("maxAwaitTimeMS").AsInt64OK()
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-rt.ctx.Done():
	}
}

func (rt *Router) write(c *routerConn, msg *wire.Message, flags wiremessage.MsgFlag, reply []byte) bool {
	_, err := c.nc.Write(wire.AppendMsg(nil, wire.NextRequestID(), msg.RequestID, flags, reply))
	return err == nil
}

// helloReply is mongos's hello: always writable, msg "isdbgrid", and no
// replica-set fields, so drivers classify the server as a router.
func (rt *Router) helloReply(c *routerConn, body bson.Raw, legacy bool) bson.D {
	key := "isWritablePrimary"
	if legacy {
		key = "ismaster"
	}
	d := bson.D{
		{Key: key, Value: true},
		{Key: "msg", Value: "isdbgrid"},
		{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: rt.processID}, {Key: "counter", Value: int64(0)}}},
		{Key: "maxBsonObjectSize", Value: int32(16777216)},
		{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		{Key: "maxWriteBatchSize", Value: int32(100000)},
		{Key: "localTime", Value: time.Now()},
		{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
		{Key: "connectionId", Value: int32(c.id)},
		{Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(MaxWireVersion)},
		{Key: "readOnly", Value: false},
	}
	if ok, _ := body.Lookup("helloOk").BooleanOK(); ok {
		d = append(d, bson.E{Key: "helloOk", Value: true})
	}
	return d
}

// finish renders a reply or an error with ok and the cluster time the
// router last saw from a shard.
func (rt *Router) finish(reply bson.D, err error) []byte {
	if err != nil {
		var me *mongoerr.Error
		var ce *wire.CommandError
		switch {
		case errors.As(err, &me):
		case asCommandError(err, &ce):
			me = &mongoerr.Error{Code: ce.Code, Msg: ce.Message}
		default:
			me = &mongoerr.Error{Code: codeHostUnreachable, Msg: err.Error()}
		}
		reply = bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: me.Msg}, {Key: "code", Value: me.Code}, {Key: "codeName", Value: me.CodeName()}}
		if ce != nil && ce.CodeName != "" {
			reply[3].Value = ce.CodeName
		}
		if len(me.Labels) > 0 {
			reply = append(reply, bson.E{Key: "errorLabels", Value: me.Labels})
		}
	} else {
		reply = append(reply, bson.E{Key: "ok", Value: 1.0})
	}
	if ts, ok := rt.cc.clusterTime(); ok {
		reply = append(reply,
			bson.E{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: ts},
				{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}},
			bson.E{Key: "operationTime", Value: ts})
	}
	b, merr := bson.Marshal(reply)
	if merr != nil {
		return errorReply(merr)
	}
	return b
}

// register records an operation of the router.
func (rt *Router) register(c *routerConn, name, ns string, body bson.Raw, eligible bool, cancel context.CancelFunc) *routerOp {
	rt.opMu.Lock()
	defer rt.opMu.Unlock()
	rt.nextOp++
	op := &routerOp{id: rt.nextOp, name: name, ns: ns, body: body, started: time.Now(), connID: c.id, client: c.remote,
		eligible: eligible, cancel: cancel}
	rt.ops[op.id] = op
	return op
}

func (rt *Router) unregister(op *routerOp) {
	rt.opMu.Lock()
	delete(rt.ops, op.id)
	rt.opMu.Unlock()
}

// localOps are the router's own operations as currentOp documents.
func (rt *Router) localOps() []bson.Raw {
	rt.opMu.Lock()
	defer rt.opMu.Unlock()
	var out []bson.Raw
	now := time.Now()
	for _, op := range rt.ops {
		b, _ := bson.Marshal(bson.D{
			{Key: "type", Value: "op"}, {Key: "host", Value: rt.addr}, {Key: "desc", Value: "conn" + itoa(op.connID)},
			{Key: "connectionId", Value: int32(op.connID)}, {Key: "client", Value: op.client}, {Key: "active", Value: true},
			{Key: "opid", Value: op.id}, {Key: "secs_running", Value: int64(now.Sub(op.started) / time.Second)},
			{Key: "microsecs_running", Value: int64(now.Sub(op.started) / time.Microsecond)},
			{Key: "op", Value: "command"}, {Key: "ns", Value: op.ns}, {Key: "command", Value: op.body},
			{Key: "queryMemorySheddingEligible", Value: op.eligible},
		})
		out = append(out, b)
	}
	return out
}
