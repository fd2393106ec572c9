// Package mongosim is a simulated mongod: a wire-protocol server whose
// members form a real replica set over loopback (heartbeats, elections, an
// oplog the secondaries fetch and apply, w:majority), keep real documents in
// memory, and answer the commands qmlsab and ordinary clients (the Go driver,
// mongosh) use with mongod's reply shapes, error codes and labels.
//
// A Server is one member. It runs either as its own process (cmd/mongosim,
// started like mongod) or in-process (StartReplicaSet), where a crash is
// Server.Kill and a restart is a new Server over the same Storage.
//
// Every reply that could be mistaken for a real server's says it is
// simulated: buildInfo and serverStatus carry a "mongosim" section.
package mongosim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// Version is the mongod version mongosim reports; the simulated execution
// control follows the master branch (post-8.2) semantics.
const (
	Version        = "8.3.0"
	MaxWireVersion = 25
)

// Options configure one member.
type Options struct {
	// BindIP is the address to listen on (default 127.0.0.1).
	BindIP string
	// Port to listen on; 0 picks a free one.
	Port int
	// ReplSet is the replica-set name; empty runs a standalone.
	ReplSet string
	// Storage holds what survives a crash. Nil means a fresh MemStorage.
	Storage Storage
	// Parameters are startup --setParameter values.
	Parameters map[string]string
	// Logger receives the member's log; nil discards it.
	Logger *slog.Logger
	// MemLimitMB is the member's memory limit (hostInfo's memLimitMB);
	// default 32768, an Atlas M50.
	MemLimitMB int64
	// Listener, when set, is used instead of listening on BindIP:Port.
	Listener net.Listener
	// Sim configures the execution-control, memory and shedding model.
	Sim SimOptions
	// OnOOM is called (in its own goroutine) after the model OOM-killed the
	// member; a supervisor restarts it.
	OnOOM func(*Server)
	// DiagnosticDataDir is where the member records its diagnostic data
	// (ftdc.go); default <dbpath>/diagnostic.data when Storage is a
	// DirStorage, none otherwise.
	DiagnosticDataDir string
	// ClusterRole is "shardsvr" or "configsvr" for a member of a sharded
	// cluster (--shardsvr, --configsvr; shard.go), empty otherwise.
	ClusterRole string
	// Limits bound what clients may hold of the member (conns.go).
	Limits ConnLimits
}

// Server is one simulated mongod.
type Server struct {
	opts      Options
	addr      string
	ln        net.Listener
	log       *slog.Logger
	store     Storage
	started   time.Time
	processID bson.ObjectID

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	params *parameters
	ops    *opTable
	cursor *cursorTable
	fail   *failPoints

	// mu guards data and repl, the member's replicated state.
	mu   sync.Mutex
	data catalog
	repl *replState

	conns connTable[*conn]
	// limits are opts.Limits resolved; read is what every connection
	// reads its messages within (one budget for all of them).
	limits ConnLimits
	read   wire.ReadLimits

	counters opCounters

	statusMu sync.Mutex
	sections []StatusSection

	sim       *simulation
	oomKilled atomic.Bool
	ftdc      *ftdcCollector // nil without a diagnostic.data directory
}

type opCounters struct {
	insert, query, update, delete, getmore, command atomic.Int64
}

// Start listens and starts serving. The member comes up in the state its
// Storage describes: a member of an initiated set rejoins as a secondary.
func Start(opts Options) (*Server, error) {
	if opts.BindIP == "" {
		opts.BindIP = "127.0.0.1"
	}
	if opts.MemLimitMB <= 0 {
		opts.MemLimitMB = model.DefaultHardware().MemLimitBytes >> 20
	}
	if opts.Storage == nil {
		opts.Storage = &MemStorage{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	params, err := newParameters(opts.Parameters)
	if err != nil {
		return nil, err
	}
	limits, err := opts.Limits.resolve("Options.Limits")
	if err != nil {
		return nil, err
	}
	ln := opts.Listener
	if ln != nil {
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
			opts.BindIP = tcp.IP.String()
		}
	} else {
		ln, err = net.Listen("tcp", net.JoinHostPort(opts.BindIP, strconv.Itoa(opts.Port)))
		if err != nil {
			return nil, err
		}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host := opts.BindIP
	if host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	s := &Server{
		opts:      opts,
		addr:      net.JoinHostPort(host, strconv.Itoa(port)),
		ln:        ln,
		log:       log.With("member", net.JoinHostPort(host, strconv.Itoa(port))),
		store:     opts.Storage,
		started:   time.Now(),
		processID: bson.NewObjectID(),
		params:    params,
		ops:       newOpTable(),
		cursor:    newCursorTable(),
		fail:      newFailPoints(),
		data:      catalog{},
		limits:    limits,
		read:      limits.readLimits(),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.recover(); err != nil {
		s.cancel()
		ln.Close()
		return nil, err
	}
	s.startSimulation()
	s.addModelStatusSections()
	s.log.Info("waiting for connections", "port", port, "replSet", opts.ReplSet, "simulated", true)
	s.wg.Add(1)
	go s.acceptLoop()
	if opts.ReplSet != "" {
		s.startReplication()
	}
	s.startFTDC()
	return s, nil
}

// Addr is the member's host:port as clients and peers must dial it.
func (s *Server) Addr() string { return s.addr }

// Kill stops the member abruptly, as SIGKILL or the OOM killer would: the
// listener and every connection close, operations die with it, and only
// what Storage holds survives.
func (s *Server) Kill() {
	s.cancel()
	s.ln.Close()
	s.conns.closeAll()
	s.ops.killAll(0)
	s.releaseShardRouting()
	s.mu.Lock()
	if s.repl != nil {
		s.repl.wake()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if c, ok := s.store.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// Done is closed once the member has been killed.
func (s *Server) Done() <-chan struct{} { return s.ctx.Done() }

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Warn("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		c := &conn{s: s, nc: nc, id: s.conns.nextID(), remote: nc.RemoteAddr().String()}
		if err := s.conns.add(s.ctx, c, nc, s.limits.MaxIncomingConnections); err != nil {
			if errors.Is(err, errTooManyConnections) {
				s.log.Warn("connection refused because there are too many open connections",
					"remote", c.remote, "maxIncomingConnections", s.limits.MaxIncomingConnections)
				continue
			}
			return
		}
		s.wg.Add(1)
		go c.serve()
	}
}

// conn is one client connection.
type conn struct {
	s      *Server
	nc     net.Conn
	id     int64
	remote string

	mu       sync.Mutex
	client   bson.Raw // handshake client metadata
	appName  string
	reqCount int
}

func (c *conn) metadata() (bson.Raw, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client, c.appName
}

func (c *conn) serve() {
	defer c.s.wg.Done()
	defer func() {
		c.nc.Close()
		c.s.conns.remove(c)
		c.s.ops.killConn(c)
	}()
	defer func() {
		// A bug in a command must cost the client its connection, never
		// the process its members.
		if r := recover(); r != nil {
			c.s.log.Error("command panicked; closing connection", "panic", fmt.Sprint(r))
		}
	}()
	br := bufio.NewReaderSize(c.nc, 16<<10)
	for {
		msg, err := wire.ReadConn(c.s.ctx, c.nc, br, c.s.read)
		if err != nil {
			if !errors.Is(err, io.EOF) && c.s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				c.s.log.Debug("closing connection", "conn", c.id, "err", err)
			}
			return
		}
		if !c.handle(&msg) {
			return
		}
	}
}

// handle runs one request and writes its reply (or replies, when streaming
// an exhaust hello). It returns false when the connection must close.
func (c *conn) handle(msg *wire.Message) bool {
	var req *request
	switch msg.OpCode {
	case wire.OpQuery:
		r, err := c.legacyRequest(msg)
		if err != nil {
			return c.writeReply(msg, wire.OpReply, errorReply(err))
		}
		req = r
	case wire.OpMsg:
		req = &request{conn: c, body: bson.Raw(msg.Body), flags: msg.Flags}
		for _, seq := range msg.Sequences {
			if req.seqs == nil {
				req.seqs = map[string][]bson.Raw{}
			}
			for _, d := range seq.Docs {
				req.seqs[seq.Identifier] = append(req.seqs[seq.Identifier], bson.Raw(d))
			}
		}
	default:
		return false
	}
	reply, stream := c.s.dispatch(req)
	if msg.MoreToCome() {
		return true
	}
	if req.legacy {
		return c.writeReply(msg, wire.OpReply, reply)
	}
	if !stream {
		return c.writeReply(msg, wire.OpMsg, reply)
	}
	// Exhaust streaming of an awaitable hello: reply with moreToCome, then
	// keep answering each topology change (or maxAwaitTimeMS) unasked until
	// the client goes away, as mongod does.
	respTo := msg.RequestID
	for {
		reqID := wire.NextRequestID()
		out := wire.AppendMsg(nil, reqID, respTo, wire.FlagMoreToCome, reply)
		if _, err := c.nc.Write(out); err != nil {
			return false
		}
		respTo = reqID
		tv, _ := bson.Raw(reply).LookupErr("topologyVersion")
		reply, stream = c.s.awaitHello(req, tv)
		if c.s.ctx.Err() != nil {
			return false
		}
	}
}

func (c *conn) writeReply(msg *wire.Message, op wire.OpCode, reply []byte) bool {
	var out []byte
	if op == wire.OpReply {
		out = wire.AppendReply(nil, wire.NextRequestID(), msg.RequestID, reply)
	} else {
		out = wire.AppendMsg(nil, wire.NextRequestID(), msg.RequestID, 0, reply)
	}
	_, err := c.nc.Write(out)
	return err == nil
}
