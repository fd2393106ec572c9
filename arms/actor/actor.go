// Package actor runs an arm's client-side actors beside the workload: the
// killOp actor (its decision is arms/killop's, shared with mongosim's
// calibration) and the exec actor (an external program such as a real
// mongotune).
package actor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
)

// KillOp runs the killOp actor until ctx ends: every interval it reads the
// primary's resident memory (serverStatus) and its operations ($currentOp),
// asks killop.Decide which to kill, and kills them with killOp. A failed
// sample (the primary is down, say) is skipped, not fatal: the system
// under test failing is an outcome, not an error of the actor.
func KillOp(ctx context.Context, c *mongo.Client, cfg killop.Config, onKill func(store.Kill)) error {
	if cfg.Interval <= 0 {
		return fmt.Errorf("killop actor: interval must be positive")
	}
	if cfg.AppName == "" && !cfg.AnyApp {
		return fmt.Errorf("killop actor: appName is required unless anyApp is set")
	}
	admin := c.Database("admin")
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	var limitMB int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if limitMB == 0 {
			hi, err := admin.RunCommand(ctx, bson.D{{Key: "hostInfo", Value: 1}}).Raw()
			if err != nil {
				continue
			}
			limitMB = hi.Lookup("system", "memLimitMB").AsInt64()
			if limitMB <= 0 {
				limitMB = hi.Lookup("system", "memSizeMB").AsInt64()
			}
			if limitMB <= 0 {
				continue
			}
		}
		ss, err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			continue
		}
		residentMB := ss.Lookup("mem", "resident").AsInt64()
		ops, err := currentOps(ctx, admin)
		if err != nil {
			continue
		}
		for _, k := range killop.Decide(cfg, residentMB<<20, limitMB<<20, ops) {
			ev := store.Kill{At: time.Now(), OpID: k.ID, AppName: k.AppName, TrackedBytes: k.TrackedBytes, Queued: k.Queued, Stage: k.Stage, ResidentMB: residentMB}
			if err := admin.RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: k.ID}}).Err(); err != nil {
				ev.Err = err.Error()
			}
			if onKill != nil {
				onKill(ev)
			}
		}
	}
}

// currentOps reads $currentOp into what the decision sees.
func currentOps(ctx context.Context, admin *mongo.Database) ([]killop.Op, error) {
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "idleConnections", Value: false}}}}})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var ops []killop.Op
	for cur.Next(ctx) {
		d := cur.Current
		op := killop.Op{}
		op.ID = d.Lookup("opid").AsInt64()
		op.AppName, _ = d.Lookup("appName").StringValueOK()
		op.TrackedBytes, _ = d.Lookup("inUseTrackedMemBytes").AsInt64OK()
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
		ops = append(ops, op)
	}
	return ops, cur.Err()
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
