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

// The harness's own reads in a merge run (what an op wrote, what $out
// left behind) are measurements, not workload: countWritten uses the count
// command, which holds no tracked memory, so no shedder takes it. Where the
// pressure pins the chance of a shed to 1 (master's hazard at the high
// mark) and each real document stands for 200, as in a run, a count by
// aggregation (the driver's CountDocuments, a $group) is shed; countWritten
// is not. The sharded path once counted by aggregation, and the shed of
// that count turned a valid trial of arm G invalid in CI.
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
		if n, err := countWritten(ctx, db, "written"); err != nil || n != 500 {
			t.Fatalf("countWritten: %d, %v; want 500", n, err)
		}
	}
}
