package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/mongosim"
)

// The merge driver's clients to one member (failpoints, shed counters,
// $out leftovers) live for a command or two; an awaitable hello on one of
// them is what a Disconnect waited out for 10 s between merge ops. None
// may start one, across as many checks as the default monitor needs to.
func TestMergeDriverDirectClientsAwaitNoHeartbeat(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	d := &MergeDriver{URI: "mongodb://" + s.Addr() + "/"}
	var mu sync.Mutex
	var started, awaited int
	succeeded := make(chan struct{}, 64)
	o := d.directOptions(s.Addr()).SetHeartbeatInterval(500 * time.Millisecond).SetServerMonitor(&event.ServerMonitor{
		ServerHeartbeatStarted: func(e *event.ServerHeartbeatStartedEvent) {
			mu.Lock()
			defer mu.Unlock()
			started++
			if e.Awaited {
				awaited++
			}
		},
		ServerHeartbeatSucceeded: func(*event.ServerHeartbeatSucceededEvent) {
			select {
			case succeeded <- struct{}{}:
			default:
			}
		},
	})
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
		case <-succeeded:
		case <-deadline:
			t.Fatalf("%d of 2 heartbeats succeeded", n)
		}
	}
	if err := c.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if awaited > 0 || started < 2 {
		t.Errorf("%d heartbeats started, %d of them awaitable; want at least 2, none awaitable", started, awaited)
	}
}
