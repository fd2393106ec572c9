// Package actor runs an arm's client-side actors beside the workload: the
// killOp actor (its policy is arms/killop's, shared with mongosim's
// calibration; Decide reads the server's documents into it, tolerating any
// shape they have) and the exec actor (an external program such as a real
// mongotune).
package actor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/bsoncheck"
)

// Option adjusts how KillOp runs.
type Option func(*killOpOptions)

type killOpOptions struct {
	log    *slog.Logger
	rounds *atomic.Int64
	shard  string
}

// WithLog sends what the actor has to say (why it does nothing, for one) to
// log instead of slog's default logger.
func WithLog(log *slog.Logger) Option { return func(o *killOpOptions) { o.log = log } }

// WithRounds counts in n the rounds the actor completed (ticks at which
// the server's answers let it decide, or told it that it cannot): a
// harness on a starved host sees its actor complete far fewer than its
// interval asks.
func WithRounds(n *atomic.Int64) Option { return func(o *killOpOptions) { o.rounds = n } }

// WithShard labels the actor's kills with the id of the shard whose
// primary it watches (store.Kill.Shard) and its log with the shard.
func WithShard(id string) Option { return func(o *killOpOptions) { o.shard = id } }

// KillOp runs the killOp actor until ctx ends: every interval it reads the
// primary's resident memory (serverStatus) and its operations ($currentOp),
// asks Decide which to kill, and kills them with killOp. A failed sample
// (the primary is down, say) is skipped, not fatal: the system under test
// failing is an outcome, not an error of the actor. A server that reports
// no memory limit or no resident memory leaves the actor idle, which it
// says once in its log.
func KillOp(ctx context.Context, c *mongo.Client, cfg killop.Config, onKill func(store.Kill), opts ...Option) error {
	if cfg.Interval <= 0 {
		return fmt.Errorf("killop actor: interval must be positive")
	}
	if cfg.AppName == "" && !cfg.AnyApp {
		return fmt.Errorf("killop actor: appName is required unless anyApp is set")
	}
	o := killOpOptions{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return runKillOp(ctx, wireServer{c.Database("admin")}, cfg, onKill, o)
}

// KillOpPerShard runs the killOp actor on a sharded cluster until ctx
// ends: one actor per shard, each watching its shard's primary (a router
// reports no memory, and each shard is a replica set with its own memory
// and its own $currentOp), deciding with that shard's memory and killing
// that shard's operations under the same scope as KillOp. shardOf maps
// each shard member (host:port) to its shard's id; each actor's kills
// carry that id (WithShard). A shard whose members cannot be dialled is
// left without an actor and said so in the log; the others run. WithRounds
// counts every shard's rounds together: on n shards a quiet host completes
// n per interval. Every connection to a shard member passes guard.
func KillOpPerShard(ctx context.Context, guard mongoclient.Guard, shardOf map[string]string, cfg killop.Config, appName string, onKill func(store.Kill), opts ...Option) error {
	if len(shardOf) == 0 {
		return fmt.Errorf("killop actor: a sharded cluster without shard members")
	}
	o := killOpOptions{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	hosts := map[string][]string{}
	for h, id := range shardOf {
		hosts[id] = append(hosts[id], h)
	}
	var mu sync.Mutex // onKill is called from every shard's actor
	serial := func(k store.Kill) {
		if onKill != nil {
			mu.Lock()
			defer mu.Unlock()
			onKill(k)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 0, len(hosts))
	var emu sync.Mutex
	for _, id := range slices.Sorted(maps.Keys(hosts)) {
		c, err := mongo.Connect(guard.Client(options.Client().ApplyURI(ShardURI(hosts[id])).SetAppName(appName)))
		if err != nil {
			o.log.Warn("killop actor: no actor on this shard", "shard", id, "err", err)
			continue
		}
		wg.Go(func() {
			defer mongoclient.Disconnect(c)
			if err := KillOp(ctx, c, cfg, serial, append(slices.Clone(opts), WithShard(id))...); err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("shard %s: %w", id, err))
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ShardURI is the connection string of a shard's members: without
// directConnection, so the driver discovers the shard's replica set and
// sends the actor's commands to its primary, wherever an election moves it.
func ShardURI(members []string) string {
	return "mongodb://" + strings.Join(slices.Sorted(slices.Values(members)), ",") + "/"
}

// server is what the killOp actor asks of the member it watches.
type server interface {
	hostInfo(ctx context.Context) (bson.Raw, error)
	serverStatus(ctx context.Context) (bson.Raw, error)
	currentOp(ctx context.Context) ([]bson.Raw, error)
	killOp(ctx context.Context, opID int64) error
}

// runKillOp is KillOp's loop over any server.
func runKillOp(ctx context.Context, srv server, cfg killop.Config, onKill func(store.Kill), o killOpOptions) error {
	log := cmp.Or(o.log, slog.Default())
	if o.shard != "" {
		log = log.With("shard", o.shard)
	}
	said := map[string]bool{}
	idle := func(reason string) {
		if !said[reason] {
			said[reason] = true
			log.Warn("killop actor: doing nothing", "reason", reason)
		}
	}
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	var hostInfo bson.Raw // the first answer: a member's memory limit does not change
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if hostInfo == nil {
			hi, err := srv.hostInfo(ctx)
			if err != nil {
				continue
			}
			hostInfo = hi
		}
		if _, ok := MemoryLimitMB(hostInfo); !ok {
			idle(noLimit)
			if o.rounds != nil {
				o.rounds.Add(1)
			}
			continue
		}
		ss, err := srv.serverStatus(ctx)
		if err != nil {
			continue
		}
		// Below its threshold the actor kills nothing whatever runs:
		// it asks for $currentOp, a document per operation, only when
		// memory says it may act.
		var ops []bson.Raw
		if d := Decide(cfg, hostInfo, ss, nil); d.Idle == "" && cfg.Acts(d.ResidentMB<<20, d.LimitMB<<20) {
			if ops, err = srv.currentOp(ctx); err != nil {
				continue
			}
		}
		d := Decide(cfg, hostInfo, ss, ops)
		if o.rounds != nil {
			o.rounds.Add(1)
		}
		if d.Idle != "" {
			idle(d.Idle)
		}
		for _, k := range d.Kills {
			if ctx.Err() != nil {
				return nil // stopped: no kill starts after the phase ended
			}
			ev := store.Kill{At: time.Now(), OpID: k.ID, AppName: k.AppName, TrackedBytes: k.TrackedBytes, Queued: k.Queued,
				Queue: store.QueueOf(k.Queued, k.LowPriority), Stage: k.Stage, ResidentMB: d.ResidentMB, Shard: o.shard}
			if err := srv.killOp(ctx, k.ID); err != nil {
				if ctx.Err() != nil {
					// The actor was stopped while the server had not yet
					// answered: not a failed kill but an unanswered one,
					// at the phase's end, and the operation's own record
					// says how it ended.
					return nil
				}
				ev.Err = err.Error()
			}
			if onKill != nil {
				onKill(ev)
			}
		}
	}
}

// wireServer asks a member over the driver.
type wireServer struct{ admin *mongo.Database }

func (w wireServer) hostInfo(ctx context.Context) (bson.Raw, error) {
	return w.admin.RunCommand(ctx, bson.D{{Key: "hostInfo", Value: 1}}).Raw()
}

func (w wireServer) serverStatus(ctx context.Context) (bson.Raw, error) {
	return w.admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
}

func (w wireServer) killOp(ctx context.Context, opID int64) error {
	return w.admin.RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opID}}).Err()
}

// currentOp reads the $currentOp documents.
func (w wireServer) currentOp(ctx context.Context) ([]bson.Raw, error) {
	cur, err := w.admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "idleConnections", Value: false}}}}})
	if err != nil {
		return nil, fmt.Errorf("$currentOp: %w", err)
	}
	defer cur.Close(ctx)
	var docs []bson.Raw
	for cur.Next(ctx) {
		docs = append(docs, bytes.Clone(cur.Current))
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("$currentOp: %w", err)
	}
	return docs, nil
}

// Why a tick decides nothing.
const (
	noLimit    = "hostInfo reports no memory limit (neither system.memLimitMB nor system.memSizeMB is a positive number)"
	noResident = "serverStatus reports no resident memory (mem.resident is not a number)"
)

// Decision is what one tick of the actor decided from the server's answers.
type Decision struct {
	// LimitMB and ResidentMB are the memory limit and resident memory the
	// decision used; 0 when Idle says the server did not report them.
	LimitMB, ResidentMB int64
	// Kills are the operations to kill (killop.Decide's choice).
	Kills []killop.Op
	// Idle says why the actor could not decide; empty when it did.
	Idle string
}

// Decide is one tick of the killOp actor from the documents the server
// answered: hostInfo (for the memory limit), serverStatus (for resident
// memory) and the $currentOp documents. A value the server did not report,
// or reported as something other than a number, is absent: without a limit
// or resident memory the actor kills nothing and Idle says why. It never
// panics, whatever shape the documents have: a malformed one (the driver's
// lookups panic on some the driver accepts) is read as empty.
func Decide(cfg killop.Config, hostInfo, serverStatus bson.Raw, currentOp []bson.Raw) Decision {
	var d Decision
	serverStatus = readable(serverStatus)
	limitMB, ok := MemoryLimitMB(hostInfo)
	if !ok {
		d.Idle = noLimit
		return d
	}
	residentMB, ok := megabytes(serverStatus.Lookup("mem", "resident"))
	if !ok {
		d.Idle = noResident
		return d
	}
	d.LimitMB, d.ResidentMB = limitMB, residentMB
	if !cfg.Acts(residentMB<<20, limitMB<<20) {
		return d
	}
	ops := make([]killop.Op, 0, len(currentOp))
	for _, doc := range currentOp {
		if op, ok := OpOf(doc); ok {
			ops = append(ops, op)
		}
	}
	d.Kills = killop.Decide(cfg, residentMB<<20, limitMB<<20, ops)
	return d
}

// MemoryLimitMB is the member's memory limit as hostInfo reports it:
// system.memLimitMB (a container's or cgroup's limit), or the machine's
// memory, system.memSizeMB, when there is no such limit. ok is false when
// neither is a positive number.
func MemoryLimitMB(hostInfo bson.Raw) (mb int64, ok bool) {
	hostInfo = readable(hostInfo)
	for _, field := range []string{"memLimitMB", "memSizeMB"} {
		if mb, ok := megabytes(hostInfo.Lookup("system", field)); ok && mb > 0 {
			return mb, true
		}
	}
	return 0, false
}

// readable is doc when it is well formed at every depth, else nil (a
// document with nothing in it).
func readable(doc bson.Raw) bson.Raw {
	if bsoncheck.Document(doc) != nil {
		return nil
	}
	return doc
}

// maxMB keeps a megabyte figure's byte count (mb << 20) within int64.
const maxMB = 1 << 43

// megabytes reads a non-negative count of megabytes that mongod may report
// as an int32, an int64 or a double; anything else is absent.
func megabytes(v bson.RawValue) (int64, bool) {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64:
		if n, ok := v.AsInt64OK(); ok && n >= 0 && n < maxMB {
			return n, true
		}
	case bson.TypeDouble:
		f, ok := v.DoubleOK()
		if !ok || math.IsNaN(f) || f < 0 || f >= maxMB {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// OpOf reads what the decision sees of one $currentOp document. ok is false
// when it has no integer opid, so killOp could not name it (mongos reports
// opids as "shard:id" strings).
func OpOf(d bson.Raw) (killop.Op, bool) {
	op := killop.Op{}
	// Framing only, not every depth (bsoncheck.Document): the actor reads
	// a handful of fields of hundreds of documents ten times a second, and
	// each read below goes through an accessor that reports a malformed
	// value instead of panicking on it (FuzzServerReplies holds it to that).
	if bsoncore.Document(d).Validate() != nil {
		return op, false
	}
	switch id := d.Lookup("opid"); id.Type {
	case bson.TypeInt32, bson.TypeInt64:
		var ok bool
		if op.ID, ok = id.AsInt64OK(); !ok {
			return op, false
		}
	default:
		return op, false
	}
	op.AppName, _ = d.Lookup("appName").StringValueOK()
	// A size above any server's memory (a bug or a hostile server) is
	// clamped, so a kill records a figure the victims summary can hold.
	tracked, _ := d.Lookup("inUseTrackedMemBytes").AsInt64OK()
	op.TrackedBytes = store.ClampTrackedBytes(tracked)
	op.Queued = d.Lookup("currentQueue").Type == bson.TypeEmbeddedDocument
	op.LowPriority, _ = d.Lookup("priorityLowered").BooleanOK()
	op.Stage, _ = d.Lookup("stage").StringValueOK()
	if op.Stage == "" {
		if p, ok := d.Lookup("command", "pipeline").ArrayOK(); ok {
			if first, err := p.IndexErr(0); err == nil {
				if doc, ok := first.DocumentOK(); ok {
					if e, err := doc.IndexErr(0); err == nil {
						op.Stage = e.Key()
					}
				}
			}
		}
	}
	kind, _ := d.Lookup("op").StringValueOK()
	cmd, _ := d.Lookup("command").DocumentOK()
	first := ""
	if e, err := cmd.IndexErr(0); err == nil {
		first = e.Key()
	}
	switch first {
	case "insert", "update", "delete", "findAndModify":
		op.Writes = true
	}
	if kind == "insert" || kind == "update" || kind == "remove" {
		op.Writes = true
	}
	return op, true
}

// Exec starts an exec actor's program with the deployment's URI in
// QMLSAB_URI; the returned stop ends it (SIGTERM, then SIGKILL after 5 s).
// The URI may carry credentials: it goes only into the child's
// environment, never its arguments (visible in process listings).
func Exec(spec arms.ExecActor, uri, logPath string) (stop func() error, err error) {
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Env = append(os.Environ(), "QMLSAB_URI="+uri)
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f
		defer func() {
			if err != nil {
				f.Close()
			}
		}()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec actor %s: %w", spec.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if f, ok := cmd.Stdout.(*os.File); ok {
			f.Close()
		}
		return nil
	}, nil
}
