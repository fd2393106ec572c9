package mongosim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"

	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// Defaults of ConnLimits, per listener (a member or a router). They are
// sized for a process the size of mongosim's: a test or a laptop's, a few
// GiB at most, which 40 connections each claiming a 48 MB message used to
// exhaust.
const (
	// DefaultMaxIncomingConnections caps a listener's open connections.
	// An idle connection costs mongosim its 16 KiB read buffer and its
	// goroutine's stack (docs/reliability.md has what the cap's worth of
	// them was measured to hold).
	// The harness's own clients stay below: a canary or sampler pool (the
	// driver's 100 connections at most), the killOp actor's one, the
	// members' heartbeats and oplog fetches, and a storm that holds one
	// connection per query in flight: ~270 for each second its queries
	// last at its default 271.5 queries/s.
	DefaultMaxIncomingConnections = 10_000
	// DefaultMaxIncomingBytes is the budget for the bodies of messages
	// being read at once across a listener's connections: one message of
	// the largest size (48 MB) as its buffer grows, plus room for the
	// others. A message no larger than a connection's 16 KiB read buffer
	// (hello, ping, a getMore, a heartbeat) never waits for it.
	DefaultMaxIncomingBytes = 128 << 20
	// DefaultMessageTimeout is how long the rest of a message may take
	// once its first byte has arrived: a client's message over loopback or
	// a LAN arrives in milliseconds, 48 MB at 2 MB/s within it.
	DefaultMessageTimeout = 30 * time.Second
)

// ConnLimits bound what clients may hold of a listener, whoever they are
// (mongosim has no authentication): how many connections, how many bytes
// of messages being read, and for how long a message may be half sent.
// Zero fields take the defaults above.
type ConnLimits struct {
	// MaxIncomingConnections is mongod's net.maxIncomingConnections
	// (--maxConns); like mongod, a listener never allows more than 80 % of
	// the process's open-files limit. A connection past it is closed as
	// soon as it is accepted, and logged.
	MaxIncomingConnections int
	// MaxIncomingBytes is the bytes of message bodies being read at once
	// across the listener's connections (wire.ReadLimits.Budget); at least
	// wire.MinReadBudget.
	MaxIncomingBytes int64
	// MessageTimeout is how long the rest of a message may take once its
	// first byte has arrived; a connection that is slower is closed.
	MessageTimeout time.Duration
}

// resolve applies the defaults and checks the values; what names the
// options in errors.
func (l ConnLimits) resolve(what string) (ConnLimits, error) {
	switch {
	case l.MaxIncomingConnections < 0:
		return l, fmt.Errorf("%s.MaxIncomingConnections %d: must not be negative", what, l.MaxIncomingConnections)
	case l.MaxIncomingBytes < 0 || l.MaxIncomingBytes > 0 && l.MaxIncomingBytes < wire.MinReadBudget:
		return l, fmt.Errorf("%s.MaxIncomingBytes %d: must be at least %d (a message of the largest size as it is read)", what, l.MaxIncomingBytes, wire.MinReadBudget)
	case l.MessageTimeout < 0:
		return l, fmt.Errorf("%s.MessageTimeout %v: must not be negative", what, l.MessageTimeout)
	}
	if l.MaxIncomingConnections == 0 {
		l.MaxIncomingConnections = DefaultMaxIncomingConnections
	}
	if l.MaxIncomingBytes == 0 {
		l.MaxIncomingBytes = DefaultMaxIncomingBytes
	}
	if l.MessageTimeout == 0 {
		l.MessageTimeout = DefaultMessageTimeout
	}
	l.MaxIncomingConnections = min(l.MaxIncomingConnections, fileLimitedConnections())
	return l, nil
}

// fileLimitedConnections is mongod's bound on connections: 80 % of the
// process's open-files limit, the rest left for its files and its own
// connections to peers.
func fileLimitedConnections() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return DefaultMaxIncomingConnections
	}
	return max(1, int(min(rl.Cur, 1<<30)*8/10))
}

// readLimits is what each of the listener's connections reads within; one
// budget for all of them.
func (l ConnLimits) readLimits() wire.ReadLimits {
	return wire.ReadLimits{Budget: semaphore.NewWeighted(l.MaxIncomingBytes), Timeout: l.MessageTimeout}
}

// Errors of connTable.add.
var (
	errListenerClosed     = errors.New("listener closed")
	errTooManyConnections = errors.New("too many open connections")
)

// connTable is the set of a listener's open client connections, keyed by
// whatever the listener calls a connection, with the numbers serverStatus
// reports of them: how many are open, how many were ever accepted and
// how many were refused for the cap. A member (Server) and a router keep
// one each.
type connTable[K comparable] struct {
	mu       sync.Mutex
	open     map[K]net.Conn
	ids      atomic.Int64
	created  atomic.Int64
	rejected atomic.Int64
}

// nextID is a new connection id, unique within the table's listener.
func (t *connTable[K]) nextID() int64 { return t.ids.Add(1) }

// add registers an accepted connection. With limit connections open
// already it closes nc and returns errTooManyConnections, as mongod
// closes a connection past net.maxIncomingConnections. Once ctx (the
// listener's life) is done it closes nc and returns errListenerClosed: a
// connection accepted while the listener shuts down must not outlive the
// closeAll that shutdown has already run.
func (t *connTable[K]) add(ctx context.Context, key K, nc net.Conn, limit int) error {
	t.mu.Lock()
	if ctx.Err() != nil {
		t.mu.Unlock()
		nc.Close()
		return errListenerClosed
	}
	if len(t.open) >= limit {
		t.mu.Unlock()
		// Counted before the close: a client that sees its connection
		// closed and asks serverStatus at once must find it counted.
		t.rejected.Add(1)
		nc.Close()
		return errTooManyConnections
	}
	if t.open == nil {
		t.open = map[K]net.Conn{}
	}
	t.open[key] = nc
	t.mu.Unlock()
	t.created.Add(1)
	return nil
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

// totalRejected is how many connections the listener closed at once for
// its cap.
func (t *connTable[K]) totalRejected() int64 { return t.rejected.Load() }

// closeAll closes every open connection; their serving goroutines then end
// and remove them.
func (t *connTable[K]) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, nc := range t.open {
		nc.Close()
	}
}
