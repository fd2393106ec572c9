package mongosim

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// Defaults of a replica set and of its members' supervision, the same on
// every path that runs one (in-process sets, cmd/mongosim, the local
// target's supervisor and the virtual engine).
const (
	// DefaultElectionTimeout is mongod's settings.electionTimeoutMillis.
	DefaultElectionTimeout = 10 * time.Second
	// DefaultHeartbeatInterval is mongod's settings.heartbeatIntervalMillis.
	DefaultHeartbeatInterval = 2 * time.Second
	// DefaultRestartDelay is how long a crashed member stays down before
	// an automation agent restarts it.
	DefaultRestartDelay = 5 * time.Second
)

// ReplicaSetOptions configure an in-process replica set.
type ReplicaSetOptions struct {
	Name    string // default "rs0"
	Members int    // default 3
	// ElectionTimeout is settings.electionTimeoutMillis (default 10 s).
	ElectionTimeout time.Duration
	// HeartbeatInterval is settings.heartbeatIntervalMillis (default 2 s).
	HeartbeatInterval time.Duration
	Parameters        map[string]string
	MemLimitMB        int64
	Logger            *slog.Logger
	// Sim configures each member's model.
	Sim SimOptions
	// RestartDelay is how long an OOM-killed member stays down before it
	// is restarted, as an automation agent would (default 5 s).
	RestartDelay time.Duration
	// DiagnosticDataRoot, when set, gives each member a diagnostic.data
	// directory as a mongod with a dbpath has: member i records into
	// <root>/member<i>/diagnostic.data (kept across Kill and Restart).
	DiagnosticDataRoot string
	// ClusterRole is every member's Options.ClusterRole (a shard or the
	// config server of a sharded cluster).
	ClusterRole string
}

// ReplicaSet is a set of in-process members on loopback ports. Members keep
// their ports and Storage across Kill and Restart, as processes keep theirs.
type ReplicaSet struct {
	opts    ReplicaSetOptions
	mu      sync.Mutex
	members []*Server
	ports   []int
	stores  []*MemStorage
	closed  bool
	// OOMKills counts members killed by the model's memory limit.
	oomKills int
}

// StartReplicaSet starts the members, initiates the set and waits for a
// primary.
func StartReplicaSet(ctx context.Context, opts ReplicaSetOptions) (*ReplicaSet, error) {
	if opts.Name == "" {
		opts.Name = "rs0"
	}
	if opts.Members == 0 {
		opts.Members = 3
	}
	// Negative values would reach replSetInitiate as "not positive" and
	// silently become mongod's defaults there.
	switch {
	case opts.Members < 0:
		return nil, fmt.Errorf("ReplicaSetOptions.Members %d: must not be negative", opts.Members)
	case opts.ElectionTimeout < 0 || opts.ElectionTimeout > 0 && opts.ElectionTimeout < time.Millisecond:
		return nil, fmt.Errorf("ReplicaSetOptions.ElectionTimeout %v: must be at least 1ms (or 0 for the default)", opts.ElectionTimeout)
	case opts.HeartbeatInterval < 0 || opts.HeartbeatInterval > 0 && opts.HeartbeatInterval < time.Millisecond:
		return nil, fmt.Errorf("ReplicaSetOptions.HeartbeatInterval %v: must be at least 1ms (or 0 for the default)", opts.HeartbeatInterval)
	case opts.RestartDelay < 0:
		return nil, fmt.Errorf("ReplicaSetOptions.RestartDelay %v: must not be negative", opts.RestartDelay)
	}
	if opts.ElectionTimeout == 0 {
		opts.ElectionTimeout = DefaultElectionTimeout
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.RestartDelay == 0 {
		opts.RestartDelay = DefaultRestartDelay
	}
	rs := &ReplicaSet{opts: opts}
	for i := 0; i < opts.Members; i++ {
		st := &MemStorage{}
		srv, err := rs.start(i, 0, st)
		if err != nil {
			rs.Close()
			return nil, err
		}
		rs.members = append(rs.members, srv)
		rs.ports = append(rs.ports, srv.portNumber())
		rs.stores = append(rs.stores, st)
	}
	members := bson.A{}
	for i, srv := range rs.members {
		members = append(members, bson.D{{Key: "_id", Value: int32(i)}, {Key: "host", Value: srv.Addr()}})
	}
	cfg := bson.D{{Key: "_id", Value: opts.Name}, {Key: "members", Value: members},
		{Key: "settings", Value: bson.D{{Key: "electionTimeoutMillis", Value: int64(opts.ElectionTimeout / time.Millisecond)},
			{Key: "heartbeatIntervalMillis", Value: int64(opts.HeartbeatInterval / time.Millisecond)}}}}
	c := &wire.Client{Addr: rs.members[0].Addr()}
	defer c.Close()
	if _, err := c.Call(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}, {Key: "$db", Value: "admin"}}); err != nil {
		rs.Close()
		return nil, fmt.Errorf("replSetInitiate: %w", err)
	}
	if _, err := rs.WaitForPrimary(ctx); err != nil {
		rs.Close()
		return nil, err
	}
	return rs, nil
}

func (rs *ReplicaSet) start(i, port int, st *MemStorage) (*Server, error) {
	opts := Options{Port: port, ReplSet: rs.opts.Name, Storage: st, Parameters: rs.opts.Parameters,
		MemLimitMB: rs.opts.MemLimitMB, Logger: rs.opts.Logger, Sim: rs.opts.Sim, OnOOM: rs.onOOM,
		ClusterRole: rs.opts.ClusterRole}
	if rs.opts.DiagnosticDataRoot != "" {
		opts.DiagnosticDataDir = DiagnosticDataDir(filepath.Join(rs.opts.DiagnosticDataRoot, fmt.Sprintf("member%d", i)))
	}
	if port == 0 {
		ln, err := ListenLoopback()
		if err != nil {
			return nil, err
		}
		opts.Listener = ln
	}
	return Start(opts)
}

// onOOM restarts a member the model OOM-killed, after the restart delay.
func (rs *ReplicaSet) onOOM(dead *Server) {
	rs.mu.Lock()
	i := slices.Index(rs.members, dead)
	if i < 0 || rs.closed {
		rs.mu.Unlock()
		return
	}
	rs.members[i] = nil
	rs.oomKills++
	rs.mu.Unlock()
	time.AfterFunc(rs.opts.RestartDelay, func() {
		rs.mu.Lock()
		closed := rs.closed
		rs.mu.Unlock()
		if !closed {
			if err := rs.Restart(i); err != nil && rs.opts.Logger != nil {
				rs.opts.Logger.Error("restarting OOM-killed member failed", "member", i, "err", err)
			}
		}
	})
}

// OOMKills is how many times the model OOM-killed a member.
func (rs *ReplicaSet) OOMKills() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.oomKills
}

// Hosts lists the members' host:port.
func (rs *ReplicaSet) Hosts() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]string, len(rs.ports))
	for i, p := range rs.ports {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return out
}

// URI is a connection string for the whole set.
func (rs *ReplicaSet) URI() string {
	return "mongodb://" + strings.Join(rs.Hosts(), ",") + "/?replicaSet=" + rs.opts.Name
}

// Member returns member i (nil while it is down).
func (rs *ReplicaSet) Member(i int) *Server {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.members[i]
}

// Primary returns the index of the member that is primary now, or -1.
func (rs *ReplicaSet) Primary() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, m := range rs.members {
		if m != nil && m.IsPrimary() {
			return i
		}
	}
	return -1
}

// WaitForPrimary waits until some member is primary.
func (rs *ReplicaSet) WaitForPrimary(ctx context.Context) (int, error) {
	for {
		if p := rs.Primary(); p >= 0 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no primary elected: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill crashes member i (no-op when it is already down).
func (rs *ReplicaSet) Kill(i int) {
	rs.mu.Lock()
	m := rs.members[i]
	rs.members[i] = nil
	rs.mu.Unlock()
	if m != nil {
		m.Kill()
	}
}

// Restart starts a killed member again on its port, with its storage.
func (rs *ReplicaSet) Restart(i int) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return fmt.Errorf("replica set closed")
	}
	if rs.members[i] != nil {
		return fmt.Errorf("member %d is running", i)
	}
	var err error
	for range 50 { // the port may take a moment to be free again
		var srv *Server
		if srv, err = rs.start(i, rs.ports[i], rs.stores[i]); err == nil {
			rs.members[i] = srv
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Close stops every member (Server.Shutdown: diagnostic data archived).
func (rs *ReplicaSet) Close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
	for i := range rs.members {
		rs.mu.Lock()
		m := rs.members[i]
		rs.members[i] = nil
		rs.mu.Unlock()
		if m != nil {
			m.Shutdown()
		}
	}
}

// IsPrimary reports whether the member is the primary now.
func (s *Server) IsPrimary() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repl.state == statePrimary && s.ctx.Err() == nil
}
