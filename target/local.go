package target

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/mongosim"
)

// local is a 3-member replica set launched from the arm's mongod binary
// (a real mongod or cmd/mongosim), supervised for the trial.
type local struct {
	arm          arms.Arm
	log          *slog.Logger
	restartDelay time.Duration
	extraArgs    []string
	stop         context.CancelFunc
	superviseCtx context.Context // ends with stop
	life         context.Context
	cancel       func() bool // unregisters the context watch
	wg           sync.WaitGroup
	// configDB is the config server set's connection string
	// ("cfg/h:p,...") of a sharded deployment; empty for a replica set.
	configDB string
	shardOf  map[string]string // shard member -> shard id

	mu        sync.Mutex
	members   []*member
	closed    bool
	restarts  []Restart
	simulated bool
	startup   []MemberInfo
	caps      Capabilities
}

// Restart is a member restart the supervisor performed.
type Restart struct {
	Member   string
	At       time.Time
	ExitCode int
}

// memberRole is what a process of a local deployment is.
type memberRole int

const (
	roleReplica memberRole = iota // a member of the arm's replica set
	roleConfig                    // a config server member (--configsvr)
	roleShard                     // a shard member (--shardsvr)
	roleRouter                    // a router (mongos --configdb)
)

type member struct {
	port    int
	bin     string
	role    memberRole
	set     string // replica set name; empty for a router
	dbpath  string // empty for a router
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func (m *member) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// provisionLocal starts the arm's members; they live until Close or
// until life ends (an interrupted run), while ctx bounds only the waits
// of provisioning (initiation, the startup check, the probe).
func provisionLocal(life, ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	l, err := newLocal(life, arm, opts)
	if err != nil {
		return nil, err
	}
	var set []*member
	for i := range 3 {
		m, err := l.launch(arm.Mongod, roleReplica, "rs0", filepath.Join(opts.Dir, fmt.Sprintf("member%d", i)))
		if err != nil {
			l.Close(context.Background())
			return nil, err
		}
		set = append(set, m)
	}
	if err := l.initiate(ctx, "rs0", set, false); err != nil {
		l.Close(context.Background())
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	if err := l.check(ctx); err != nil {
		l.Close(context.Background())
		return nil, err
	}
	return l, nil
}

// newLocal checks the arm's binary and options and makes the supervisor,
// which closes itself when life ends.
func newLocal(life context.Context, arm arms.Arm, opts Options) (*local, error) {
	if _, err := os.Stat(arm.Mongod); err != nil {
		return nil, fmt.Errorf("arm %s: mongod binary: %w", arm.Name, err)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("arm %s: the local target needs a trial folder", arm.Name)
	}
	l := &local{arm: arm, log: opts.Logger, restartDelay: opts.RestartDelay, life: life}
	if opts.MemberMemLimitMB > 0 {
		if !isMongosim(arm.Mongod) {
			return nil, field.Errorf(FieldMemberMemLimitMB, opts.MemberMemLimitMB, "arm %s: a per-member memory limit needs cmd/mongosim, which caps its own memory; a real mongod would need a cgroup, which the local target does not create", arm.Name)
		}
		l.extraArgs = append(l.extraArgs, "--simMemLimitMB", strconv.FormatInt(opts.MemberMemLimitMB, 10))
	}
	if _, set := arm.SetParameters[interimParam]; !set {
		// Each member rewrites its diagnostic data's interim file every
		// sample (mongod's default is every ten), so a member killed mid-
		// trial leaves on disk all but the sample it was taking: what gap
		// filling (run/gapfill.go) and qmlsab import ftdc read.
		l.extraArgs = append(l.extraArgs, "--setParameter", interimParam+"=1")
	}
	if l.restartDelay <= 0 {
		l.restartDelay = mongosim.DefaultRestartDelay
	}
	sctx, stop := context.WithCancel(context.Background())
	l.stop, l.superviseCtx = stop, sctx
	// Whatever the caller does, a cancelled trial leaves no process behind.
	l.mu.Lock()
	l.cancel = context.AfterFunc(life, func() { _ = l.Close(context.Background()) })
	l.mu.Unlock()
	return l, nil
}

// launch starts one process of the deployment, in dir (its dbpath is
// dir/db, its log dir/<binary's name>.log), and supervises it.
func (l *local) launch(bin string, role memberRole, set, dir string) (*member, error) {
	ln, err := mongosim.ListenLoopback()
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logName := "mongod.log"
	if role == roleRouter {
		logName = "mongos.log"
	}
	m := &member{port: port, bin: bin, role: role, set: set, dbpath: filepath.Join(dir, "db"), logPath: filepath.Join(dir, logName)}
	if role == roleRouter {
		m.dbpath = ""
	}
	if err := os.MkdirAll(cmpOr(m.dbpath, dir), 0o755); err != nil {
		return nil, err
	}
	// Under the lock, as a restart is: a cancelled context's Close
	// (the AfterFunc in newLocal) may run at any moment, and a member it
	// did not see would outlive the trial.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("arm %s: starting members: %w", l.arm.Name, context.Cause(l.life))
	}
	l.members = append(l.members, m)
	err = l.start(m)
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	l.wg.Add(1)
	go l.supervise(l.superviseCtx, m)
	return m, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// check runs the startup check and the probe on the data-bearing members.
func (l *local) check(ctx context.Context) error {
	info, err := startupCheck(ctx, loopbackOnly, l.Members(), l.arm)
	if err != nil {
		return err
	}
	if l.configDB != "" {
		for i := range info {
			info[i].Topology = "mongos" // a shard member behind the routers
		}
	}
	caps, err := probe(ctx, loopbackOnly, info, l.arm)
	if err != nil {
		return err
	}
	for _, m := range info {
		l.simulated = l.simulated || m.Simulated
	}
	l.startup, l.caps = info, caps
	return nil
}

// interimParam is mongod's server parameter for how many diagnostic
// samples pass between rewrites of diagnostic.data/metrics.interim.
const interimParam = "diagnosticDataCollectionSamplesPerInterimUpdate"

// start launches a member in its own process group, its output in the
// trial folder; on Linux the member is killed if qmlsab dies.
func (l *local) start(m *member) error {
	args := []string{"--port", strconv.Itoa(m.port), "--bind_ip", "127.0.0.1"}
	if m.role == roleRouter {
		args = append(args, "--configdb", l.configDB)
	} else {
		args = append(args, "--replSet", m.set, "--dbpath", m.dbpath)
		switch m.role {
		case roleConfig:
			args = append(args, "--configsvr")
		case roleShard:
			args = append(args, "--shardsvr")
		}
		args = append(args, l.extraArgs...)
	}
	if m.role == roleReplica || m.role == roleShard {
		// The arm's parameters are the data-bearing members' (the shards'
		// on a sharded cluster, where the aggregates run).
		names := make([]string, 0, len(l.arm.SetParameters))
		for k := range l.arm.SetParameters {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			args = append(args, "--setParameter", k+"="+l.arm.SetParameters[k])
		}
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startMember(cmd); err != nil { // dies with qmlsab (parentdeath_linux.go)
		logf.Close()
		return fmt.Errorf("starting %s: %w", m.bin, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(c *exec.Cmd, f *os.File, done chan struct{}) { _ = c.Wait(); f.Close(); close(done) }(cmd, logf, m.exited)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", m.addr(), 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("%s exited at start-up; see %s", m.bin, m.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("member %s did not listen within 30 s; see %s", m.addr(), m.logPath)
}

// supervise restarts a member that exits while the trial runs.
func (l *local) supervise(ctx context.Context, m *member) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		exited := m.exited
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-exited:
		}
		l.mu.Lock()
		closed := l.closed
		code := m.cmd.ProcessState.ExitCode()
		l.mu.Unlock()
		if closed {
			return
		}
		l.log.Warn("member exited; restarting it", "member", m.addr(), "exitCode", code, "delay", l.restartDelay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.restartDelay):
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		err := l.start(m)
		if err == nil {
			l.restarts = append(l.restarts, Restart{Member: m.addr(), At: time.Now(), ExitCode: code})
		}
		l.mu.Unlock()
		if err != nil {
			l.log.Error("restarting member failed", "member", m.addr(), "err", err)
			return
		}
	}
}

// isMongosim reports whether a binary is cmd/mongosim (it says so in its
// usage text).
func isMongosim(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return strings.Contains(string(out), "a simulated mongod")
}

// initiate makes the members one replica set (configsvr: a config
// server set) and waits for its primary.
func (l *local) initiate(ctx context.Context, name string, set []*member, configsvr bool) error {
	members := bson.A{}
	for i, m := range set {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: m.addr()}})
	}
	c, err := directClient(loopbackOnly, set[0].addr(), 15*time.Second)
	if err != nil {
		return err
	}
	defer mongoclient.Disconnect(c)
	cfg := bson.D{{Key: "_id", Value: name}, {Key: "members", Value: members}}
	if configsvr {
		cfg = append(cfg, bson.E{Key: "configsvr", Value: true})
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		return fmt.Errorf("replSetInitiate %s: %w", name, err)
	}
	hosts := make([]string, len(set))
	for i, m := range set {
		hosts[i] = m.addr()
	}
	if err := waitAnyPrimary(ctx, hosts, 60*time.Second); err != nil {
		return fmt.Errorf("replica set %s: %w", name, err)
	}
	return nil
}

// waitPrimary waits until a data-bearing member reports itself writable
// primary.
func (l *local) waitPrimary(ctx context.Context, limit time.Duration) error {
	return waitAnyPrimary(ctx, l.Members(), limit)
}

// waitAnyPrimary waits until one of hosts reports itself writable primary.
func waitAnyPrimary(ctx context.Context, hosts []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, h := range hosts {
			if isPrimary(ctx, h) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no primary within %v", limit)
}

func isPrimary(ctx context.Context, host string) bool {
	c, err := directClient(loopbackOnly, host, time.Second)
	if err != nil {
		return false
	}
	defer mongoclient.Disconnect(c)
	r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		return false
	}
	p, _ := r.Lookup("isWritablePrimary").BooleanOK()
	return p
}

func (l *local) URI() string {
	if l.configDB != "" {
		return "mongodb://" + strings.Join(l.Routers(), ",") + "/"
	}
	return "mongodb://" + strings.Join(l.Members(), ",") + "/?replicaSet=rs0"
}

// Members are the data-bearing members: the replica set's, or every
// shard's (not the config server's, nor the routers).
func (l *local) Members() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.members {
		if m.role == roleReplica || m.role == roleShard {
			out = append(out, m.addr())
		}
	}
	return out
}

func (l *local) Simulated() bool { return l.simulated }

func (l *local) Startup() []MemberInfo { return l.startup }

func (l *local) Capabilities() Capabilities { return l.caps }

func (l *local) Describe() string {
	kind := "local replica set of " + l.arm.Mongod
	if l.configDB != "" {
		kind = "local sharded cluster of " + l.arm.Mongod + " and " + l.arm.Sharded.Mongos + ", routers"
		if l.simulated {
			kind += " (SIMULATED: mongosim)"
		}
		return kind + " " + strings.Join(l.Routers(), ",")
	}
	if l.simulated {
		kind += " (SIMULATED: mongosim)"
	}
	return kind + " " + strings.Join(l.Members(), ",")
}

// DiagnosticData maps each member (host:port) to the diagnostic.data
// directory in its dbpath, where mongod and cmd/mongosim keep their FTDC.
func (l *local) DiagnosticData() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.members))
	for _, m := range l.members {
		if m.role == roleReplica || m.role == roleShard {
			out[m.addr()] = mongosim.DiagnosticDataDir(m.dbpath)
		}
	}
	return out
}

// Restarts are the member restarts the supervisor performed.
func (l *local) Restarts() []Restart {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Restart(nil), l.restarts...)
}

// PIDs are the member processes' ids (tests check nothing is left).
func (l *local) PIDs() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, m := range l.members {
		if m.cmd != nil && m.cmd.Process != nil {
			out = append(out, m.cmd.Process.Pid)
		}
	}
	return out
}

// stopGrace is how long Close waits for the members to exit on SIGTERM
// before it kills the ones left.
const stopGrace = 10 * time.Second

// Close stops the members: SIGTERM to each process group, SIGKILL to
// those still running stopGrace later, and waits for them all.
func (l *local) Close(context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	members := append([]*member(nil), l.members...)
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	for _, m := range members {
		if m.cmd != nil && m.cmd.Process != nil {
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	// One grace period for them all, not one each: a sharded cluster's
	// ten hung processes are killed after it, not after ten of it.
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	expired := false
	for _, m := range members {
		if m.cmd == nil {
			continue
		}
		if !expired {
			select {
			case <-m.exited:
				continue
			case <-grace.C:
				expired = true
			}
		}
		select {
		case <-m.exited:
		default:
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.exited
		}
	}
	l.stop()
	l.wg.Wait()
	return nil
}
