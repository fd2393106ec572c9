package mongosim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

func armParams(t *testing.T, name string) map[string]string {
	a, ok := arms.Lookup(name)
	if !ok {
		t.Fatalf("no arm %s", name)
	}
	return a.SetParameters
}

// TestSecondaryMergeShedAfterWriting is the partial-write investigation over the wire: a $merge
// run with read preference secondary forwards its writes to the primary,
// so it never takes the write-intent latch; shed after its first batch it
// leaves documents behind — unless the write-started flag (arm G) latches
// it. On the primary the latch always protects it.
func TestSecondaryMergeShedAfterWriting(t *testing.T) {
	for _, tc := range []struct {
		arm        string
		secondary  bool
		wantUnsafe bool
	}{
		{"E", true, true}, {"F", true, true}, {"G", true, false},
		{"E", false, false}, {"F", false, false}, {"G", false, false},
	} {
		name := fmt.Sprintf("%s/secondary=%v", tc.arm, tc.secondary)
		t.Run(name, func(t *testing.T) {
			rs := startSet(t, mongosim.ReplicaSetOptions{Parameters: armParams(t, tc.arm)})
			client := connect(t, rs.URI())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			src := client.Database("m").Collection("src", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 3}))
			var docs []any
			for i := range 500 {
				docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}})
			}
			if _, err := src.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			// Arm always-shed on every member from the merge's second write
			// batch, with memory pressure above the low mark.
			for _, h := range rs.Hosts() {
				direct := connect(t, "mongodb://"+h+"/?directConnection=true")
				err := direct.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "queryMemoryLoadSheddingAlwaysShed"},
					{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "writeBatchesBeforeShed", Value: 1}}}}).Err()
				if err != nil {
					t.Fatal(err)
				}
				// Like mongod, the failpoint sheds only above the low mark.
				err = direct.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "queryMemoryPressureOverride"},
					{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{{Key: "usagePercent", Value: 50}}}}).Err()
				if err != nil {
					t.Fatal(err)
				}
			}
			rp := readpref.Primary()
			if tc.secondary {
				rp = readpref.Secondary()
			}
			coll := client.Database("m").Collection("src", options.Collection().SetReadPreference(rp))
			cur, err := coll.Aggregate(ctx, mongo.Pipeline{
				{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
					{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}},
				{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}}}},
			})
			if err == nil {
				cur.Close(ctx)
			}
			written, cerr := client.Database("m").Collection("dst").CountDocuments(ctx, bson.D{})
			if cerr != nil {
				t.Fatal(cerr)
			}
			var ce mongo.CommandError
			shed := errors.As(err, &ce) && ce.Name == "QueryMemoryLimitExceeded"
			unsafe := shed && written > 0
			if unsafe != tc.wantUnsafe {
				t.Fatalf("err=%v written=%d: unsafe shed=%v, want %v", err, written, unsafe, tc.wantUnsafe)
			}
			if shed && (!ce.HasErrorLabel("SystemOverloadedError") || !ce.HasErrorLabel("RetryableError")) {
				t.Errorf("shed error lacks its labels: %v", ce.Labels)
			}
			if !shed && (err != nil || written != 500) {
				t.Fatalf("unshed merge: err=%v written=%d, want 500 documents", err, written)
			}
		})
	}
}
