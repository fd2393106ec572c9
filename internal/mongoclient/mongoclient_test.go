package mongoclient

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
)

// heartbeats records a client's server checks: whether each started one
// was awaitable, and a signal per succeeded one.
type heartbeats struct {
	mu        sync.Mutex
	awaited   int
	started   int
	succeeded chan struct{}
}

func watch(o *options.ClientOptions) (*options.ClientOptions, *heartbeats) {
	h := &heartbeats{succeeded: make(chan struct{}, 64)}
	return o.SetServerMonitor(&event.ServerMonitor{
		ServerHeartbeatStarted: func(e *event.ServerHeartbeatStartedEvent) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.started++
			if e.Awaited {
				h.awaited++
			}
		},
		ServerHeartbeatSucceeded: func(*event.ServerHeartbeatSucceededEvent) {
			select {
			case h.succeeded <- struct{}{}:
			default:
			}
		},
	}), h
}

func (h *heartbeats) counts() (started, awaited int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started, h.awaited
}

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
		o, h := watch(options.Client().ApplyURI(uri).SetHeartbeatInterval(500 * time.Millisecond))
		c, err := mongo.Connect(o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(context.Background())
		deadline := time.After(30 * time.Second)
		for {
			if _, awaited := h.counts(); awaited > 0 {
				return
			}
			select {
			case <-h.succeeded:
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatal("the default monitor started no awaitable hello: the control case no longer shows what ShortLived avoids")
			}
		}
	})

	t.Run("short-lived polls", func(t *testing.T) {
		// The shortest heartbeat interval the driver allows, so a second
		// check comes soon; under the default monitor it would be awaited.
		o, h := watch(ShortLived(options.Client().ApplyURI(uri).SetHeartbeatInterval(500 * time.Millisecond)))
		c, err := mongo.Connect(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(60 * time.Second)
		for n := 0; n < 2; n++ {
			select {
			case <-h.succeeded:
			case <-deadline:
				t.Fatalf("%d of 2 heartbeats succeeded", n)
			}
		}
		if err := c.Disconnect(context.Background()); err != nil {
			t.Fatal(err)
		}
		if started, awaited := h.counts(); awaited > 0 || started < 2 {
			t.Errorf("%d heartbeats started, %d of them awaitable; want at least 2, none awaitable", started, awaited)
		}
	})
}
