package mongoclient

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

// A short-lived client's monitor never starts an awaitable hello (the
// check a Disconnect can fail to interrupt, and then waits out for
// maxAwaitTimeMS); the driver's default monitor does, right after its
// first check, which is what made the merge trials' short clients stall.
func TestShortLivedClientNeverAwaitsAHeartbeat(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	uri := "mongodb://" + s.Addr() + "/?directConnection=true"

	t.Run("default streams", func(t *testing.T) {
		// A short interval is a short maxAwaitTimeMS: the Disconnect
		// below, right as the awaitable hello starts, can wait it out.
		o, h := stormtest.WatchHeartbeats(options.Client().ApplyURI(uri).SetHeartbeatInterval(500 * time.Millisecond))
		c, err := mongo.Connect(o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(context.Background())
		deadline := time.After(30 * time.Second)
		for {
			if _, awaited := h.Counts(); awaited > 0 {
				return
			}
			select {
			case <-h.Succeeded():
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatal("the default monitor started no awaitable hello: the control case no longer shows what ShortLived avoids")
			}
		}
	})

	t.Run("short-lived polls", func(t *testing.T) {
		// The shortest heartbeat interval the driver allows, so a second
		// check comes soon; under the default monitor it would be awaited.
		stormtest.NoAwaitedHeartbeat(t, ShortLived(options.Client().ApplyURI(uri).SetHeartbeatInterval(500*time.Millisecond)))
	})
}
