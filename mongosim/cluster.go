package mongosim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/clustersize"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// ShardedClusterOptions configure an in-process sharded cluster: a config
// server replica set, Shards shard replica sets and Routers routers. The
// sizes left zero are clustersize's defaults, an arm's too.
type ShardedClusterOptions struct {
	Shards          int               // ≥ 1, default 2
	MembersPerShard int               // default 1 (a replica set each)
	Routers         int               // default 1
	Parameters      map[string]string // startup --setParameter for every shard member (as ReplicaSetOptions.Parameters)
	// ConfigMembers is the config server set's size (default 1).
	ConfigMembers int
	// Shard is what every shard's replica set shares beyond the above
	// (hardware, model options, election timing); its Name, Members,
	// Parameters and ClusterRole are set per shard.
	Shard ReplicaSetOptions
}

// ShardedCluster is a config server set, shard sets and routers on loopback.
type ShardedCluster struct {
	config  *ReplicaSet
	shards  []*ReplicaSet
	routers []*Router
	once    sync.Once
}

// StartShardedCluster starts the config server and the shards, then the
// routers, and adds every shard (sh0, sh1, ...) through the first router.
func StartShardedCluster(ctx context.Context, o ShardedClusterOptions) (*ShardedCluster, error) {
	clustersize.FillDefaults(&o.Shards, &o.MembersPerShard, &o.ConfigMembers, &o.Routers)
	c := &ShardedCluster{shards: make([]*ReplicaSet, o.Shards)}
	var wg sync.WaitGroup
	errs := make([]error, o.Shards+1)
	wg.Add(o.Shards + 1)
	go func() {
		defer wg.Done()
		cfg := o.Shard
		cfg.Name, cfg.Members, cfg.Parameters, cfg.ClusterRole, cfg.DiagnosticDataRoot = "cfg", o.ConfigMembers, nil, RoleConfigServer, ""
		c.config, errs[0] = StartReplicaSet(ctx, cfg)
	}()
	for i := range o.Shards {
		go func() {
			defer wg.Done()
			so := o.Shard
			so.Name, so.Members, so.Parameters, so.ClusterRole = fmt.Sprintf("sh%d", i), o.MembersPerShard, o.Parameters, RoleShardServer
			if o.Shard.DiagnosticDataRoot != "" {
				so.DiagnosticDataRoot = o.Shard.DiagnosticDataRoot + "/" + so.Name
			}
			c.shards[i], errs[i+1] = StartReplicaSet(ctx, so)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, fmt.Errorf("starting sharded cluster: %w", err)
	}
	configDB := "cfg/" + strings.Join(c.config.Hosts(), ",")
	for range o.Routers {
		ln, err := ListenLoopback()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("starting router: %w", err)
		}
		rt, err := StartRouter(RouterOptions{Listener: ln, ConfigDB: configDB, Logger: o.Shard.Logger})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.routers = append(c.routers, rt)
	}
	wc := &wire.Client{Addr: c.routers[0].Addr()}
	defer wc.Close()
	for i, rs := range c.shards {
		conn := fmt.Sprintf("sh%d/%s", i, strings.Join(rs.Hosts(), ","))
		if _, err := wc.Call(ctx, bson.D{{Key: "addShard", Value: conn}, {Key: "$db", Value: "admin"}}); err != nil {
			c.Close()
			return nil, fmt.Errorf("addShard %s: %w", conn, err)
		}
	}
	return c, nil
}

// URI is a connection string naming every router.
func (c *ShardedCluster) URI() string {
	return "mongodb://" + strings.Join(c.Routers(), ",") + "/"
}

// Shards returns each shard's replica set, sh0 first.
func (c *ShardedCluster) Shards() []*ReplicaSet { return c.shards }

// ConfigServer returns the config server replica set.
func (c *ShardedCluster) ConfigServer() *ReplicaSet { return c.config }

// Routers lists each router's host:port.
func (c *ShardedCluster) Routers() []string {
	out := make([]string, len(c.routers))
	for i, r := range c.routers {
		out[i] = r.Addr()
	}
	return out
}

// Close stops routers, shards and the config server.
func (c *ShardedCluster) Close() error {
	var errs []error
	c.once.Do(func() {
		for _, r := range c.routers {
			errs = append(errs, r.Close())
		}
		for _, rs := range c.shards {
			if rs != nil {
				rs.Close()
			}
		}
		if c.config != nil {
			c.config.Close()
		}
	})
	return errors.Join(errs...)
}
