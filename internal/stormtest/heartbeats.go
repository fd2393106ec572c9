package stormtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Heartbeats records a client's server checks: how many started, how many
// of those were awaitable hellos (the kind a server holds for
// maxAwaitTimeMS), and a signal per succeeded one.
type Heartbeats struct {
	started, awaited atomic.Int64
	succeeded        chan struct{}
}

// WatchHeartbeats sets a server monitor on o that records its checks.
func WatchHeartbeats(o *options.ClientOptions) (*options.ClientOptions, *Heartbeats) {
	h := &Heartbeats{succeeded: make(chan struct{}, 64)}
	return o.SetServerMonitor(&event.ServerMonitor{
		ServerHeartbeatStarted: func(e *event.ServerHeartbeatStartedEvent) {
			h.started.Add(1)
			if e.Awaited {
				h.awaited.Add(1)
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

// Counts is how many checks started and how many of them were awaitable.
func (h *Heartbeats) Counts() (started, awaited int) {
	return int(h.started.Load()), int(h.awaited.Load())
}

// Succeeded signals each succeeded check (dropped when nobody waits).
func (h *Heartbeats) Succeeded() <-chan struct{} { return h.succeeded }

// NoAwaitedHeartbeat connects with o, waits for two succeeded checks (the
// second is where a streaming monitor would await), disconnects, and fails
// the test if any check was an awaitable hello or fewer than two started.
func NoAwaitedHeartbeat(t testing.TB, o *options.ClientOptions) {
	t.Helper()
	o, h := WatchHeartbeats(o)
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
	if started, awaited := h.Counts(); awaited > 0 || started < 2 {
		t.Errorf("%d heartbeats started, %d of them awaitable; want at least 2, none awaitable", started, awaited)
	}
}
