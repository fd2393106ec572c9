package mongosim_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
)

// A one-member set's majority is its one member: after replSetInitiate a
// write with the default write concern (w:majority) commits as soon as the
// primary has journaled it, instead of waiting for secondaries that do not
// exist.
func TestOneMemberSetCommitsDefaultWriteConcern(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{ReplSet: "rs0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct := connect(t, "mongodb://"+s.Addr()+"/?directConnection=true")
	admin := direct.Database("admin")
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: s.Addr()}}}}}
	if err := admin.RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	for {
		var hello struct {
			IsWritablePrimary bool `bson:"isWritablePrimary"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err == nil && hello.IsWritablePrimary {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the initiated member never became primary")
		case <-time.After(50 * time.Millisecond):
		}
	}
	c := connect(t, "mongodb://"+s.Addr()+"/?replicaSet=rs0")
	coll := c.Database("app").Collection("docs")
	// Deadline generous for a loaded host; before the fix the insert
	// waited for a commit point that never moved, until this expired.
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	if _, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("default write concern insert on a one-member set: %v", err)
	}
	var st bson.Raw
	st, err = admin.RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	at, ai, _ := st.Lookup("optimes", "appliedOpTime", "ts").TimestampOK()
	ct, ci, ok := st.Lookup("optimes", "lastCommittedOpTime", "ts").TimestampOK()
	if !ok || ct != at || ci != ai {
		t.Fatalf("commit point %d.%d, applied %d.%d: a one-member set commits what it applied", ct, ci, at, ai)
	}
	// A majority read sees the write.
	n, err := coll.CountDocuments(ctx, bson.D{}, options.Count())
	if err != nil || n != 1 {
		t.Fatalf("count %d (%v), want 1", n, err)
	}
}
