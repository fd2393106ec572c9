package mongosim

import (
	"context"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// remoteCursor is a shard's cursor behind a router cursor, pinned to the
// member that opened it.
type remoteCursor struct {
	shard string
	conn  *wire.Client // nil for a buffer the router computed itself
	id    int64
	coll  string
	db    string
	buf   []bson.Raw
	// batch is the batch size of the getMores sent to the shard (0: the
	// shard's default, the rest of its results).
	batch int64
}

// fill fetches the next batch when the buffer is empty.
func (rc *remoteCursor) fill(ctx context.Context) error {
	for len(rc.buf) == 0 && rc.id != 0 {
		cmd := bson.D{{Key: "getMore", Value: rc.id}, {Key: "collection", Value: rc.coll}}
		if rc.batch > 0 {
			cmd = append(cmd, bson.E{Key: "batchSize", Value: rc.batch})
		}
		reply, err := rc.conn.Call(ctx, withClientMetadata(ctx, append(cmd, bson.E{Key: "$db", Value: rc.db})))
		if err != nil {
			// A shard's error (a shed, a kill) is the router's, code and
			// labels kept.
			rc.id = 0
			return shardError(reply, err)
		}
		docs, id, err := cursorBatch(reply)
		if err != nil {
			return err
		}
		rc.buf, rc.id = docs, id
	}
	if rc.id == 0 && rc.conn != nil && len(rc.buf) == 0 {
		rc.conn.Close()
		rc.conn = nil
	}
	return nil
}

// routerCursor merges the shards' cursors: in turn, or by sort order.
type routerCursor struct {
	mu      sync.Mutex
	id      int64
	ns      string
	remotes []*remoteCursor
	sort    []query.SortKey // nil: no order to keep
	skip    int64
	limit   int64 // 0: none
	sent    int64
}

func (c *routerCursor) exhausted() bool {
	if c.limit > 0 && c.sent >= c.limit {
		return true
	}
	for _, r := range c.remotes {
		if len(r.buf) > 0 || r.id != 0 {
			return false
		}
	}
	return true
}

// next returns up to n documents.
func (c *routerCursor) next(ctx context.Context, n int) ([]bson.Raw, error) {
	var out []bson.Raw
	for len(out) < n && !(c.limit > 0 && c.sent >= c.limit) {
		var pick *remoteCursor
		for _, r := range c.remotes {
			if err := r.fill(ctx); err != nil {
				return nil, err
			}
			if len(r.buf) == 0 {
				continue
			}
			if c.sort == nil {
				pick = r
				break
			}
			if pick == nil || query.CompareBy(r.buf[0], pick.buf[0], c.sort) < 0 {
				pick = r
			}
		}
		if pick == nil {
			break
		}
		d := pick.buf[0]
		pick.buf = pick.buf[1:]
		if c.skip > 0 {
			c.skip--
			continue
		}
		out = append(out, d)
		c.sent++
	}
	return out, nil
}

// close kills the shards' cursors that are still open.
func (c *routerCursor) close(ctx context.Context) {
	for _, r := range c.remotes {
		if r.conn == nil {
			continue
		}
		if r.id != 0 {
			_, _ = r.conn.Call(ctx, bson.D{{Key: "killCursors", Value: r.coll}, {Key: "cursors", Value: bson.A{r.id}}, {Key: "$db", Value: r.db}})
		}
		r.conn.Close()
		r.conn, r.id, r.buf = nil, 0, nil
	}
}

// openRemote sends a cursor-opening command to a shard's primary on a
// connection of its own, which the cursor keeps for its getMores.
func (rt *Router) openRemote(ctx context.Context, cat *shardCatalog, shard string, cmd bson.D) (*remoteCursor, error) {
	var set string
	var hosts []string
	if shard == "config" {
		set, hosts = rt.cc.configName, rt.cc.configHosts
	} else {
		sh := cat.shard(shard)
		if sh == nil {
			return nil, mongoerr.New(codeShardNotFound, "Shard %s not found", shard)
		}
		set, hosts = sh.ID, sh.hosts
	}
	for attempt := 0; ; attempt++ {
		host, err := rt.cc.primaryOf(ctx, set, hosts)
		if err != nil {
			return nil, err
		}
		conn := &wire.Client{Addr: host}
		reply, err := conn.Call(ctx, withClientMetadata(ctx, cmd))
		rt.cc.noteClusterTime(reply)
		if err != nil {
			conn.Close()
			if (wire.IsCommandError(err, codeNotWritablePrimary) || wire.IsCommandError(err, codeNotPrimaryNoSecOk)) && attempt < 3 {
				rt.cc.mu.Lock()
				delete(rt.cc.primary, set)
				rt.cc.mu.Unlock()
				continue
			}
			return nil, shardError(reply, err)
		}
		docs, id, err := cursorBatch(reply)
		if err != nil {
			conn.Close()
			return nil, err
		}
		cur, _ := reply.Lookup("cursor", "ns").StringValueOK()
		db, coll, _ := strings.Cut(cur, ".")
		rc := &remoteCursor{shard: shard, conn: conn, id: id, db: db, coll: coll, buf: docs}
		if id == 0 {
			conn.Close()
			rc.conn = nil
		}
		return rc, nil
	}
}

// openRemotes sends cmd to every target shard at once, as mongos
// establishes its cursors, and returns their cursors in the targets'
// order. When any shard fails, the cursors the others opened are killed
// and the first failure (in the targets' order) is the router's error.
func (rt *Router) openRemotes(ctx context.Context, cat *shardCatalog, targets []string, cmd bson.D) ([]*remoteCursor, error) {
	remotes := make([]*remoteCursor, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { remotes[i], errs[i] = rt.openRemote(ctx, cat, t, cmd) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			opened := &routerCursor{}
			for _, rc := range remotes {
				if rc != nil {
					opened.remotes = append(opened.remotes, rc)
				}
			}
			opened.close(context.Background())
			return nil, err
		}
	}
	return remotes, nil
}

// cursorFirstBatch reads c's first batch of at most n documents and
// replies with it, registering c under a new cursor id when it has more
// (closing it when it has not).
func (rt *Router) cursorFirstBatch(ctx context.Context, c *routerCursor, n int) (bson.D, error) {
	docs, err := c.next(ctx, n)
	if err != nil {
		c.close(context.Background())
		return nil, err
	}
	id := int64(0)
	if !c.exhausted() {
		c.id = newRouterCursorID()
		rt.curMu.Lock()
		rt.cursors[c.id] = c
		rt.curMu.Unlock()
		id = c.id
	} else {
		c.close(context.Background())
	}
	return cursorReply(c.ns, id, docs, "firstBatch"), nil
}

var routerCursorIDs = struct {
	sync.Mutex
	next int64
}{next: 7 << 40}

func newRouterCursorID() int64 {
	routerCursorIDs.Lock()
	defer routerCursorIDs.Unlock()
	routerCursorIDs.next += 7919
	return routerCursorIDs.next
}

func (rt *Router) cmdGetMore(ctx context.Context, body bson.Raw) (bson.D, error) {
	id, ok := body.Lookup("getMore").AsInt64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "getMore needs a cursor id")
	}
	rt.curMu.Lock()
	c := rt.cursors[id]
	rt.curMu.Unlock()
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int64(101)
	if b, ok := body.Lookup("batchSize").AsInt64OK(); ok && b > 0 {
		n = b
	}
	docs, err := c.next(ctx, int(n))
	if err != nil {
		rt.dropCursor(c)
		return nil, err
	}
	out := id
	if c.exhausted() {
		rt.dropCursor(c)
		out = 0
	}
	return cursorReply(c.ns, out, docs, "nextBatch"), nil
}

func (rt *Router) dropCursor(c *routerCursor) {
	rt.curMu.Lock()
	delete(rt.cursors, c.id)
	rt.curMu.Unlock()
	c.close(context.Background())
}

func (rt *Router) cmdKillCursors(ctx context.Context, body bson.Raw) (bson.D, error) {
	arr, _ := body.Lookup("cursors").ArrayOK()
	vals, _ := arr.Values()
	killed, notFound := bson.A{}, bson.A{}
	for _, v := range vals {
		id, _ := v.AsInt64OK()
		rt.curMu.Lock()
		c := rt.cursors[id]
		delete(rt.cursors, id)
		rt.curMu.Unlock()
		if c == nil {
			notFound = append(notFound, id)
			continue
		}
		c.mu.Lock()
		c.close(ctx)
		c.mu.Unlock()
		killed = append(killed, id)
	}
	return bson.D{{Key: "cursorsKilled", Value: killed}, {Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}}, {Key: "cursorsUnknown", Value: bson.A{}}}, nil
}
