package workload

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/model"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The harness's own reads (the load step's check that the collection is
// there, what a merge op wrote, what $out left behind) are measurements,
// not workload: harnessCount uses the count command, which holds no
// tracked memory, so no shedder takes it. Where the pressure pins the
// chance of a shed to 1 (master's hazard at the high mark) and each real
// document stands for 200, as in a run, a count by aggregation (the
// driver's CountDocuments, a $group) is shed; harnessCount is not, and the
// storm's and the merge's load steps find their loaded collections there
// without reloading them. The sharded path once counted by aggregation,
// and the shed of that count turned a valid trial of arm G invalid in CI.
func TestHarnessCountsAreNotShed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mongosim.Start(mongosim.Options{Sim: mongosim.SimOptions{CPUs: 8, ScanScale: 200, PartitionMB: 20},
		Parameters: map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70",
			"simShedHazard": model.HazardOdds}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr() + "/?directConnection=true").SetRetryReads(false).SetMaxAdaptiveRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	docs := make([]any, 500)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}, {Key: "run", Value: i}}
	}
	db := c.Database("qmlsab")
	if _, err := db.Collection("written").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
		{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "usagePercent", Value: 99}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var ce mongo.CommandError
	if _, err := db.Collection("written").CountDocuments(ctx, bson.D{}); !errors.As(err, &ce) || ce.Name != "QueryMemoryLimitExceeded" {
		t.Fatalf("a count by aggregation: %v, want it shed (the test's pressure is not what it needs)", err)
	}
	for range 5 {
		if n, err := harnessCount(ctx, db, "written"); err != nil || n != 500 {
			t.Fatalf("harnessCount: %d, %v; want 500", n, err)
		}
	}

	// The load steps count what is there before writing anything: a
	// loaded collection stays as it is (the documents' marks survive).
	uri := "mongodb://" + s.Addr() + "/?directConnection=true"
	if _, err := db.Collection("events").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := (&Driver{URI: uri, RealDocs: len(docs), DB: "qmlsab"}).Load(ctx); err != nil {
		t.Fatalf("the storm's load step under pressure: %v", err)
	}
	if _, err := db.Collection("merge_source").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := (&MergeDriver{URI: uri, DB: "qmlsab", Spec: MergePartialWrite{SourceDocs: len(docs)}}).load(ctx, c); err != nil {
		t.Fatalf("the merge's load step under pressure: %v", err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
		{Key: "mode", Value: "off"}}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"events", "merge_source"} {
		if n, err := db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "run", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil {
			t.Fatal(err)
		} else if n != int64(len(docs)) {
			t.Errorf("%s: %d documents keep their marks, want %d: the load step reloaded a loaded collection", coll, n, len(docs))
		}
	}
}
