package virtual

import (
	"time"

	"github.com/qmlsab/qmlsab/workload"
)

// The virtual clock's clients are the wall clock's: there, the storm and
// the canaries each run through a Go driver client (v2), and what the
// driver does between an operation and the server decides what the
// server receives and when. What the model takes from the driver (its
// connection pool, server selection and operation execution):
//
//   - Each client has a connection pool per member, of at most
//     maxPoolSize connections (0: no limit). A pool starts empty; a
//     connection, once made, stays (no minPoolSize, no maxIdleTimeMS).
//   - A connection is made only for an operation waiting for one, at most
//     maxConnecting at a time per pool, each taking connectTime.
//   - An operation checks out a connection, sends its one request and
//     checks the connection back in when the reply arrives. A cursor's
//     getMore is an operation of its own: it goes to the member that holds
//     the cursor and checks out a connection like any other, behind every
//     operation already waiting.
//   - Waiting operations are served first come, first served: a connection
//     checked in or newly made goes to the one that has waited longest.
//   - Server selection: with no primary, an operation waits for one. The
//     driver bounds the wait for a primary and the wait for a connection
//     together by serverSelectionTimeout, counted from the operation's
//     start; a getMore selects no server (its cursor's member is given),
//     so only its operation timeout bounds its wait for a connection.
//   - The operation timeout (the driver's timeoutMS; for canaries their
//     deadline) bounds the waits and the reply: the client gives up with a
//     timeout. The server is not told: it finishes the operation, and the
//     connection comes back with the reply.
//   - A member that dies fails every operation in flight on it with a
//     network error, and its pools are cleared: the operations waiting for
//     one of its connections fail (the driver's pool-cleared error), its
//     connections are gone, and a new primary's pool starts empty.
//   - Retries are off, as the wall clock's clients set them: every failure
//     is the operation's.
//
// Not modelled: the driver learns of a new primary by its monitors (within
// ~500 ms of an operation starting to wait for one); here it knows at
// once. killCursors, sent when a client gives up on a query whose cursor
// is open, takes no connection here.

// connectTime is how long one connection takes to establish: a TCP
// connect and the driver's hello handshake on one host take well under a
// millisecond, and the engine's resolution is its 1 ms tick. An
// assumption (no TLS, no authentication, as the wall clock's in-process
// set runs); a remote, authenticated server takes tens of milliseconds.
const connectTime = time.Millisecond

// noDeadline marks an operation no timeout bounds.
const noDeadline = time.Duration(1<<63 - 1)

// operation is what a client's request belongs to: a storm query or a
// canary.
type operation interface {
	// send sends the request: it now holds a connection to member.
	send(member int)
	// gaveUp ends the operation with a client error code (a timeout, a
	// cleared pool). If the request was in flight its reply is still to
	// come, and the connection with it.
	gaveUp(code string)
}

// request is one operation of a client from its start to its reply: its
// wait for a primary and a connection, and the connection it holds.
type request struct {
	op operation
	// member whose connection it holds (-1: none) and that pool's
	// generation when it was checked out.
	member     int
	generation uint64
	inFlight   bool
	// abandoned: the client gave up on it in flight; the reply still
	// brings the connection back.
	abandoned bool
	// wait is the bound of its wait for a primary and a connection,
	// timeout the operation's own (noDeadline: none).
	wait, timeout time.Duration
	// heapIndex is its place in the client's deadline heap (-1: none).
	heapIndex int
	// queue is the wait queue it is in (nil: none); prev and next link it
	// there.
	queue      *waitQueue
	prev, next *request
}

func (r *request) reset(op operation) {
	*r = request{op: op, member: -1, heapIndex: -1, wait: noDeadline, timeout: noDeadline}
}

// waitQueue is a FIFO of requests, linked through them: a request that
// gives up leaves it in O(1), wherever it is.
type waitQueue struct {
	head, tail *request
	n          int
}

func (q *waitQueue) push(r *request) {
	r.queue, r.prev, r.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
	q.n++
}

func (q *waitQueue) remove(r *request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		q.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		q.tail = r.prev
	}
	r.queue, r.prev, r.next = nil, nil, nil
	q.n--
}

func (q *waitQueue) pop() *request {
	r := q.head
	if r != nil {
		q.remove(r)
	}
	return r
}

// deadlines is a binary min-heap of requests by due, each beside its
// key. Its push, remove and fix are container/heap's algorithms step for
// step, written for requests so that comparisons and swaps are direct
// calls: requests due at the same instant give up in the order
// container/heap leaves them, which the pinned trials record.
type deadlines []deadline

type deadline struct {
	due time.Duration
	r   *request
}

func (h deadlines) less(i, j int) bool { return h[i].due < h[j].due }

func (h deadlines) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].r.heapIndex, h[j].r.heapIndex = i, j
}

func (h deadlines) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h deadlines) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2 // right child
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// push is heap.Push of r under due.
func (h *deadlines) push(r *request, due time.Duration) {
	r.heapIndex = len(*h)
	*h = append(*h, deadline{due, r})
	h.up(len(*h) - 1)
}

// remove is heap.Remove of the request at i.
func (h *deadlines) remove(i int) {
	n := len(*h) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	old := *h
	old[n].r.heapIndex = -1
	old[n] = deadline{}
	*h = old[:n]
}

// fix is heap.Fix of the request at i, now due at due.
func (h deadlines) fix(i int, due time.Duration) {
	h[i].due = due
	if !h.down(i, len(h)) {
		h.up(i)
	}
}

// connPool is a client's connections to one member.
type connPool struct {
	open, idle int             // connections made (idle or in use); idle ones
	connecting []time.Duration // when each connection being made is ready, earliest first
	waiting    waitQueue       // requests waiting for a connection
	generation uint64          // how many times it was cleared
	paused     bool            // cleared, its member down
}

// clientSettings are a client's driver options.
type clientSettings struct {
	maxPoolSize, maxConnecting int
	serverSelection            time.Duration
	timeout                    time.Duration // 0: none
}

func stormClient(w workload.SpillToDisk) clientSettings {
	return clientSettings{w.MaxPoolSize, w.MaxConnecting, w.ServerSelectionTimeout, w.Timeout}
}

// canaryClient is the canaries' client: the same driver options, and the
// canary's deadline for its timeout.
func canaryClient(w workload.SpillToDisk) clientSettings {
	return clientSettings{w.MaxPoolSize, w.MaxConnecting, w.ServerSelectionTimeout, w.CanaryTimeout()}
}

// client is one driver client of the replica set.
type client struct {
	s         *sim
	set       clientSettings
	pools     [3]connPool
	selecting waitQueue // requests waiting for a primary
	due       deadlines // waiting requests, and those in flight under a timeout
	nextConn  time.Duration
	// sent, when set, hears of every request sent (a test's probe).
	sent func(member int)
}

func newClient(s *sim, set clientSettings) *client {
	return &client{s: s, set: set, nextConn: noDeadline}
}

// start begins a request at instant at (≤ now): an aggregate or a canary
// selects the primary (selects), a getMore goes to member.
func (c *client) start(r *request, at time.Duration, selects bool, member int) {
	if c.set.timeout > 0 {
		r.timeout = at + c.set.timeout
	}
	r.wait = r.timeout
	if selects {
		r.wait = min(r.wait, at+c.set.serverSelection)
		if member = c.s.primary; member < 0 {
			c.selecting.push(r)
			c.setDue(r, r.wait)
			return
		}
	}
	c.checkOut(r, member)
}

// checkOut gives r a connection to member, or queues it for one.
func (c *client) checkOut(r *request, member int) {
	p := &c.pools[member]
	if p.paused {
		c.drop(r)
		r.op.gaveUp(workload.PoolCleared)
		return
	}
	if p.idle > 0 {
		p.idle--
		c.send(r, member)
		return
	}
	p.waiting.push(r)
	c.setDue(r, r.wait)
	c.connectMore(p)
}

// send hands r a connection to member and sends it.
func (c *client) send(r *request, member int) {
	r.member, r.generation, r.inFlight = member, c.pools[member].generation, true
	c.setDue(r, r.timeout)
	if c.sent != nil {
		c.sent(member)
	}
	r.op.send(member)
}

// checkIn ends r's request when its reply arrives: its connection goes to
// the longest-waiting request, or is idle. A connection of a pool cleared
// since it was checked out is gone.
func (c *client) checkIn(r *request) {
	m := r.member
	c.drop(r)
	r.member, r.inFlight = -1, false
	if m < 0 {
		return
	}
	if p := &c.pools[m]; r.generation == p.generation && !p.paused {
		c.handOver(m)
	}
}

// handOver gives a free connection of member's pool to its longest-waiting
// request, or keeps it idle.
func (c *client) handOver(member int) {
	p := &c.pools[member]
	if w := p.waiting.pop(); w != nil {
		c.send(w, member)
		return
	}
	p.idle++
}

// connectMore starts making connections for the waiting requests that no
// connection being made will serve, as the pool's limits allow.
func (c *client) connectMore(p *connPool) {
	for len(p.connecting) < c.set.maxConnecting && p.waiting.n > len(p.connecting) &&
		(c.set.maxPoolSize == 0 || p.open+len(p.connecting) < c.set.maxPoolSize) {
		at := c.s.now + connectTime
		p.connecting = append(p.connecting, at)
		c.nextConn = min(c.nextConn, at)
	}
}

// setDue puts r in the deadline heap under due, or takes it out for none.
func (c *client) setDue(r *request, due time.Duration) {
	switch {
	case due == noDeadline && r.heapIndex >= 0:
		c.due.remove(r.heapIndex)
	case due == noDeadline:
	case r.heapIndex >= 0:
		c.due.fix(r.heapIndex, due)
	default:
		c.due.push(r, due)
	}
}

// drop takes r out of every queue and the deadline heap.
func (c *client) drop(r *request) {
	if r.queue != nil {
		r.queue.remove(r)
	}
	c.setDue(r, noDeadline)
}

// tick runs the client's events due by now: connections made, and
// requests whose deadline passed.
func (c *client) tick() {
	now := c.s.now
	if now >= c.nextConn {
		c.nextConn = noDeadline
		for m := range c.pools {
			p := &c.pools[m]
			for len(p.connecting) > 0 && p.connecting[0] <= now {
				p.connecting = p.connecting[1:]
				p.open++
				c.handOver(m)
			}
			c.connectMore(p)
			if len(p.connecting) > 0 {
				c.nextConn = min(c.nextConn, p.connecting[0])
			}
		}
	}
	for len(c.due) > 0 && c.due[0].due <= now {
		r := c.due[0].r
		c.drop(r)
		if r.inFlight {
			r.abandoned = true
		}
		r.op.gaveUp(workload.Timeout)
	}
}

// next is when the client's tick next has something to do: a connection
// ready or a deadline (noDeadline: none).
func (c *client) next() time.Duration {
	next := c.nextConn
	if len(c.due) > 0 {
		next = min(next, c.due[0].due)
	}
	return next
}

// primaryElected sends the requests waiting for a primary to its pool, in
// the order they began to wait.
func (c *client) primaryElected(member int) {
	for r := c.selecting.pop(); r != nil; r = c.selecting.pop() {
		c.checkOut(r, member)
	}
}

// memberDied clears member's pool: its connections are gone and every
// request waiting for one fails. Called again for the same death (by each
// operation it failed in flight, then by the engine) it finds nothing to
// do.
func (c *client) memberDied(member int) {
	p := &c.pools[member]
	if p.paused {
		return
	}
	p.generation++
	p.open, p.idle, p.connecting, p.paused = 0, 0, p.connecting[:0], true
	for r := p.waiting.pop(); r != nil; r = p.waiting.pop() {
		c.setDue(r, noDeadline)
		r.op.gaveUp(workload.PoolCleared)
	}
}

// memberUp makes a restarted member's (empty) pool usable again.
func (c *client) memberUp(member int) { c.pools[member].paused = false }

// inUse is how many of member's connections are checked out.
func (c *client) inUse(member int) int {
	p := &c.pools[member]
	return p.open - p.idle
}
