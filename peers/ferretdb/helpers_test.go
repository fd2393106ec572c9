package ferretdb

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest"
)

// startTimeout bounds FerretDB's start; it opens SQLite files only, so
// this is a hang guard on a loaded machine, not a speed target.
const startTimeout = 2 * time.Minute

// startPeer starts an embedded FerretDB with its data in a temporary
// folder and stops it when the test ends; its warnings are logged when
// the test fails.
func startPeer(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var log stormtest.SyncBuffer
	s, err := Start(ctx, t.TempDir(), &log)
	if err != nil {
		t.Fatalf("start FerretDB: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop FerretDB: %v", err)
		}
		if t.Failed() && log.String() != "" {
			t.Logf("FerretDB's log:\n%s", log.String())
		}
	})
	return s
}

// connect is a driver client on the peer, connected directly (it is a
// standalone), disconnected when the test ends.
func connect(t *testing.T, s *Server) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.URI()).SetDirect(true).SetServerSelectionTimeout(time.Minute))
	if err != nil {
		t.Fatalf("connect to FerretDB at %s: %v", s.URI(), err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}
