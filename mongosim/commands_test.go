package mongosim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/mongosim"
)

func TestMajorityWriteTimesOutWithoutSecondaries(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	p := rs.Primary()
	client := connect(t, "mongodb://"+rs.Hosts()[p]+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		if i != p {
			rs.Kill(i)
		}
	}
	// Driver v2 has no wtimeout option (it uses client-side timeouts), so
	// send the command as other clients do.
	start := time.Now()
	r, err := client.Database("w").RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 300}}}}).Raw()
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || r.Lookup("n").AsInt64() != 1 || r.Lookup("writeConcernError", "code").AsInt64() != 64 ||
		!r.Lookup("writeConcernError", "errInfo", "wtimeout").Boolean() {
		t.Fatalf("w:majority with no secondaries: %v %v, want n:1 and writeConcernError WriteConcernFailed (64)", r, err)
	}
	// The write concern error (not the 10 s context's) shows it returned at
	// the wtimeout; it cannot have returned before it.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("wtimeout 300ms returned after %v", d)
	}
	// w:1 is acknowledged by the primary alone.
	one := client.Database("w").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 1}))
	if _, err := one.InsertOne(ctx, bson.D{{Key: "x", Value: 2}}); err != nil {
		t.Fatalf("w:1 insert: %v", err)
	}
}

func TestFailCommandFailpointAndParameters(t *testing.T) {
	s := startStandalone(t)
	client := connect(t, "mongodb://"+s.Addr()+"/?directConnection=true", options.Client().SetAppName("victim"))
	admin := client.Database("admin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := admin.RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "errorCode", Value: 2},
			{Key: "errorLabels", Value: bson.A{"RetryableError"}}, {Key: "appName", Value: "victim"}}}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	coll := client.Database("d").Collection("c")
	err = coll.FindOne(ctx, bson.D{}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 2 || !ce.HasErrorLabel("RetryableError") {
		t.Fatalf("find under failCommand: %v, want BadValue (2) with its label", err)
	}
	if err := coll.FindOne(ctx, bson.D{}).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("second find (failpoint used up): %v", err)
	}
	err = admin.RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "noSuchFailPoint"}, {Key: "mode", Value: "alwaysOn"}}).Err()
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Fatalf("unknown failpoint: %v", err)
	}

	get := func() int64 {
		r, err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return r.Lookup("internalQueryMaxBlockingSortMemoryUsageBytes").AsInt64()
	}
	if v := get(); v != 104857600 {
		t.Fatalf("default = %d", v)
	}
	r, err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: 33554432}}).Raw()
	if err != nil || r.Lookup("was").AsInt64() != 104857600 {
		t.Fatalf("setParameter: %v %v", r, err)
	}
	if v := get(); v != 33554432 {
		t.Fatalf("after setParameter = %d", v)
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "nonexistent", Value: 1}}).Err(); !errors.As(err, &ce) || ce.Code != 72 {
		t.Fatalf("getParameter of an unknown name: %v", err)
	}
}

func TestStartupParametersAreValidated(t *testing.T) {
	if _, err := mongosim.Start(mongosim.Options{Parameters: map[string]string{"noSuchParameter": "1"}}); err == nil {
		t.Fatal("an unknown --setParameter must fail start-up")
	}
	if _, err := mongosim.Start(mongosim.Options{Parameters: map[string]string{"internalQueryMaxBlockingSortMemoryUsageBytes": "lots"}}); err == nil {
		t.Fatal("a badly typed --setParameter must fail start-up")
	}
}

func TestOmittedSectionsAreAbsentFromServerStatusAndHostInfo(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{Sim: mongosim.SimOptions{
		OmitStatusSections: []string{"queryMemory", "queues", "mem"}, OmitHostInfo: []string{"memLimitMB"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	client := connect(t, "mongodb://"+s.Addr()+"/?directConnection=true")
	admin := client.Database("admin")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"queryMemory", "queues", "mem"} {
		if _, err := ss.LookupErr(name); err == nil {
			t.Errorf("serverStatus has %s, which the member was told to leave out", name)
		}
	}
	for _, name := range []string{"uptimeMillis", "opcounters", "tcmalloc", "metrics"} {
		if _, err := ss.LookupErr(name); err != nil {
			t.Errorf("serverStatus lost %s, which was not left out", name)
		}
	}
	hi, err := admin.RunCommand(ctx, bson.D{{Key: "hostInfo", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hi.LookupErr("system", "memLimitMB"); err == nil {
		t.Error("hostInfo has system.memLimitMB, which the member was told to leave out")
	}
	if _, err := hi.LookupErr("system", "memSizeMB"); err != nil {
		t.Error("hostInfo lost system.memSizeMB, which was not left out")
	}
}
