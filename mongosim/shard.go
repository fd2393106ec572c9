package mongosim

// A member started as a shard (--shardsvr) or a config server
// (--configsvr). A shard learns its identity from the router's _addShard
// (kept in admin.system.version, so it replicates to every member and
// survives restarts), and from then on its $merge/$out writes of pipelines
// that came from a router go out through its own routing path
// (clusterClient): separate insert/update/rename commands to the owning
// shards' primaries over the wire — also when the owner is this shard, as
// mongod's ShardServerProcessInterface goes through cluster::write with no
// in-process shortcut. The aggregating operation therefore never takes the
// write-intent latch (the partial-write investigation).

import (
	"context"
	"encoding/hex"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// Cluster roles of a member (mongod's sharding.clusterRole).
const (
	RoleShardServer  = "shardsvr"
	RoleConfigServer = "configsvr"
)

// shardIdentityNS holds the shard identity document, as mongod's does.
const shardIdentityNS = "admin.system.version"

func shardCommands() map[string]*command {
	return map[string]*command{
		"_addShard":                  {run: (*Server).cmdAddShardIdentity, kind: writeCmd},
		"_mongosimReplaceCollection": {run: (*Server).cmdReplaceCollection, kind: writeCmd},
	}
}

// shardRouting caches a shard member's routing endpoint.
type shardRouting struct {
	mu       sync.Mutex
	configDB string
	client   *clusterClient
}

var shardRoutes sync.Map // *Server -> *shardRouting

// cmdAddShardIdentity is _addShard: the router tells a shard its name and
// the config server; the primary records it in admin.system.version.
func (s *Server) cmdAddShardIdentity(r *request) (bson.D, error) {
	if s.opts.ClusterRole != RoleShardServer {
		return nil, mongoerr.New(codeInvalidOptions, "Cannot accept sharding commands if not started with --shardsvr")
	}
	id := r.doc("shardIdentity")
	name, _ := id.Lookup("shardName").StringValueOK()
	cfg, _ := id.Lookup("configsvrConnectionString").StringValueOK()
	if name == "" || cfg == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "shardIdentity needs shardName and configsvrConnectionString")
	}
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: "shardIdentity"}, {Key: "shardName", Value: name},
		{Key: "clusterId", Value: id.Lookup("clusterId")}, {Key: "configsvrConnectionString", Value: cfg}})
	s.mu.Lock()
	if s.repl.state != statePrimary {
		s.mu.Unlock()
		return nil, s.checkState(r, writeCmd)
	}
	if c := s.data.coll(shardIdentityNS, false); c != nil {
		if old, ok := c.get(query.Lookup(doc, "_id")); ok {
			if n, _ := old.Lookup("shardName").StringValueOK(); n != name {
				s.mu.Unlock()
				return nil, mongoerr.New(codeInvalidOptions, "this member is already shard %s", n)
			}
		}
	}
	e := s.logLocked(oplogOp{op: "u", ns: shardIdentityNS, o: doc, o2: idDoc(doc)}, bson.RawValue{}, 0)
	err := s.persistLocked([]oplogEntry{e})
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.writeReply(r, bson.D{}, e.ot), nil
}

// shardIdentity returns the member's shard name and config server, if it
// has been added to a cluster.
func (s *Server) shardIdentity() (name, configDB string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.data.coll(shardIdentityNS, false)
	if c == nil {
		return "", ""
	}
	idv, _ := bson.Marshal(bson.D{{Key: "_id", Value: "shardIdentity"}})
	d, ok := c.get(bson.Raw(idv).Lookup("_id"))
	if !ok {
		return "", ""
	}
	name, _ = d.Lookup("shardName").StringValueOK()
	configDB, _ = d.Lookup("configsvrConnectionString").StringValueOK()
	return name, configDB
}

// clusterWriter is the routing path a request's $merge/$out writes take:
// non-nil for a pipeline a router sent to a member that is a shard.
func (s *Server) clusterWriter(r *request) *clusterClient {
	if s.opts.ClusterRole != RoleShardServer || r == nil {
		return nil
	}
	if from, _ := r.body.Lookup("fromMongos").BooleanOK(); !from {
		return nil
	}
	_, cfg := s.shardIdentity()
	if cfg == "" {
		return nil
	}
	v, _ := shardRoutes.LoadOrStore(s, &shardRouting{})
	sr := v.(*shardRouting)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.client == nil || sr.configDB != cfg {
		cc, err := newClusterClient(cfg)
		if err != nil {
			s.log.Warn("shard identity has a bad config server string", "err", err)
			return nil
		}
		if sr.client != nil {
			sr.client.close()
		}
		sr.client, sr.configDB = cc, cfg
	}
	return sr.client
}

// releaseShardRouting closes the member's routing connections.
func (s *Server) releaseShardRouting() {
	if v, ok := shardRoutes.LoadAndDelete(s); ok {
		sr := v.(*shardRouting)
		sr.mu.Lock()
		if sr.client != nil {
			sr.client.close()
		}
		sr.mu.Unlock()
	}
}

// routeBatches writes a stage's output through the cluster write path,
// batch by batch: each batch of up to mergeBatchDocs documents is charged
// to the model and checked for interruption before write sends it, with
// the options of every routed output write. emptyBatch makes an empty
// output one (empty, unsent) batch still, for its charge and check. stage
// ($merge or $out) names the errors.
func (e *pipelineEnv) routeBatches(stage string, docs []bson.Raw, emptyBatch bool, write func(ctx context.Context, chunk []bson.Raw, extra bson.D) (*writeResult, error)) error {
	for k := 0; len(docs) > 0 || (k == 0 && emptyBatch); k++ {
		chunk := docs[:min(len(docs), mergeBatchDocs)]
		docs = docs[len(chunk):]
		if err := e.modelWriteBatch(k, len(chunk)); err != nil {
			return err
		}
		if err := e.r.op.CheckForInterrupt(); err != nil {
			return err
		}
		if len(chunk) == 0 {
			break
		}
		ctx, cancel := context.WithTimeout(e.s.ctx, 30*time.Second)
		res, err := write(ctx, chunk, bson.D{{Key: "ordered", Value: true}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}})
		cancel()
		if err != nil {
			return mongoerr.New(codeHostUnreachable, "%s writes through the router path failed: %v", stage, err)
		}
		if len(res.writeErrors) > 0 {
			return mongoerr.New(mongoerr.DuplicateKey, "%s write failed on a shard: %v", stage, res.writeErrors[0])
		}
	}
	return nil
}

// routeMerge writes $merge output through the cluster write path: each
// batch is one update command per owning shard, sent over the wire.
func (e *pipelineEnv) routeMerge(cc *clusterClient, spec *query.MergeSpec, docs []bson.Raw) error {
	return e.routeBatches("$merge", docs, e.modelOp != nil, func(ctx context.Context, chunk []bson.Raw, extra bson.D) (*writeResult, error) {
		var updates []bson.Raw
		for _, u := range mergeUpdates(spec, chunk) {
			b, err := bson.Marshal(u)
			if err != nil {
				return nil, err
			}
			updates = append(updates, b)
		}
		return cc.routeUpdate(ctx, spec.DB, spec.Coll, updates, extra)
	})
}

// routeOut is $out on a shard: the output goes into a temporary collection
// through the cluster write path (insert commands, batch by batch), then a
// rename replaces the target on the shard that owns it, also a command over
// the wire. A shed between batches leaves the temporary collection behind.
func (e *pipelineEnv) routeOut(cc *clusterClient, db, coll string, docs []bson.Raw) error {
	tmp := "tmp.agg_out." + hex.EncodeToString(func() []byte { id := bson.NewObjectID(); return id[:] }())
	err := e.routeBatches("$out", docs, true, func(ctx context.Context, chunk []bson.Raw, extra bson.D) (*writeResult, error) {
		return cc.routeInsert(ctx, db, tmp, chunk, extra)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(e.s.ctx, 30*time.Second)
	defer cancel()
	cat, err := cc.catalog(ctx, false)
	if err != nil {
		return err
	}
	if _, err := cc.callShard(ctx, cat, cat.primaryShard(db+"."+coll), bson.D{{Key: "_mongosimReplaceCollection", Value: coll},
		{Key: "from", Value: tmp}, {Key: "$db", Value: db}}); err != nil {
		return mongoerr.New(codeHostUnreachable, "$out rename through the router path failed: %v", err)
	}
	return nil
}

// cmdReplaceCollection stands for internalRenameIfOptionsAndIndexesMatch
// with dropTarget: it replaces the target collection by the contents of
// "from" and drops "from", atomically in one oplog batch.
func (s *Server) cmdReplaceCollection(r *request) (bson.D, error) {
	coll, from := r.str("_mongosimReplaceCollection"), r.str("from")
	if coll == "" || from == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "_mongosimReplaceCollection needs a target and from")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repl.state != statePrimary {
		return nil, s.checkState(r, writeCmd)
	}
	src := s.data.coll(r.db+"."+from, false)
	if src == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "source namespace %s.%s does not exist", r.db, from)
	}
	docs := src.snapshot()
	var entries []oplogEntry
	cmdEntry := func(d bson.D) {
		o, _ := bson.Marshal(d)
		entries = append(entries, s.logLocked(oplogOp{op: "c", ns: r.db + ".$cmd", o: o}, bson.RawValue{}, 0))
	}
	if s.data.coll(r.db+"."+coll, false) != nil {
		cmdEntry(bson.D{{Key: "drop", Value: coll}})
	}
	cmdEntry(bson.D{{Key: "create", Value: coll}})
	for _, d := range docs {
		entries = append(entries, s.logLocked(oplogOp{op: "i", ns: r.db + "." + coll, o: d}, bson.RawValue{}, 0))
	}
	cmdEntry(bson.D{{Key: "drop", Value: from}})
	if err := s.persistLocked(entries); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}
