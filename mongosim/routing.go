package mongosim

// The routing side of a sharded mongosim, shared by the router (router.go)
// and by a shard member's own write path (shard.go): the sharding catalog
// read from the config server's config.* collections, chunk targeting by
// shard key, and the write path that sends insert/update commands to the
// owning shards' primaries over the wire, as mongos's cluster write does.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// Error codes of the sharding commands (mongod's error_codes.yml).
const (
	codeShardNotFound       = 70
	codeInvalidOptions      = 72
	codeNamespaceNotSharded = 118
	codeShardKeyNotFound    = 61
	codeAlreadyInitialized  = 23
	codeIllegalOperation    = 20
	codeNotWritablePrimary  = 10107
	codeNotPrimaryNoSecOk   = 13435
	codeHostUnreachable     = 6
)

// catalogRefresh is how long a cached sharding catalog is trusted before it
// is read again from the config server (a real router versions its cache
// and refreshes on StaleConfig; mongosim's routing table only changes by
// the DDL commands of a router, so a short age bound stands in for that).
const catalogRefresh = 500 * time.Millisecond

// shardInfo is a config.shards document.
type shardInfo struct {
	ID    string
	Host  string // "<setName>/h1,h2"
	hosts []string
}

// collInfo is a config.collections document and its chunks.
type collInfo struct {
	NS     string
	UUID   bson.Binary
	Key    bson.D // shard key pattern, e.g. {_id: "hashed"}
	fields []string
	hashed bool
	chunks []chunkInfo // sorted by min
}

// chunkInfo is one config.chunks range [min, max) of a collection.
type chunkInfo struct {
	min, max []bson.RawValue
	shard    string
}

// shardCatalog is the routing table as one read of config.* gives it.
type shardCatalog struct {
	shards    []shardInfo
	databases map[string]string // db -> primary shard
	colls     map[string]*collInfo
	read      time.Time
}

func (c *shardCatalog) shard(id string) *shardInfo {
	for i := range c.shards {
		if c.shards[i].ID == id {
			return &c.shards[i]
		}
	}
	return nil
}

// clusterClient is a routing endpoint: it reads the catalog from the config
// server and talks to shard primaries. Router and shard members each own one.
type clusterClient struct {
	configName  string
	configHosts []string

	mu       sync.Mutex
	cat      *shardCatalog
	primary  map[string]string // set name -> primary host as last seen
	idle     map[string][]*wire.Client
	clusterT bson.Timestamp
}

func newClusterClient(configDB string) (*clusterClient, error) {
	name, hosts, err := parseSetHosts(configDB)
	if err != nil {
		return nil, fmt.Errorf("config server connection string %q: %w", configDB, err)
	}
	return &clusterClient{configName: name, configHosts: hosts, primary: map[string]string{}, idle: map[string][]*wire.Client{}}, nil
}

// parseSetHosts splits "set/h1,h2" into the set name and hosts.
func parseSetHosts(s string) (string, []string, error) {
	name, rest, ok := strings.Cut(s, "/")
	if !ok || name == "" || rest == "" {
		return "", nil, fmt.Errorf("expected <setName>/<host:port>[,<host:port>...]")
	}
	return name, strings.Split(rest, ","), nil
}

func (cc *clusterClient) configConnString() string {
	return cc.configName + "/" + strings.Join(cc.configHosts, ",")
}

// call sends cmd to host over a pooled connection.
func (cc *clusterClient) call(ctx context.Context, host string, cmd bson.D) (bson.Raw, error) {
	cc.mu.Lock()
	var c *wire.Client
	if l := cc.idle[host]; len(l) > 0 {
		c, cc.idle[host] = l[len(l)-1], l[:len(l)-1]
	}
	cc.mu.Unlock()
	if c == nil {
		c = &wire.Client{Addr: host}
	}
	reply, err := c.Call(ctx, withClientMetadata(ctx, cmd))
	cc.noteClusterTime(reply)
	cc.mu.Lock()
	if len(cc.idle[host]) < 16 {
		cc.idle[host] = append(cc.idle[host], c)
		c = nil
	}
	cc.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return reply, err
}

func (cc *clusterClient) noteClusterTime(reply bson.Raw) {
	if reply == nil {
		return
	}
	t, i, ok := reply.Lookup("$clusterTime", "clusterTime").TimestampOK()
	if !ok {
		return
	}
	cc.mu.Lock()
	if t > cc.clusterT.T || (t == cc.clusterT.T && i > cc.clusterT.I) {
		cc.clusterT = bson.Timestamp{T: t, I: i}
	}
	cc.mu.Unlock()
}

func (cc *clusterClient) clusterTime() (bson.Timestamp, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.clusterT, cc.clusterT.T != 0
}

func (cc *clusterClient) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, l := range cc.idle {
		for _, c := range l {
			c.Close()
		}
	}
	cc.idle = map[string][]*wire.Client{}
}

// primaryOf finds the primary of the set with these hosts.
func (cc *clusterClient) primaryOf(ctx context.Context, set string, hosts []string) (string, error) {
	cc.mu.Lock()
	p := cc.primary[set]
	cc.mu.Unlock()
	if p != "" {
		return p, nil
	}
	for attempt := 0; ; attempt++ {
		for _, h := range hosts {
			reply, err := cc.call(ctx, h, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
			if err != nil {
				continue
			}
			if w, _ := reply.Lookup("isWritablePrimary").BooleanOK(); w {
				cc.mu.Lock()
				cc.primary[set] = h
				cc.mu.Unlock()
				return h, nil
			}
		}
		if attempt >= 100 || ctx.Err() != nil {
			return "", mongoerr.New(133, "could not find a primary of %s/%s", set, strings.Join(hosts, ","))
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// callPrimary sends cmd to a set's primary, rediscovering it once when the
// member it had was no longer primary.
func (cc *clusterClient) callPrimary(ctx context.Context, set string, hosts []string, cmd bson.D) (bson.Raw, error) {
	for attempt := 0; ; attempt++ {
		h, err := cc.primaryOf(ctx, set, hosts)
		if err != nil {
			return nil, err
		}
		reply, err := cc.call(ctx, h, cmd)
		retry := wire.IsCommandError(err, codeNotWritablePrimary) || wire.IsCommandError(err, codeNotPrimaryNoSecOk)
		if err != nil && !retry {
			var ce *wire.CommandError
			if !asCommandError(err, &ce) {
				retry = true // the member is unreachable
			}
		}
		if !retry || attempt >= 3 {
			return reply, shardError(reply, err)
		}
		cc.mu.Lock()
		delete(cc.primary, set)
		cc.mu.Unlock()
	}
}

// callShard sends cmd to the primary of shard id.
func (cc *clusterClient) callShard(ctx context.Context, cat *shardCatalog, id string, cmd bson.D) (bson.Raw, error) {
	sh := cat.shard(id)
	if sh == nil {
		return nil, mongoerr.New(codeShardNotFound, "Shard %s not found", id)
	}
	return cc.callPrimary(ctx, sh.ID, sh.hosts, cmd)
}

// callConfig sends cmd to the config server's primary.
func (cc *clusterClient) callConfig(ctx context.Context, cmd bson.D) (bson.Raw, error) {
	return cc.callPrimary(ctx, cc.configName, cc.configHosts, cmd)
}

// findAll reads every document of a collection from host (find, getMore).
func (cc *clusterClient) findAll(ctx context.Context, call func(bson.D) (bson.Raw, error), db, coll string, filter bson.D) ([]bson.Raw, error) {
	if filter == nil {
		filter = bson.D{}
	}
	reply, err := call(bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: int32(100000)}, {Key: "$db", Value: db}})
	if err != nil {
		return nil, err
	}
	var out []bson.Raw
	for {
		docs, id, err := cursorBatch(reply)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
		if id == 0 {
			return out, nil
		}
		reply, err = call(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "$db", Value: db}})
		if err != nil {
			return nil, err
		}
	}
}

// cursorBatch reads a cursor reply's batch and id.
func cursorBatch(reply bson.Raw) ([]bson.Raw, int64, error) {
	cur, ok := reply.Lookup("cursor").DocumentOK()
	if !ok {
		return nil, 0, fmt.Errorf("reply has no cursor: %v", reply)
	}
	arr, ok := bson.Raw(cur).Lookup("firstBatch").ArrayOK()
	if !ok {
		arr, _ = bson.Raw(cur).Lookup("nextBatch").ArrayOK()
	}
	vals, _ := arr.Values()
	docs := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			docs = append(docs, bson.Raw(d))
		}
	}
	id, _ := bson.Raw(cur).Lookup("id").AsInt64OK()
	return docs, id, nil
}

// catalog returns the routing table, read again when older than
// catalogRefresh or when force is set.
func (cc *clusterClient) catalog(ctx context.Context, force bool) (*shardCatalog, error) {
	cc.mu.Lock()
	cat := cc.cat
	cc.mu.Unlock()
	if cat != nil && !force && time.Since(cat.read) < catalogRefresh {
		return cat, nil
	}
	call := func(cmd bson.D) (bson.Raw, error) { return cc.callConfig(ctx, cmd) }
	cat = &shardCatalog{databases: map[string]string{}, colls: map[string]*collInfo{}, read: time.Now()}
	shards, err := cc.findAll(ctx, call, "config", "shards", nil)
	if err != nil {
		return nil, fmt.Errorf("reading config.shards: %w", err)
	}
	for _, d := range shards {
		id, _ := d.Lookup("_id").StringValueOK()
		host, _ := d.Lookup("host").StringValueOK()
		_, hosts, err := parseSetHosts(host)
		if err != nil {
			return nil, fmt.Errorf("config.shards %s: %w", id, err)
		}
		cat.shards = append(cat.shards, shardInfo{ID: id, Host: host, hosts: hosts})
	}
	dbs, err := cc.findAll(ctx, call, "config", "databases", nil)
	if err != nil {
		return nil, fmt.Errorf("reading config.databases: %w", err)
	}
	for _, d := range dbs {
		id, _ := d.Lookup("_id").StringValueOK()
		p, _ := d.Lookup("primary").StringValueOK()
		cat.databases[id] = p
	}
	colls, err := cc.findAll(ctx, call, "config", "collections", nil)
	if err != nil {
		return nil, fmt.Errorf("reading config.collections: %w", err)
	}
	byUUID := map[string]*collInfo{}
	for _, d := range colls {
		if dropped, _ := d.Lookup("dropped").BooleanOK(); dropped {
			continue
		}
		ci := &collInfo{}
		ci.NS, _ = d.Lookup("_id").StringValueOK()
		st, data, _ := d.Lookup("uuid").BinaryOK()
		ci.UUID = bson.Binary{Subtype: st, Data: data}
		keyDoc, _ := d.Lookup("key").DocumentOK()
		elems, _ := bson.Raw(keyDoc).Elements()
		for _, e := range elems {
			ci.Key = append(ci.Key, bson.E{Key: e.Key(), Value: e.Value()})
			ci.fields = append(ci.fields, e.Key())
			if s, ok := e.Value().StringValueOK(); ok && s == "hashed" {
				ci.hashed = true
			}
		}
		cat.colls[ci.NS] = ci
		byUUID[string(data)] = ci
	}
	chunks, err := cc.findAll(ctx, call, "config", "chunks", nil)
	if err != nil {
		return nil, fmt.Errorf("reading config.chunks: %w", err)
	}
	for _, d := range chunks {
		_, data, _ := d.Lookup("uuid").BinaryOK()
		ci := byUUID[string(data)]
		if ci == nil {
			continue
		}
		minD, _ := d.Lookup("min").DocumentOK()
		maxD, _ := d.Lookup("max").DocumentOK()
		shard, _ := d.Lookup("shard").StringValueOK()
		ci.chunks = append(ci.chunks, chunkInfo{min: keyValues(bson.Raw(minD), ci.fields), max: keyValues(bson.Raw(maxD), ci.fields), shard: shard})
	}
	for _, ci := range cat.colls {
		sort.Slice(ci.chunks, func(i, j int) bool { return compareKeys(ci.chunks[i].min, ci.chunks[j].min) < 0 })
	}
	cc.mu.Lock()
	cc.cat = cat
	cc.mu.Unlock()
	return cat, nil
}

func keyValues(d bson.Raw, fields []string) []bson.RawValue {
	out := make([]bson.RawValue, len(fields))
	for i, f := range fields {
		out[i] = d.Lookup(f)
	}
	return out
}

func compareKeys(a, b []bson.RawValue) int {
	for i := range a {
		if c := query.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// shardKeyHash is mongosim's hashed-index function: a 64-bit FNV-1a hash of
// the value, with numbers of equal value hashing alike. It spreads keys as
// mongod's does; its values are not mongod's (md5-based) ones.
func shardKeyHash(v bson.RawValue) int64 {
	h := fnv.New64a()
	if query.IsNumber(v) {
		f := query.Float(v)
		var b [9]byte
		b[0] = 1
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			binary.LittleEndian.PutUint64(b[1:], uint64(int64(f)))
		} else {
			b[0] = 2
			binary.LittleEndian.PutUint64(b[1:], math.Float64bits(f))
		}
		h.Write(b[:])
	} else {
		h.Write([]byte{byte(v.Type)})
		h.Write(v.Value)
	}
	return int64(h.Sum64())
}

// docKey is a document's shard key values (missing fields count as null;
// a hashed field is replaced by its hash).
func (ci *collInfo) docKey(doc bson.Raw) []bson.RawValue {
	out := make([]bson.RawValue, len(ci.fields))
	for i, f := range ci.fields {
		v := query.Lookup(doc, f)
		if v.Type == 0 {
			v = bson.RawValue{Type: bson.TypeNull}
		}
		if kv, ok := ci.Key[i].Value.(bson.RawValue); ok && kv.Type == bson.TypeString && kv.StringValue() == "hashed" {
			v = query.Int64(shardKeyHash(v))
		}
		out[i] = v
	}
	return out
}

// chunkFor is the shard owning key.
func (ci *collInfo) chunkFor(key []bson.RawValue) string {
	for _, c := range ci.chunks {
		if compareKeys(key, c.min) >= 0 && compareKeys(key, c.max) < 0 {
			return c.shard
		}
	}
	if n := len(ci.chunks); n > 0 {
		return ci.chunks[n-1].shard
	}
	return ""
}

// shardsOwning lists the shards that own at least one chunk, in id order.
func (ci *collInfo) shardsOwning() []string {
	var out []string
	for _, c := range ci.chunks {
		if !slices.Contains(out, c.shard) {
			out = append(out, c.shard)
		}
	}
	slices.Sort(out)
	return out
}

// filterKey extracts a shard key from a filter's equality conditions on
// every shard key field, or reports that the filter has none.
func (ci *collInfo) filterKey(filter bson.Raw) ([]bson.RawValue, bool) {
	keys, vals := []string{}, []bson.RawValue{}
	for _, f := range ci.fields {
		v := filter.Lookup(f)
		if v.Type == 0 {
			return nil, false
		}
		if d, ok := v.DocumentOK(); ok {
			eq := bson.Raw(d).Lookup("$eq")
			first, err := bson.Raw(d).IndexErr(0)
			if err != nil || !strings.HasPrefix(first.Key(), "$") {
				// An equality to a whole document.
			} else if eq.Type != 0 {
				v = eq
			} else {
				return nil, false
			}
		}
		if v.Type == bson.TypeArray || v.Type == bson.TypeRegex {
			return nil, false
		}
		keys, vals = append(keys, f), append(vals, v)
	}
	return ci.docKey(query.Build(keys, vals)), true
}

// targets lists the shards a read or multi-write with filter must reach, and
// whether it is a single-shard, targeted one.
func (cat *shardCatalog) targets(ns string, filter bson.Raw) ([]string, bool) {
	if ci := cat.colls[ns]; ci != nil {
		if key, ok := ci.filterKey(filter); ok {
			return []string{ci.chunkFor(key)}, true
		}
		return ci.shardsOwning(), false
	}
	return []string{cat.primaryShard(ns)}, true
}

// primaryShard is the database primary of ns's database (the first shard
// when the database is not in config.databases yet).
func (cat *shardCatalog) primaryShard(ns string) string {
	db, _, _ := strings.Cut(ns, ".")
	if p := cat.databases[db]; p != "" {
		return p
	}
	if len(cat.shards) > 0 {
		return cat.shards[0].ID
	}
	return ""
}

// writeResult sums the replies of one routed write command.
type writeResult struct {
	n, nModified int64
	upserted     bson.A
	writeErrors  bson.A
	wcErr        bson.RawValue
}

func (w *writeResult) add(reply bson.Raw, index []int) {
	n, _ := reply.Lookup("n").AsInt64OK()
	w.n += n
	if m, ok := reply.Lookup("nModified").AsInt64OK(); ok {
		w.nModified += m
	}
	remap := func(key string, dst *bson.A) {
		arr, ok := reply.Lookup(key).ArrayOK()
		if !ok {
			return
		}
		vals, _ := arr.Values()
		for _, v := range vals {
			d, _ := v.DocumentOK()
			i, _ := bson.Raw(d).Lookup("index").AsInt64OK()
			out := bson.D{}
			elems, _ := bson.Raw(d).Elements()
			for _, e := range elems {
				if e.Key() == "index" && int(i) < len(index) {
					out = append(out, bson.E{Key: "index", Value: int32(index[i])})
				} else {
					out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
				}
			}
			*dst = append(*dst, out)
		}
	}
	remap("upserted", &w.upserted)
	remap("writeErrors", &w.writeErrors)
	if v := reply.Lookup("writeConcernError"); v.Type != 0 {
		w.wcErr = v
	}
}

func (w *writeResult) reply(update bool) bson.D {
	d := bson.D{{Key: "n", Value: int32(w.n)}}
	if update {
		d = append(d, bson.E{Key: "nModified", Value: int32(w.nModified)})
		if len(w.upserted) > 0 {
			d = append(d, bson.E{Key: "upserted", Value: w.upserted})
		}
	}
	if len(w.writeErrors) > 0 {
		d = append(d, bson.E{Key: "writeErrors", Value: w.writeErrors})
	}
	if w.wcErr.Type != 0 {
		d = append(d, bson.E{Key: "writeConcernError", Value: w.wcErr})
	}
	return d
}

// shardWrite is one write command split across the shards: its
// statements grouped by the shard that owns them, each shard's in the
// order the statements came, the shards in the order they first came.
type shardWrite struct {
	cc      *clusterClient
	cat     *shardCatalog
	ns      string
	ci      *collInfo // nil: the collection is not sharded
	db      string
	coll    string
	verb    string // the command: insert or update
	field   string // its statements' array: documents or updates
	stmts   []bson.Raw
	extra   bson.D // the command's other fields (ordered, writeConcern)
	order   []string
	byShard map[string][]int
}

// newShardWrite starts splitting a write of stmts to db.coll by shard.
func (cc *clusterClient) newShardWrite(ctx context.Context, db, coll, verb, field string, stmts []bson.Raw, extra bson.D) (*shardWrite, error) {
	cat, err := cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	ns := db + "." + coll
	return &shardWrite{cc: cc, cat: cat, ns: ns, ci: cat.colls[ns], db: db, coll: coll, verb: verb, field: field,
		stmts: stmts, extra: extra, byShard: map[string][]int{}}, nil
}

// assign gives statement i to shard sh.
func (w *shardWrite) assign(sh string, i int) {
	if _, ok := w.byShard[sh]; !ok {
		w.order = append(w.order, sh)
	}
	w.byShard[sh] = append(w.byShard[sh], i)
}

// send runs the statements idx as one command on shard sh.
func (w *shardWrite) send(ctx context.Context, sh string, idx []int) (bson.Raw, error) {
	arr := bson.A{}
	for _, i := range idx {
		arr = append(arr, w.stmts[i])
	}
	cmd := append(bson.D{{Key: w.verb, Value: w.coll}, {Key: w.field, Value: arr}}, w.extra...)
	cmd = append(cmd, bson.E{Key: "$db", Value: w.db})
	return w.cc.callShard(ctx, w.cat, sh, cmd)
}

// sendAssigned sends each shard its assigned statements, one command a
// shard, and adds the replies to res.
func (w *shardWrite) sendAssigned(ctx context.Context, res *writeResult) error {
	for _, sh := range w.order {
		reply, err := w.send(ctx, sh, w.byShard[sh])
		if err != nil {
			return err
		}
		res.add(reply, w.byShard[sh])
	}
	return nil
}

// routeInsert sends docs to their owning shards, one insert per shard.
func (cc *clusterClient) routeInsert(ctx context.Context, db, coll string, docs []bson.Raw, extra bson.D) (*writeResult, error) {
	w, err := cc.newShardWrite(ctx, db, coll, "insert", "documents", docs, extra)
	if err != nil {
		return nil, err
	}
	for i, d := range docs {
		if d.Lookup("_id").Type == 0 {
			docs[i] = prependID(d, bson.NewObjectID())
			d = docs[i]
		}
		sh := w.cat.primaryShard(w.ns)
		if w.ci != nil {
			sh = w.ci.chunkFor(w.ci.docKey(d))
		}
		w.assign(sh, i)
	}
	res := &writeResult{}
	if err := w.sendAssigned(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// routeUpdate sends each update statement to the shards it targets: the one
// owning its filter's shard key, else (multi, or a single update without
// the key) every shard owning chunks, in turn until one matched.
func (cc *clusterClient) routeUpdate(ctx context.Context, db, coll string, updates []bson.Raw, extra bson.D) (*writeResult, error) {
	w, err := cc.newShardWrite(ctx, db, coll, "update", "updates", updates, extra)
	if err != nil {
		return nil, err
	}
	var broadcast []int
	for i, u := range updates {
		q, _ := u.Lookup("q").DocumentOK()
		sh := w.cat.primaryShard(w.ns)
		if w.ci != nil {
			key, ok := w.ci.filterKey(bson.Raw(q))
			if !ok {
				if up, _ := u.Lookup("upsert").BooleanOK(); up {
					return nil, mongoerr.New(codeShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
				}
				broadcast = append(broadcast, i)
				continue
			}
			sh = w.ci.chunkFor(key)
		}
		w.assign(sh, i)
	}
	res := &writeResult{}
	if err := w.sendAssigned(ctx, res); err != nil {
		return nil, err
	}
	for _, i := range broadcast {
		multi, _ := updates[i].Lookup("multi").BooleanOK()
		for _, sh := range w.ci.shardsOwning() {
			reply, err := w.send(ctx, sh, []int{i})
			if err != nil {
				return nil, err
			}
			res.add(reply, []int{i})
			if n, _ := reply.Lookup("n").AsInt64OK(); n > 0 && !multi {
				break
			}
		}
	}
	return res, nil
}

// shardError turns a shard's {ok:0} reply into the error the router
// returns, keeping its code, codeName and errorLabels.
func shardError(reply bson.Raw, err error) error {
	var ce *wire.CommandError
	if err == nil || !asCommandError(err, &ce) || reply == nil {
		return err
	}
	me := mongoerr.New(ce.Code, "%s", ce.Message)
	if arr, ok := reply.Lookup("errorLabels").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if l, ok := v.StringValueOK(); ok {
				me.Labels = append(me.Labels, l)
			}
		}
	}
	return me
}

func asCommandError(err error, ce **wire.CommandError) bool {
	for e := err; e != nil; {
		if c, ok := e.(*wire.CommandError); ok {
			*ce = c
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}
