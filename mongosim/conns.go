package mongosim

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// connTable is the set of a listener's open client connections, keyed by
// whatever the listener calls a connection, with the numbers serverStatus
// reports of them: how many are open and how many were ever accepted. A
// member (Server) and a router keep one each.
type connTable[K comparable] struct {
	mu      sync.Mutex
	open    map[K]net.Conn
	ids     atomic.Int64
	created atomic.Int64
}

// nextID is a new connection id, unique within the table's listener.
func (t *connTable[K]) nextID() int64 { return t.ids.Add(1) }

// add registers an accepted connection. Once ctx (the listener's life) is
// done it closes nc instead and returns false: a connection accepted while
// the listener shuts down must not outlive the closeAll that shutdown has
// already run.
func (t *connTable[K]) add(ctx context.Context, key K, nc net.Conn) bool {
	t.mu.Lock()
	if ctx.Err() != nil {
		t.mu.Unlock()
		nc.Close()
		return false
	}
	if t.open == nil {
		t.open = map[K]net.Conn{}
	}
	t.open[key] = nc
	t.mu.Unlock()
	t.created.Add(1)
	return true
}

// remove forgets a connection that has ended.
func (t *connTable[K]) remove(key K) {
	t.mu.Lock()
	delete(t.open, key)
	t.mu.Unlock()
}

// current is how many connections are open now.
func (t *connTable[K]) current() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// totalCreated is how many connections the listener ever accepted.
func (t *connTable[K]) totalCreated() int64 { return t.created.Load() }

// closeAll closes every open connection; their serving goroutines then end
// and remove them.
func (t *connTable[K]) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, nc := range t.open {
		nc.Close()
	}
}
