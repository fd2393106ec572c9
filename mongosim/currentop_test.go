package mongosim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

// idleCursors lists what $currentOp with opts reports as idle cursors.
func idleCursors(t *testing.T, ctx context.Context, admin *mongo.Database, opts bson.D) []bson.Raw {
	t.Helper()
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: opts}},
		{{Key: "$match", Value: bson.D{{Key: "type", Value: "idleCursor"}}}}})
	if err != nil {
		t.Fatalf("$currentOp %v: %v", opts, err)
	}
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// $currentOp lists a cursor between getMores as mongod does with
// idleCursors: true (type "idleCursor", the cursor's id, what it has
// returned, the command that opened it) and not without it, and not
// while a getMore holds it; its options are booleans with mongod's
// errors.
func TestCurrentOpListsIdleCursors(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	client := connect(t, rs.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, admin := client.Database("app"), client.Database("admin")
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	if _, err := db.Collection("things").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Cursor struct {
			ID int64 `bson:"id"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "things"}, {Key: "batchSize", Value: 2}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	id := reply.Cursor.ID
	if id == 0 {
		t.Fatal("find of 10 documents in batches of 2 left no cursor")
	}
	if got := idleCursors(t, ctx, admin, bson.D{{Key: "allUsers", Value: true}}); len(got) != 0 {
		t.Errorf("without idleCursors, $currentOp listed %d idle cursors", len(got))
	}
	check := func(docs, batches int64) {
		t.Helper()
		got := idleCursors(t, ctx, admin, bson.D{{Key: "allUsers", Value: true}, {Key: "idleCursors", Value: true}})
		if len(got) != 1 {
			t.Fatalf("idleCursors: true listed %d idle cursors, want 1: %v", len(got), got)
		}
		c := got[0]
		if v, _ := c.Lookup("cursor", "cursorId").AsInt64OK(); v != id {
			t.Errorf("cursorId %d, want %d", v, id)
		}
		if ns, _ := c.Lookup("ns").StringValueOK(); ns != "app.things" {
			t.Errorf("ns %q", ns)
		}
		if v, _ := c.Lookup("cursor", "nDocsReturned").AsInt64OK(); v != docs {
			t.Errorf("nDocsReturned %d, want %d", v, docs)
		}
		if v, _ := c.Lookup("cursor", "nBatchesReturned").AsInt64OK(); v != batches {
			t.Errorf("nBatchesReturned %d, want %d", v, batches)
		}
		if coll, _ := c.Lookup("cursor", "originatingCommand", "find").StringValueOK(); coll != "things" {
			t.Errorf("originatingCommand %v", c.Lookup("cursor", "originatingCommand"))
		}
		if c.Lookup("lsid").Type == 0 {
			t.Error("no lsid, though the driver sent one")
		}
		created, _ := c.Lookup("cursor", "createdDate").TimeOK()
		last, _ := c.Lookup("cursor", "lastAccessDate").TimeOK()
		if created.IsZero() || last.Before(created) {
			t.Errorf("createdDate %v, lastAccessDate %v", created, last)
		}
	}
	check(2, 1)
	if err := db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "things"}, {Key: "batchSize", Value: 3}}).Err(); err != nil {
		t.Fatal(err)
	}
	check(5, 2)

	for _, c := range []struct {
		opts bson.D
		msg  string
	}{
		{bson.D{{Key: "idleCursor", Value: true}}, "Unrecognized option 'idleCursor' in $currentOp stage."},
		{bson.D{{Key: "idleCursors", Value: "yes"}}, "The 'idleCursors' parameter of the $currentOp stage must be a boolean value, but found: string"},
	} {
		_, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: c.opts}}})
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 9 || ce.Message != c.msg {
			t.Errorf("$currentOp %v: %v, want FailedToParse (9) %q", c.opts, err, c.msg)
		}
	}
}

// A storm query's cursor between getMores keeps its stage's buffer, and
// $currentOp shows it as the idle cursor's tracked memory, the model's
// figure for that cursor: what a sampler's census counts as memory in
// idle cursors.
func TestIdleStormCursorShowsItsTrackedMemory(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	client := connect(t, rs.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := client.Database("storm").Collection("events")
	stormtest.LoadData(t, ctx, coll)
	cur, err := stormtest.Open(ctx, coll, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(context.Background())
	got := idleCursors(t, ctx, client.Database("admin"), bson.D{{Key: "idleCursors", Value: true}})
	if len(got) != 1 {
		t.Fatalf("%d idle cursors listed, want the storm query's", len(got))
	}
	if v, _ := got[0].Lookup("cursor", "cursorId").AsInt64OK(); v != cur.ID() {
		t.Errorf("cursorId %d, want %d", v, cur.ID())
	}
	inUse, ok := got[0].Lookup("inUseTrackedMemBytes").AsInt64OK()
	peak, _ := got[0].Lookup("peakTrackedMemBytes").AsInt64OK()
	if !ok || inUse <= 0 || peak < inUse {
		t.Errorf("idle storm cursor: inUseTrackedMemBytes %v, peakTrackedMemBytes %v: want a buffer held, and a peak at least that", got[0].Lookup("inUseTrackedMemBytes"), peak)
	}
	if ps, _ := got[0].Lookup("planSummary").StringValueOK(); ps == "" {
		t.Error("no planSummary")
	}
}
