package actor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

func TestKillOpActorKillsOnlyItsAppIncludingQueuedOps(t *testing.T) {
	params := map[string]string{}
	d, _ := arms.Lookup("D")
	for k, v := range d.SetParameters {
		params[k] = v
	}
	params["throughputProbingMaxConcurrency"] = "4" // few tickets, so storm ops queue
	params["throughputProbingMinConcurrency"] = "1" // D's floor is above that maximum
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{Parameters: params, MemLimitMB: 4096,
		Sim: mongosim.SimOptions{CPUs: 2, BaselineMB: 512, ScanScale: 200}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close) // registered first, so it runs after the clients disconnect
	connect := func(app string) *mongo.Client { return stormtest.Connect(t, rs.URI(), app) }
	storm := connect(arms.StormAppName)
	coll := storm.Database("storm").Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	stormtest.LoadData(t, ctx, coll)

	// The actor acts whenever resident memory exceeds 1 % (always, here).
	cfg := killop.Default(arms.StormAppName)
	cfg.RSSHighPercent, cfg.Interval, cfg.MaxKillsPerRound = 1, 30*time.Millisecond, 50
	actorClient := connect("qmlsab-actor")
	act := stormtest.StartActor(ctx, func(ctx context.Context, report func(store.Kill)) error {
		return KillOp(ctx, actorClient, cfg, report)
	})

	// The workload's queries (24 at a time, for 4 tickets, so most wait
	// queued) and another application's, until the events the test is
	// about have happened (or the deadline): a kill of a queued storm op,
	// a storm query that came back Interrupted, and the other
	// application's query completed. A fixed number of queries is not
	// enough on a busy machine: a kill can land after the op it listed
	// has finished, and the killOp finds nothing to interrupt.
	others := stormtest.StartQueries(ctx, connect("reporting").Database("storm").Collection("events"), 1)
	storms := stormtest.StartQueries(ctx, coll, 24)
	seen := func() bool {
		return slices.ContainsFunc(act.Kills(), func(k store.Kill) bool { return k.Queued }) &&
			stormtest.Interrupted(storms.Results()) > 0 && len(others.Results()) > 0
	}
	stormtest.WaitFor(ctx, seen)
	otherErrs, stormErrs := others.Stop(), storms.Stop()
	events := act.Stop(t)
	if len(events) == 0 {
		t.Fatal("the actor killed nothing")
	}
	queued := 0
	for _, e := range events {
		if e.AppName != arms.StormAppName {
			t.Fatalf("the actor killed op %d of app %q", e.OpID, e.AppName)
		}
		if e.Queued {
			queued++
		}
		if e.TrackedBytes <= 0 {
			t.Errorf("killed op %d with no tracked memory", e.OpID)
		}
	}
	if queued == 0 {
		t.Errorf("none of %d kills hit a queued op; the actor must reach ops waiting for a ticket", len(events))
	}
	for _, err := range otherErrs {
		if err != nil {
			t.Fatalf("the other application's query failed: %v", err)
		}
	}
	if len(otherErrs) == 0 {
		t.Errorf("the other application's query never completed while the actor ran (%d kills)", len(events))
	}
	interrupted := stormtest.Interrupted(stormErrs)
	if interrupted == 0 {
		t.Errorf("no storm query saw Interrupted (%d kills, %d queries)", len(events), len(stormErrs))
	}
	t.Logf("%d kills (%d of queued ops), %d of %d storm queries interrupted, %d queries of the other app completed", len(events), queued, interrupted, len(stormErrs), len(otherErrs))
}

func TestExecActorGetsTheURIInItsEnvironmentOnly(t *testing.T) {
	dir := t.TempDir()
	out, term := filepath.Join(dir, "env.txt"), filepath.Join(dir, "term.txt")
	// The shell notes a SIGTERM in term.txt: SIGKILL, stop's fallback after
	// 5 s, would leave no note. What ended the program is asserted, not how
	// long stopping took, which depends on the machine's load.
	script := `trap 'echo term > ` + term + `; exit 0' TERM; echo "$QMLSAB_URI $LEVEL" > ` + out + `; sleep 30 & wait`
	spec := arms.ExecActor{Command: []string{"sh", "-c", script}, Env: map[string]string{"LEVEL": "2"}}
	stop, err := Exec(spec, "mongodb://u:secret@127.0.0.1:1/", filepath.Join(dir, "actor.log"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var b []byte
	for time.Now().Before(deadline) {
		if b, _ = os.ReadFile(out); len(b) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if string(b) != "mongodb://u:secret@127.0.0.1:1/ 2\n" {
		t.Fatalf("the program saw %q", b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if note, err := os.ReadFile(term); err != nil || string(note) != "term\n" {
		t.Errorf("the program was not ended by SIGTERM (note %q, %v)", note, err)
	}
}
