package ferretdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The peer is what the other tests take it for: an independent server
// (buildInfo names FerretDB and the pinned version) that answers as a
// standalone (hello without setName), on a loopback address, and that
// stores and returns documents.
func TestPeerIsAStandaloneFerretDB(t *testing.T) {
	s := startPeer(t)
	if !strings.HasPrefix(s.URI(), "mongodb://127.0.0.1:") {
		t.Errorf("URI %q; want a loopback address", s.URI())
	}
	c := connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var hello bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if _, ok := hello["setName"]; ok {
		t.Errorf("hello has setName %v; want a standalone", hello["setName"])
	}
	if hello["isWritablePrimary"] != true {
		t.Errorf("hello isWritablePrimary = %v; want true", hello["isWritablePrimary"])
	}

	var info bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		t.Fatalf("buildInfo: %v", err)
	}
	fv, _ := info["ferretdbVersion"].(string)
	if !strings.Contains(fv, strings.TrimPrefix(Version, "v")) {
		t.Errorf("buildInfo ferretdbVersion = %q; want it to name %s", fv, Version)
	}

	coll := c.Database("peer").Collection("docs")
	docs := []any{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "b"}}}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatalf("insertMany: %v", err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "x", Value: "b"}}).Decode(&got); err != nil {
		t.Fatalf("find x=b: %v", err)
	}
	if got["_id"] != int32(2) {
		t.Errorf("find x=b returned %v; want _id 2", got)
	}
}

// A second Stop returns at once with the first one's result.
func TestPeerStopsTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, err := Start(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("start FerretDB: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("first stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}
