package mongosim

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// forwardedArgs are the generic fields a router passes on to the shards.
var forwardedArgs = map[string]bool{"writeConcern": true, "ordered": true, "maxTimeMS": true, "readConcern": true,
	"comment": true, "bypassDocumentValidation": true, "let": true, "hint": true}

// passOn copies body without its first field, $db and the session fields.
func passOn(body bson.Raw, drop ...string) bson.D {
	var out bson.D
	elems, _ := body.Elements()
	for i, e := range elems {
		k := e.Key()
		if i == 0 || slices.Contains(drop, k) || (genericArguments[k] && !forwardedArgs[k]) {
			continue
		}
		out = append(out, bson.E{Key: k, Value: e.Value()})
	}
	return out
}

func withDB(cmd bson.D, db string) bson.D { return append(cmd, bson.E{Key: "$db", Value: db}) }

// dispatch runs one router command.
func (rt *Router) dispatch(c *routerConn, name string, body bson.Raw, seqs map[string][]bson.Raw) (bson.D, error) {
	db, _ := body.Lookup("$db").StringValueOK()
	if db == "" {
		return nil, mongoerr.New(40571, "OP_MSG requests require a $db argument")
	}
	rt.counters.command.Add(1)
	ctx, cancel := context.WithCancel(withClientApp(rt.ctx, c.appName))
	defer cancel()
	if ms, ok := body.Lookup("maxTimeMS").AsInt64OK(); ok && ms > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	ns := db
	if coll, ok := body.Lookup(name).StringValueOK(); ok {
		ns = db + "." + coll
	}
	eligible := name == "find" || name == "getMore"
	if name == "aggregate" {
		eligible = !pipelineHasWriteStage(body)
	}
	op := rt.register(c, name, ns, body, eligible, cancel)
	defer rt.unregister(op)
	switch name {
	case "ping", "endSessions":
		return bson.D{}, nil
	case "buildInfo", "buildinfo":
		return (&Server{}).buildInfo(), nil
	case "isdbgrid":
		host, _ := os.Hostname()
		return bson.D{{Key: "isdbgrid", Value: int32(1)}, {Key: "hostname", Value: host}}, nil
	case "serverStatus":
		return rt.serverStatus(), nil
	case "getCmdLineOpts":
		return bson.D{{Key: "argv", Value: bson.A{"mongos"}}, {Key: "parsed", Value: bson.D{
			{Key: "net", Value: bson.D{{Key: "bindIp", Value: rt.opts.BindIP}}},
			{Key: "sharding", Value: bson.D{{Key: "configDB", Value: rt.opts.ConfigDB}}}}}}, nil
	case "replSetGetStatus":
		return nil, mongoerr.New(76, "replSetGetStatus is not supported through mongos")
	case "listShards":
		return rt.cmdListShards(ctx)
	case "addShard":
		return rt.cmdAddShard(ctx, body)
	case "enableSharding", "enablesharding":
		dbName, _ := body.Lookup(name).StringValueOK()
		pref, _ := body.Lookup("primaryShard").StringValueOK()
		_, err := rt.ensureDatabase(ctx, dbName, pref)
		return bson.D{}, err
	case "shardCollection", "shardcollection":
		return rt.cmdShardCollection(ctx, body)
	case "balancerStatus":
		return bson.D{{Key: "mode", Value: "off"}, {Key: "inBalancerRound", Value: false}, {Key: "numBalancerRounds", Value: int64(0)}}, nil
	case "balancerStart", "balancerStop":
		return nil, mongoerr.New(codeIllegalOperation, "mongosim's router has no balancer (chunks never move)")
	case "flushRouterConfig":
		if _, err := rt.cc.catalog(ctx, true); err != nil {
			return nil, err
		}
		return bson.D{{Key: "flushed", Value: true}}, nil
	case "getShardVersion":
		s, _ := body.Lookup(name).StringValueOK()
		cat, err := rt.cc.catalog(ctx, true)
		if err != nil {
			return nil, err
		}
		ci := cat.colls[s]
		if ci == nil {
			return nil, mongoerr.New(codeNamespaceNotSharded, "Collection %s is not sharded.", s)
		}
		return bson.D{{Key: "version", Value: bson.Timestamp{T: 1, I: uint32(len(ci.chunks))}}}, nil
	case "insert":
		return rt.cmdInsert(ctx, db, body, seqs)
	case "update":
		return rt.cmdUpdate(ctx, db, body, seqs)
	case "find":
		return rt.cmdFind(ctx, db, body)
	case "count":
		return rt.cmdCount(ctx, db, body)
	case "aggregate":
		return rt.cmdAggregate(ctx, db, body)
	case "getMore":
		return rt.cmdGetMore(ctx, body)
	case "killCursors":
		return rt.cmdKillCursors(ctx, body)
	case "currentOp":
		return rt.cmdCurrentOp(ctx, body)
	case "killOp":
		return rt.cmdKillOp(ctx, body)
	case "listDatabases":
		return rt.cmdListDatabases(ctx)
	case "listCollections":
		return rt.cmdListCollections(ctx, db)
	case "drop":
		return rt.cmdDrop(ctx, db, body)
	}
	rt.log.Info("command not simulated by the router", "name", name, "db", db)
	return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", name)
}

func pipelineHasWriteStage(body bson.Raw) bool {
	arr, _ := body.Lookup("pipeline").ArrayOK()
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return false
	}
	d, _ := vals[len(vals)-1].DocumentOK()
	first, err := bson.Raw(d).IndexErr(0)
	return err == nil && (first.Key() == "$merge" || first.Key() == "$out")
}

func (rt *Router) serverStatus() bson.D {
	current := rt.conns.current()
	host, _ := os.Hostname()
	up := time.Since(rt.started)
	c := &rt.counters
	return bson.D{
		{Key: "host", Value: host}, {Key: "version", Value: Version}, {Key: "process", Value: "mongos"},
		{Key: "pid", Value: int64(os.Getpid())}, {Key: "uptime", Value: up.Seconds()}, {Key: "uptimeMillis", Value: int64(up / time.Millisecond)},
		{Key: "localTime", Value: time.Now()},
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(current)}, {Key: "available", Value: int32(rt.limits.MaxIncomingConnections - current)},
			{Key: "totalCreated", Value: rt.conns.totalCreated()}, {Key: "rejected", Value: rt.conns.totalRejected()}}},
		{Key: "opcounters", Value: bson.D{{Key: "insert", Value: c.insert.Load()}, {Key: "query", Value: c.query.Load()},
			{Key: "update", Value: c.update.Load()}, {Key: "delete", Value: c.delete.Load()}, {Key: "getmore", Value: c.getmore.Load()},
			{Key: "command", Value: c.command.Load()}}},
		{Key: "sharding", Value: bson.D{{Key: "configsvrConnectionString", Value: rt.cc.configConnString()}}},
		{Key: "mongosim", Value: append(simulatedSection(), bson.E{Key: "router", Value: true},
			bson.E{Key: "note2", Value: "the router has no memory model: it sheds nothing and reports no queryMemory section"})},
	}
}

func (rt *Router) cmdListShards(ctx context.Context) (bson.D, error) {
	call := func(cmd bson.D) (bson.Raw, error) { return rt.cc.callConfig(ctx, cmd) }
	docs, err := rt.cc.findAll(ctx, call, "config", "shards", nil)
	if err != nil {
		return nil, err
	}
	arr := bson.A{}
	for _, d := range docs {
		arr = append(arr, d)
	}
	return bson.D{{Key: "shards", Value: arr}}, nil
}

// clusterID reads config.version, creating it on first use.
func (rt *Router) clusterID(ctx context.Context) (bson.ObjectID, error) {
	call := func(cmd bson.D) (bson.Raw, error) { return rt.cc.callConfig(ctx, cmd) }
	for range 2 {
		docs, err := rt.cc.findAll(ctx, call, "config", "version", nil)
		if err != nil {
			return bson.ObjectID{}, err
		}
		if len(docs) > 0 {
			id, _ := docs[0].Lookup("clusterId").ObjectIDOK()
			return id, nil
		}
		_, err = rt.cc.callConfig(ctx, withDB(bson.D{{Key: "insert", Value: "version"},
			{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: int32(1)}, {Key: "clusterId", Value: bson.NewObjectID()}}}}}, "config"))
		if err != nil {
			return bson.ObjectID{}, err
		}
	}
	return bson.ObjectID{}, errors.New("config.version could not be created")
}

// cmdAddShard registers a shard replica set: the set must be --shardsvr;
// its primary records its identity (_addShard) and config.shards lists it.
func (rt *Router) cmdAddShard(ctx context.Context, body bson.Raw) (bson.D, error) {
	rt.ddlMu.Lock()
	defer rt.ddlMu.Unlock()
	conn, _ := body.Lookup("addShard").StringValueOK()
	if body.Lookup("maxSize").Type != 0 {
		return nil, mongoerr.New(codeInvalidOptions, "maxSize is no longer supported")
	}
	set, hosts, err := parseSetHosts(conn)
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "addShard %q: %v (mongosim adds replica-set shards only)", conn, err)
	}
	name, _ := body.Lookup("name").StringValueOK()
	if name == "" {
		name = set
	}
	primary, err := rt.cc.primaryOf(ctx, set, hosts)
	if err != nil {
		return nil, mongoerr.New(codeInvalidOptions, "couldn't connect to new shard %s: %v", conn, err)
	}
	opts, err := rt.cc.call(ctx, primary, withDB(bson.D{{Key: "getCmdLineOpts", Value: 1}}, "admin"))
	if err != nil {
		return nil, err
	}
	if role, _ := opts.Lookup("parsed", "sharding", "clusterRole").StringValueOK(); role != RoleShardServer {
		return nil, mongoerr.New(codeInvalidOptions, "Cannot add %s as a shard since it was not started with --shardsvr.", conn)
	}
	cid, err := rt.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := rt.cc.callPrimary(ctx, set, hosts, withDB(bson.D{{Key: "_addShard", Value: 1}, {Key: "shardIdentity", Value: bson.D{
		{Key: "shardName", Value: name}, {Key: "clusterId", Value: cid}, {Key: "configsvrConnectionString", Value: rt.cc.configConnString()}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}, "admin")); err != nil {
		return nil, err
	}
	doc := bson.D{{Key: "_id", Value: name}, {Key: "host", Value: conn}, {Key: "state", Value: int32(1)},
		{Key: "topologyTime", Value: bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}}}
	if err := rt.upsertConfig(ctx, "shards", name, doc); err != nil {
		return nil, err
	}
	if _, err := rt.cc.catalog(ctx, true); err != nil {
		return nil, err
	}
	return bson.D{{Key: "shardAdded", Value: name}}, nil
}

func (rt *Router) upsertConfig(ctx context.Context, coll string, id any, doc bson.D) error {
	_, err := rt.cc.callConfig(ctx, withDB(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: doc}, {Key: "upsert", Value: true}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}, "config"))
	return err
}

// ensureDatabase returns db's primary shard, recording one in
// config.databases when the database is new: the requested shard, else the
// shard that is primary for the fewest databases.
func (rt *Router) ensureDatabase(ctx context.Context, db, preferred string) (string, error) {
	if db == "" || db == "admin" || db == "config" || db == "local" {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "database %q cannot be sharded", db)
	}
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return "", err
	}
	if p := cat.databases[db]; p != "" {
		return p, nil
	}
	rt.ddlMu.Lock()
	defer rt.ddlMu.Unlock()
	if cat, err = rt.cc.catalog(ctx, true); err != nil {
		return "", err
	}
	if p := cat.databases[db]; p != "" {
		return p, nil
	}
	if len(cat.shards) == 0 {
		return "", mongoerr.New(codeShardNotFound, "no shards found; add one with addShard")
	}
	primary := preferred
	if primary != "" && cat.shard(primary) == nil {
		return "", mongoerr.New(codeShardNotFound, "Shard %s not found", primary)
	}
	if primary == "" {
		count := map[string]int{}
		for _, p := range cat.databases {
			count[p]++
		}
		primary = cat.shards[0].ID
		for _, s := range cat.shards {
			if count[s.ID] < count[primary] {
				primary = s.ID
			}
		}
	}
	doc := bson.D{{Key: "_id", Value: db}, {Key: "primary", Value: primary}, {Key: "version", Value: bson.D{
		{Key: "uuid", Value: newUUID()}, {Key: "timestamp", Value: bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}}, {Key: "lastMod", Value: int32(1)}}}}
	if err := rt.upsertConfig(ctx, "databases", db, doc); err != nil {
		return "", err
	}
	if _, err := rt.cc.catalog(ctx, true); err != nil {
		return "", err
	}
	return primary, nil
}

func newUUID() bson.Binary {
	id := bson.NewObjectID()
	b := make([]byte, 16)
	copy(b, id[:])
	t := time.Now().UnixNano()
	for i := 12; i < 16; i++ {
		b[i] = byte(t >> (8 * (i - 12)))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return bson.Binary{Subtype: 4, Data: b}
}

// cmdShardCollection records the collection and its chunks. A hashed key
// on an empty collection gets numInitialChunks (default 2 per shard) chunks
// spread over the shards round-robin; a range key, or any key of a
// collection that already has documents, gets a single chunk on the primary
// shard, as mongod starts (mongosim has no balancer to move it later).
func (rt *Router) cmdShardCollection(ctx context.Context, body bson.Raw) (bson.D, error) {
	ns, _ := body.Lookup("shardCollection").StringValueOK()
	if ns == "" {
		ns, _ = body.Lookup("shardcollection").StringValueOK()
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || coll == "" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace %q", ns)
	}
	keyDoc, ok := body.Lookup("key").DocumentOK()
	if !ok || len(bson.Raw(keyDoc)) <= 5 {
		return nil, mongoerr.New(mongoerr.BadValue, "shardCollection needs a key")
	}
	primary, err := rt.ensureDatabase(ctx, db, "")
	if err != nil {
		return nil, err
	}
	rt.ddlMu.Lock()
	defer rt.ddlMu.Unlock()
	cat, err := rt.cc.catalog(ctx, true)
	if err != nil {
		return nil, err
	}
	if ci := cat.colls[ns]; ci != nil {
		want, _ := bson.Marshal(ci.Key)
		if !slices.Equal(want, []byte(keyDoc)) {
			return nil, mongoerr.New(codeAlreadyInitialized, "sharding already enabled for collection %s with a different key", ns)
		}
		return bson.D{{Key: "collectionsharded", Value: ns}}, nil
	}
	var fields []string
	hashed := false
	elems, _ := bson.Raw(keyDoc).Elements()
	for _, e := range elems {
		fields = append(fields, e.Key())
		if s, ok := e.Value().StringValueOK(); ok {
			if s != "hashed" {
				return nil, mongoerr.New(mongoerr.BadValue, "unsupported shard key pattern %v", bson.Raw(keyDoc))
			}
			hashed = true
		}
	}
	countReply, err := rt.cc.callShard(ctx, cat, primary, withDB(bson.D{{Key: "count", Value: coll}}, db))
	if err != nil {
		return nil, err
	}
	existing, _ := countReply.Lookup("n").AsInt64OK()
	uuid := newUUID()
	now := bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}
	collDoc := bson.D{{Key: "_id", Value: ns}, {Key: "lastmodEpoch", Value: bson.NewObjectID()}, {Key: "lastmod", Value: time.Now()},
		{Key: "timestamp", Value: now}, {Key: "uuid", Value: uuid}, {Key: "key", Value: bson.Raw(keyDoc)},
		{Key: "unique", Value: body.Lookup("unique").Type == bson.TypeBoolean && body.Lookup("unique").Boolean()}, {Key: "noBalance", Value: false}}
	bound := func(v any) bson.D {
		d := bson.D{}
		for i, f := range fields {
			if i == 0 {
				d = append(d, bson.E{Key: f, Value: v})
			} else {
				d = append(d, bson.E{Key: f, Value: bson.MinKey{}})
			}
		}
		return d
	}
	maxB := bson.D{}
	for _, f := range fields {
		maxB = append(maxB, bson.E{Key: f, Value: bson.MaxKey{}})
	}
	type span struct {
		min, max bson.D
		shard    string
	}
	spans := []span{{bound(bson.MinKey{}), maxB, primary}}
	if hashed && existing == 0 && len(fields) == 1 {
		n, _ := body.Lookup("numInitialChunks").AsInt64OK()
		if n <= 0 {
			n = int64(2 * len(cat.shards))
		}
		ids := make([]string, len(cat.shards))
		for i, s := range cat.shards {
			ids[i] = s.ID
		}
		sort.Strings(ids)
		spans = nil
		step := math.MaxUint64 / uint64(n)
		var prev any = bson.MinKey{}
		for i := int64(0); i < n; i++ {
			var next any = bson.MaxKey{}
			if i < n-1 {
				next = int64(uint64(1)<<63 + uint64(i+1)*step)
			}
			mx := bound(next)
			if i == n-1 {
				mx = maxB
			}
			spans = append(spans, span{bound(prev), mx, ids[int(i)%len(ids)]})
			prev = next
		}
	}
	chunks := bson.A{}
	for i, s := range spans {
		chunks = append(chunks, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "uuid", Value: uuid}, {Key: "min", Value: s.min},
			{Key: "max", Value: s.max}, {Key: "shard", Value: s.shard}, {Key: "lastmod", Value: bson.Timestamp{T: 1, I: uint32(i)}},
			{Key: "onCurrentShardSince", Value: now}, {Key: "history", Value: bson.A{bson.D{{Key: "validAfter", Value: now}, {Key: "shard", Value: s.shard}}}}})
	}
	if _, err := rt.cc.callConfig(ctx, withDB(bson.D{{Key: "insert", Value: "chunks"}, {Key: "documents", Value: chunks},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}, "config")); err != nil {
		return nil, err
	}
	if err := rt.upsertConfig(ctx, "collections", ns, collDoc); err != nil {
		return nil, err
	}
	if _, err := rt.cc.catalog(ctx, true); err != nil {
		return nil, err
	}
	return bson.D{{Key: "collectionsharded", Value: ns}}, nil
}

func seqOrArray(body bson.Raw, seqs map[string][]bson.Raw, key string) []bson.Raw {
	if docs := seqs[key]; docs != nil {
		return docs
	}
	arr, _ := body.Lookup(key).ArrayOK()
	vals, _ := arr.Values()
	var out []bson.Raw
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			out = append(out, bson.Raw(d))
		}
	}
	return out
}

func (rt *Router) cmdInsert(ctx context.Context, db string, body bson.Raw, seqs map[string][]bson.Raw) (bson.D, error) {
	return rt.routeWrite(ctx, db, body, seqs, "insert", "documents", &rt.counters.insert, rt.cc.routeInsert)
}

func (rt *Router) cmdUpdate(ctx context.Context, db string, body bson.Raw, seqs map[string][]bson.Raw) (bson.D, error) {
	return rt.routeWrite(ctx, db, body, seqs, "update", "updates", &rt.counters.update, rt.cc.routeUpdate)
}

// routeWrite is a write command's way through the router: its items
// (body's field, or the document sequence of that name) are counted, a
// write to the config database goes to the config server, any other
// makes sure its database exists and is routed item by item by route.
// The reply has the updates' counters (n, nModified) for an update.
func (rt *Router) routeWrite(ctx context.Context, db string, body bson.Raw, seqs map[string][]bson.Raw, verb, field string, count *atomic.Int64,
	route func(ctx context.Context, db, coll string, items []bson.Raw, extra bson.D) (*writeResult, error)) (bson.D, error) {
	coll, _ := body.Lookup(verb).StringValueOK()
	items := seqOrArray(body, seqs, field)
	count.Add(int64(len(items)))
	if db == "config" {
		return rt.forwardConfig(ctx, body, seqs)
	}
	if _, err := rt.ensureDatabase(ctx, db, ""); err != nil {
		return nil, err
	}
	res, err := route(ctx, db, coll, items, passOn(body, field))
	if err != nil {
		return nil, err
	}
	return res.reply(verb == "update"), nil
}

// forwardConfig sends a write on the config database to the config server.
func (rt *Router) forwardConfig(ctx context.Context, body bson.Raw, seqs map[string][]bson.Raw) (bson.D, error) {
	first, _ := body.IndexErr(0)
	cmd := bson.D{{Key: first.Key(), Value: first.Value()}}
	cmd = append(cmd, passOn(body)...)
	for k, docs := range seqs {
		arr := bson.A{}
		for _, d := range docs {
			arr = append(arr, d)
		}
		cmd = append(cmd, bson.E{Key: k, Value: arr})
	}
	reply, err := rt.cc.callConfig(ctx, withDB(cmd, "config"))
	if err != nil {
		return nil, err
	}
	return stripReply(reply), nil
}

// stripReply is a shard's reply without ok and the cluster-time fields.
func stripReply(reply bson.Raw) bson.D {
	var out bson.D
	elems, _ := reply.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "ok", "$clusterTime", "operationTime", "$configTime", "$topologyTime":
			continue
		}
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	return out
}

func batchSizeOf(v bson.RawValue) int {
	if n, ok := v.AsInt64OK(); ok && n > 0 {
		return int(n)
	}
	return 101
}

func (rt *Router) cmdFind(ctx context.Context, db string, body bson.Raw) (bson.D, error) {
	rt.counters.query.Add(1)
	coll, _ := body.Lookup("find").StringValueOK()
	ns := db + "." + coll
	filter, _ := body.Lookup("filter").DocumentOK()
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	var targets []string
	if db == "config" {
		targets = []string{"config"}
	} else {
		targets, _ = cat.targets(ns, bson.Raw(filter))
	}
	n := batchSizeOf(body.Lookup("batchSize"))
	if single, _ := body.Lookup("singleBatch").BooleanOK(); single {
		n = math.MaxInt32
	}
	cur := &routerCursor{ns: ns}
	cmd := append(bson.D{{Key: "find", Value: coll}}, passOn(body)...)
	if len(targets) > 1 {
		skip, _ := body.Lookup("skip").AsInt64OK()
		limit, _ := body.Lookup("limit").AsInt64OK()
		cur.skip, cur.limit = skip, limit
		cmd = passOn(body, "skip", "limit")
		cmd = append(bson.D{{Key: "find", Value: coll}}, cmd...)
		if limit > 0 {
			cmd = append(cmd, bson.E{Key: "limit", Value: skip + limit})
		}
		if s, ok := body.Lookup("sort").DocumentOK(); ok && len(bson.Raw(s)) > 5 {
			keys, err := query.CompileSort(bson.Raw(s))
			if err != nil {
				return nil, err
			}
			cur.sort = keys
		}
	}
	for _, t := range targets {
		rc, err := rt.openRemote(ctx, cat, t, withDB(slices.Clone(cmd), db))
		if err != nil {
			cur.close(context.Background())
			return nil, err
		}
		cur.remotes = append(cur.remotes, rc)
	}
	return rt.cursorFirstBatch(ctx, cur, n)
}

func (rt *Router) cmdCount(ctx context.Context, db string, body bson.Raw) (bson.D, error) {
	rt.counters.query.Add(1)
	coll, _ := body.Lookup("count").StringValueOK()
	q, _ := body.Lookup("query").DocumentOK()
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	targets, _ := cat.targets(db+"."+coll, bson.Raw(q))
	var total int64
	for _, t := range targets {
		var reply bson.Raw
		cmd := withDB(append(bson.D{{Key: "count", Value: coll}}, passOn(body)...), db)
		if db == "config" {
			reply, err = rt.cc.callConfig(ctx, cmd)
		} else {
			reply, err = rt.cc.callShard(ctx, cat, t, cmd)
		}
		if err != nil {
			return nil, err
		}
		n, _ := reply.Lookup("n").AsInt64OK()
		total += n
		if db == "config" {
			break
		}
	}
	return bson.D{{Key: "n", Value: int32(total)}}, nil
}

// streamable stages run on each shard unchanged, document by document.
var streamable = map[string]bool{"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true, "$unwind": true}

// cmdAggregate targets the pipeline as mongos does. One target shard (an
// unsharded collection, or a $match on the full shard key) runs the whole
// pipeline, $merge/$out included, with fromMongos. Several shards run the
// leading streamable stages (and a $sort, merged on the router); the router
// runs the rest. A write pipeline over several shards is run whole on each
// only when it is streamable into a sharded $merge target.
func (rt *Router) cmdAggregate(ctx context.Context, db string, body bson.Raw) (bson.D, error) {
	rt.counters.query.Add(1)
	arr, ok := body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array")
	}
	if body.Lookup("cursor").Type == 0 && body.Lookup("explain").Type == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	vals, _ := arr.Values()
	var stages []bson.Raw
	var names []string
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		stages = append(stages, bson.Raw(d))
		first, _ := bson.Raw(d).IndexErr(0)
		names = append(names, first.Key())
	}
	if len(names) > 0 && names[0] == "$shardedDataDistribution" {
		return rt.aggregateShardedDataDistribution(ctx, db, body, stages, batchSizeOf(body.Lookup("cursor", "batchSize")))
	}
	if _, err := query.Compile(db, stages); err != nil {
		return nil, err
	}
	n := batchSizeOf(body.Lookup("cursor", "batchSize"))
	if len(names) > 0 && names[0] == "$currentOp" {
		return rt.aggregateCurrentOp(ctx, stages, n)
	}
	coll, _ := body.Lookup("aggregate").StringValueOK()
	ns := db + "." + coll
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	var match bson.Raw
	if len(names) > 0 && names[0] == "$match" {
		m, _ := stages[0].Lookup("$match").DocumentOK()
		match = bson.Raw(m)
	}
	var targets []string
	if db == "config" {
		targets = []string{"config"}
	} else {
		targets, _ = cat.targets(ns, match)
	}
	rest := passOn(body, "pipeline", "cursor")
	// The client's batch size goes to the shards too, for the first batch
	// and every getMore the router sends them (as mongos's results merger
	// does), so a shard's cursor takes its getMores, each a new operation
	// that queues for a ticket while the cursor holds its buffer.
	shardBatch := int64(0)
	if b, ok := body.Lookup("cursor", "batchSize").AsInt64OK(); ok && b > 0 {
		shardBatch = b
	}
	shardCmd := func(pipeline []bson.Raw) bson.D {
		p := bson.A{}
		for _, s := range pipeline {
			p = append(p, s)
		}
		cursorOpt := bson.D{}
		if shardBatch > 0 {
			cursorOpt = bson.D{{Key: "batchSize", Value: shardBatch}}
		}
		cmd := bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: p}, {Key: "cursor", Value: cursorOpt}}
		cmd = append(cmd, rest...)
		if db != "config" {
			cmd = append(cmd, bson.E{Key: "fromMongos", Value: true})
		}
		return withDB(cmd, db)
	}
	cur := &routerCursor{ns: ns}
	open := func(pipeline []bson.Raw) error {
		remotes, err := rt.openRemotes(ctx, cat, targets, shardCmd(pipeline))
		if err != nil {
			return err
		}
		for _, rc := range remotes {
			rc.batch = shardBatch
		}
		cur.remotes = remotes
		return nil
	}
	write := len(names) > 0 && (names[len(names)-1] == "$merge" || names[len(names)-1] == "$out")
	if write && db != "config" && len(targets) == 1 {
		// The target shard may write into databases the router has not
		// seen yet: record them first, as a create-database would.
		if err := rt.ensureOutputDB(ctx, db, stages[len(stages)-1]); err != nil {
			return nil, err
		}
	}
	if len(targets) == 1 {
		if err := open(stages); err != nil {
			return nil, err
		}
		return rt.cursorFirstBatch(ctx, cur, n)
	}
	split := 0
	for split < len(names) && streamable[names[split]] {
		split++
	}
	if write {
		last := stages[len(stages)-1]
		target := ""
		if names[len(names)-1] == "$merge" {
			into := last.Lookup("$merge", "into")
			if s, ok := into.StringValueOK(); ok {
				target = db + "." + s
			} else if d, ok := into.DocumentOK(); ok {
				tdb, _ := bson.Raw(d).Lookup("db").StringValueOK()
				tc, _ := bson.Raw(d).Lookup("coll").StringValueOK()
				if tdb == "" {
					tdb = db
				}
				target = tdb + "." + tc
			}
		}
		// Every stage before the $merge streams, so each shard can run the
		// whole pipeline and send its writes through the router's write
		// path to the target's owner: the target's chunks when it is
		// sharded, its database's primary shard when it is not (mongod
		// runs an unsharded target's merging half on that shard; the
		// documents written are the same).
		if split != len(names)-1 || target == "" {
			return nil, mongoerr.New(codeIllegalOperation, "mongosim's router runs a write pipeline over several shards only when every stage before its $merge streams ($out over several shards is not simulated)")
		}
		if err := open(stages); err != nil {
			return nil, err
		}
		return rt.cursorFirstBatch(ctx, cur, n)
	}
	shardPart := stages[:split]
	if split < len(names) && cat.colls[ns] != nil && runsWholeOnShards(stages[split], cat.colls[ns]) {
		// Every group or partition of the stage lives on one shard, so
		// each shard runs the stage whole over its own documents (its
		// blocking work, memory and admission are the shard's) and the
		// router only concatenates.
		split++
		shardPart = stages[:split]
	} else if split < len(names) && names[split] == "$sort" {
		sortDoc, _ := stages[split].Lookup("$sort").DocumentOK()
		keys, err := query.CompileSort(bson.Raw(sortDoc))
		if err != nil {
			return nil, err
		}
		cur.sort = keys
		shardPart = stages[:split+1]
		split++
	}
	if err := open(shardPart); err != nil {
		return nil, err
	}
	if split == len(stages) {
		return rt.cursorFirstBatch(ctx, cur, n)
	}
	// The merger part runs on the router over every shard's output.
	all, err := cur.next(ctx, math.MaxInt)
	if err != nil {
		cur.close(context.Background())
		return nil, err
	}
	cur.close(context.Background())
	p, err := query.Compile(db, stages[split:])
	if err != nil {
		return nil, err
	}
	out, err := p.Run(routerEnv{}, all)
	if err != nil {
		return nil, err
	}
	return rt.cursorFirstBatch(ctx, &routerCursor{ns: ns, remotes: []*remoteCursor{{buf: out}}}, n)
}

// runsWholeOnShards reports whether a blocking stage keys its work on the
// collection's shard key, so that each of its groups ($group's _id) or
// partitions ($setWindowFields' partitionBy) lies on one shard: a key of
// one field, named as "$<field>". Such a stage gives the same documents
// run shard by shard as run on the router over every shard's input.
func runsWholeOnShards(stage bson.Raw, ci *collInfo) bool {
	if len(ci.fields) != 1 {
		return false
	}
	byKey := func(v bson.RawValue) bool {
		s, ok := v.StringValueOK()
		return ok && s == "$"+ci.fields[0]
	}
	first, err := stage.IndexErr(0)
	if err != nil {
		return false
	}
	spec, ok := first.Value().DocumentOK()
	if !ok {
		return false
	}
	switch first.Key() {
	case "$group":
		return byKey(bson.Raw(spec).Lookup("_id"))
	case "$setWindowFields":
		return byKey(bson.Raw(spec).Lookup("partitionBy"))
	}
	return false
}

// ensureOutputDB records the database of a $merge/$out target.
func (rt *Router) ensureOutputDB(ctx context.Context, db string, last bson.Raw) error {
	target := db
	if d, ok := last.Lookup("$merge", "into").DocumentOK(); ok {
		if s, ok := bson.Raw(d).Lookup("db").StringValueOK(); ok && s != "" {
			target = s
		}
	}
	if d, ok := last.Lookup("$out").DocumentOK(); ok {
		if s, ok := bson.Raw(d).Lookup("db").StringValueOK(); ok && s != "" {
			target = s
		}
	}
	_, err := rt.ensureDatabase(ctx, target, "")
	return err
}

// routerEnv runs the merger part of a pipeline on the router.
type routerEnv struct{}

func (routerEnv) Scan(string, string) []bson.Raw { return nil }
func (routerEnv) CurrentOp(bson.Raw) ([]bson.Raw, error) {
	return nil, mongoerr.New(codeIllegalOperation, "$currentOp must be the first stage")
}
func (routerEnv) Merge(*query.MergeSpec, []bson.Raw) error {
	return mongoerr.New(codeIllegalOperation, "mongosim's router does not write from a merger pipeline")
}
func (routerEnv) Out(string, string, []bson.Raw) error {
	return mongoerr.New(codeIllegalOperation, "mongosim's router does not write from a merger pipeline")
}
func (routerEnv) CheckForInterrupt() error { return nil }

// shardOps lists each shard primary's operations for a currentOp request,
// tagged as mongos tags them: shard, and opid "<shard>:<opid>".
func (rt *Router) shardOps(ctx context.Context, opts bson.Raw) ([]bson.Raw, error) {
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []bson.Raw
	for _, sh := range cat.shards {
		call := func(cmd bson.D) (bson.Raw, error) { return rt.cc.callShard(ctx, cat, sh.ID, cmd) }
		reply, err := call(withDB(bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: opts}}}},
			{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: int32(100000)}}}}, "admin"))
		if err != nil {
			return nil, err
		}
		docs, _, err := cursorBatch(reply)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			t := bson.D{{Key: "shard", Value: sh.ID}}
			elems, _ := d.Elements()
			for _, e := range elems {
				if e.Key() == "opid" {
					id, _ := e.Value().AsInt64OK()
					t = append(t, bson.E{Key: "opid", Value: sh.ID + ":" + strconv.FormatInt(id, 10)})
					continue
				}
				t = append(t, bson.E{Key: e.Key(), Value: e.Value()})
			}
			b, _ := bson.Marshal(t)
			out = append(out, b)
		}
	}
	return out, nil
}

func (rt *Router) aggregateCurrentOp(ctx context.Context, stages []bson.Raw, n int) (bson.D, error) {
	opts, _ := stages[0].Lookup("$currentOp").DocumentOK()
	var docs []bson.Raw
	if local, _ := bson.Raw(opts).Lookup("localOps").BooleanOK(); local {
		docs = rt.localOps()
	} else {
		var err error
		if docs, err = rt.shardOps(ctx, bson.Raw(opts)); err != nil {
			return nil, err
		}
	}
	p, err := query.Compile("admin", stages[1:])
	if err != nil {
		return nil, err
	}
	out, err := p.Run(routerEnv{}, docs)
	if err != nil {
		return nil, err
	}
	return rt.cursorFirstBatch(ctx, &routerCursor{ns: "admin.$cmd.aggregate", remotes: []*remoteCursor{{buf: out}}}, n)
}

// cmdCurrentOp is the legacy command: the $currentOp fan-out, filtered by
// the command's other fields, sorted by shard, as {inprog}.
func (rt *Router) cmdCurrentOp(ctx context.Context, body bson.Raw) (bson.D, error) {
	var keys []string
	var vals []bson.RawValue
	elems, _ := body.Elements()
	for _, e := range elems {
		k := e.Key()
		if k == "currentOp" || k == "$all" || k == "$ownOps" || genericArguments[k] {
			continue
		}
		keys, vals = append(keys, k), append(vals, e.Value())
	}
	f, err := query.CompileFilter(query.Build(keys, vals))
	if err != nil {
		return nil, err
	}
	docs, err := rt.shardOps(ctx, bson.Raw{5, 0, 0, 0, 0})
	if err != nil {
		return nil, err
	}
	inprog := bson.A{}
	for _, d := range docs {
		if f.Match(d) {
			inprog = append(inprog, d)
		}
	}
	return bson.D{{Key: "inprog", Value: inprog}}, nil
}

// cmdKillOp kills a router operation (a number) or a shard's ("shard:opid").
func (rt *Router) cmdKillOp(ctx context.Context, body bson.Raw) (bson.D, error) {
	v := body.Lookup("op")
	if id, ok := v.AsInt64OK(); ok {
		rt.opMu.Lock()
		op := rt.ops[int32(id)]
		rt.opMu.Unlock()
		if op != nil {
			op.cancel()
		}
		return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
	}
	s, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Did not provide \"op\" field")
	}
	shard, num, ok := strings.Cut(s, ":")
	id, err := strconv.ParseInt(num, 10, 32)
	if !ok || shard == "" || err != nil {
		return nil, mongoerr.New(28625, "The op argument to killOp must be of the format shardid:opid but found \"%s\"", s)
	}
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	if cat.shard(shard) == nil {
		return nil, mongoerr.New(codeShardNotFound, "shard %s does not exist", shard)
	}
	_, _ = rt.cc.callShard(ctx, cat, shard, withDB(bson.D{{Key: "killOp", Value: int32(1)}, {Key: "op", Value: int32(id)}}, "admin"))
	return bson.D{{Key: "shard", Value: shard}, {Key: "shardid", Value: int32(id)}}, nil
}

func (rt *Router) cmdListDatabases(ctx context.Context) (bson.D, error) {
	cat, err := rt.cc.catalog(ctx, true)
	if err != nil {
		return nil, err
	}
	names := []string{"admin", "config"}
	for db := range cat.databases {
		names = append(names, db)
	}
	sort.Strings(names)
	dbs := bson.A{}
	for _, n := range names {
		dbs = append(dbs, bson.D{{Key: "name", Value: n}, {Key: "sizeOnDisk", Value: int64(0)}, {Key: "empty", Value: false}})
	}
	return bson.D{{Key: "databases", Value: dbs}, {Key: "totalSize", Value: int64(0)}}, nil
}

func (rt *Router) cmdListCollections(ctx context.Context, db string) (bson.D, error) {
	cat, err := rt.cc.catalog(ctx, false)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var docs []bson.Raw
	collect := func(reply bson.Raw) {
		batch, _, _ := cursorBatch(reply)
		for _, d := range batch {
			name, _ := d.Lookup("name").StringValueOK()
			if !seen[name] {
				seen[name] = true
				docs = append(docs, d)
			}
		}
	}
	cmd := withDB(bson.D{{Key: "listCollections", Value: int32(1)}}, db)
	if db == "config" {
		reply, err := rt.cc.callConfig(ctx, cmd)
		if err != nil {
			return nil, err
		}
		collect(reply)
	} else {
		for _, sh := range cat.shards {
			reply, err := rt.cc.callShard(ctx, cat, sh.ID, slices.Clone(cmd))
			if err != nil {
				return nil, err
			}
			collect(reply)
		}
	}
	return cursorReply(db+".$cmd.listCollections", 0, docs, "firstBatch"), nil
}

// cmdDrop drops the collection on every shard and marks its sharding
// metadata dropped (mongosim has no delete command to remove it).
func (rt *Router) cmdDrop(ctx context.Context, db string, body bson.Raw) (bson.D, error) {
	coll, _ := body.Lookup("drop").StringValueOK()
	ns := db + "." + coll
	cat, err := rt.cc.catalog(ctx, true)
	if err != nil {
		return nil, err
	}
	found := false
	for _, sh := range cat.shards {
		_, err := rt.cc.callShard(ctx, cat, sh.ID, withDB(append(bson.D{{Key: "drop", Value: coll}}, passOn(body)...), db))
		if err == nil {
			found = true
		} else if !isCode(err, mongoerr.NamespaceNotFound) {
			return nil, err
		}
	}
	if cat.colls[ns] != nil {
		found = true
		if _, err := rt.cc.callConfig(ctx, withDB(bson.D{{Key: "update", Value: "collections"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: ns}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "dropped", Value: true}}}}}}}}}, "config")); err != nil {
			return nil, err
		}
		if _, err := rt.cc.catalog(ctx, true); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns not found")
	}
	return bson.D{{Key: "ns", Value: ns}, {Key: "nIndexesWas", Value: int32(1)}}, nil
}

func isCode(err error, code int32) bool {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code == code
	}
	return wireIsCode(err, code)
}

func wireIsCode(err error, code int32) bool {
	var ce *wire.CommandError
	return asCommandError(err, &ce) && ce.Code == code
}
