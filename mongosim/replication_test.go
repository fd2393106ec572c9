package mongosim_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

func TestMergeOnSecondaryForwardsWritesToPrimary(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	client := connect(t, rs.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// w:3 so every secondary has the source before a secondary reads it.
	src := client.Database("m").Collection("src", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 3}))
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 4}, {Key: "v", Value: i}})
	}
	if _, err := src.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	pipeline := mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
		{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: "replace"}}}},
	}
	secColl := client.Database("m").Collection("src", options.Collection().SetReadPreference(readpref.Secondary()))
	cur, err := secColl.Aggregate(ctx, pipeline)
	if err != nil {
		t.Fatalf("$merge with read preference secondary: %v", err)
	}
	cur.Close(ctx)
	dst := client.Database("m").Collection("dst")
	n, err := dst.CountDocuments(ctx, bson.D{})
	if err != nil || n != 4 {
		t.Fatalf("$merge target on the primary holds %d docs (%v), want 4", n, err)
	}
	var g bson.M
	if err := dst.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&g); err != nil || g["total"] != int32(1+5+9+13+17) {
		t.Fatalf("merged group 1 = %v (%v)", g, err)
	}

	// $out on the primary replaces its target.
	cur, err = src.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "k", Value: 0}}}}, {{Key: "$out", Value: "dst"}}})
	if err != nil {
		t.Fatal(err)
	}
	cur.Close(ctx)
	if n, _ := dst.CountDocuments(ctx, bson.D{}); n != 5 {
		t.Fatalf("after $out, dst has %d docs, want 5", n)
	}
}

// A killed member restarts, catches up, and does not disturb the primary
// elected without it: it never runs for election. (Another member may,
// when a busy machine delays heartbeats past the short election timeout;
// that is load, not the rejoin, and the member's log says which it was.)
func TestKilledMemberRestartsAndCatchesUp(t *testing.T) {
	var logs stormtest.SyncBuffer
	rs := startSet(t, mongosim.ReplicaSetOptions{ElectionTimeout: 1500 * time.Millisecond, HeartbeatInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	client := connect(t, rs.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := client.Database("r").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority()))
	old := rs.Primary()
	rs.Kill(old)
	t0 := time.Now()
	p, err := rs.WaitForPrimary(ctx)
	if err != nil || p == old {
		t.Fatalf("no new primary: %v", err)
	}
	t.Logf("in-process election took %v", time.Since(t0).Round(time.Millisecond))
	for i := range 100 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	rejoined := len(logs.String())
	if err := rs.Restart(old); err != nil {
		t.Fatal(err)
	}
	direct := connect(t, "mongodb://"+rs.Hosts()[old]+"/?directConnection=true", options.Client().SetReadPreference(readpref.SecondaryPreferred()))
	for {
		n, err := direct.Database("r").Collection("c").CountDocuments(ctx, bson.D{})
		if err == nil && n == 100 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("restarted member has %d docs (%v), want 100", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var ran []string
	for _, line := range strings.Split(logs.String()[rejoined:], "\n") {
		if strings.Contains(line, `msg="running for election"`) {
			ran = append(ran, line)
		}
	}
	for _, line := range ran {
		if strings.Contains(line, "member="+rs.Hosts()[old]+" ") {
			t.Errorf("the rejoining member ran for election: %s", line)
		}
	}
	if now := rs.Primary(); now != p {
		if now == old {
			t.Errorf("the rejoining member became primary (was %d)", p)
		}
		t.Logf("the primary moved from %d to %d while the member rejoined; elections run by others (a busy host's late heartbeats): %q", p, now, ran)
	}
}

func TestDirStorageSurvivesTornTail(t *testing.T) {
	dir := t.TempDir()
	st := &mongosim.DirStorage{Dir: dir}
	if _, _, err := st.Load(); err != nil {
		t.Fatal(err)
	}
	var entries []bson.Raw
	for i := range 3 {
		b, _ := bson.Marshal(bson.D{{Key: "i", Value: i}})
		entries = append(entries, b)
	}
	if err := st.Append(entries); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMeta(mongosim.Meta{Term: 7}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// A kill in the middle of a write leaves half a document behind.
	f, err := os.OpenFile(filepath.Join(dir, "mongosim.oplog.bson"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(entries[0][:7])
	f.Close()
	st2 := &mongosim.DirStorage{Dir: dir}
	meta, got, err := st2.Load()
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if meta.Term != 7 || len(got) != 3 {
		t.Fatalf("after torn tail: term %d, %d entries; want 7, 3", meta.Term, len(got))
	}
	b, _ := bson.Marshal(bson.D{{Key: "i", Value: 3}})
	if err := st2.Append([]bson.Raw{b}); err != nil {
		t.Fatal(err)
	}
	st2.Close()
	_, got, _ = (&mongosim.DirStorage{Dir: dir}).Load()
	if len(got) != 4 {
		t.Fatalf("append after truncating the torn tail: %d entries, want 4", len(got))
	}
}

// A primary that dies and is back (as a secondary) before the election
// timeout must not stop the others from electing a new primary: a
// restarted member answering oplog reads is not a primary. (Until this was
// fixed, no member ever ran for election after a quick restart, so an
// OOM-killed primary restarted by its supervisor left the set without a
// primary for good.)
func TestQuicklyRestartedPrimaryStillGetsReplaced(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{ElectionTimeout: 1500 * time.Millisecond, HeartbeatInterval: 300 * time.Millisecond})
	client := connect(t, rs.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Writes the secondaries may not have yet: the old primary is ahead.
	coll := client.Database("r").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 1}))
	for i := range 50 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	old := rs.Primary()
	rs.Kill(old)
	time.Sleep(300 * time.Millisecond) // back well within the election timeout
	if err := rs.Restart(old); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for rs.Primary() < 0 {
		if time.Since(t0) > time.Minute { // generous: a busy machine slows elections
			t.Fatalf("no primary %v after the old one came back as a secondary", time.Since(t0).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("a new primary (member %d; the old one was %d) %v after the restart", rs.Primary(), old, time.Since(t0).Round(time.Millisecond))
}

// Durations that are no durations are refused before any member starts
// (a negative election timeout reached replSetInitiate and became the
// 10 s default there).
func TestReplicaSetRefusesNegativeDurations(t *testing.T) {
	for name, opts := range map[string]mongosim.ReplicaSetOptions{
		"ElectionTimeout":   {ElectionTimeout: -5 * time.Second},
		"HeartbeatInterval": {HeartbeatInterval: time.Microsecond},
		"RestartDelay":      {RestartDelay: -time.Second},
		"Members":           {Members: -1},
	} {
		rs, err := mongosim.StartReplicaSet(context.Background(), opts)
		if err == nil {
			rs.Close()
			t.Errorf("%s: %+v started a set", name, opts)
		} else if !strings.Contains(err.Error(), "ReplicaSetOptions."+name) {
			t.Errorf("%s: %v; want the option named", name, err)
		}
	}
}
