package target

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
)

// provisionLocalSharded launches a sharded cluster from the arm's mongod
// and mongos binaries: a config server set (cfg), shard sets sh0, sh1, …
// of --shardsvr members, and routers over the config server; it adds
// every shard through the first router. Each process is supervised and
// torn down as a local replica set's members are; each keeps its log in
// the trial folder (cfg/member0, sh0/member0, router0, …).
func provisionLocalSharded(life, ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	if _, err := os.Stat(arm.Sharded.Mongos); err != nil {
		return nil, fmt.Errorf("arm %s: mongos binary: %w", arm.Name, err)
	}
	size := arm.Sharded.WithDefaults()
	l, err := newLocal(life, arm, opts)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Deployment, error) {
		l.Close(context.Background())
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	startSet := func(name string, role memberRole, n int) ([]*member, error) {
		var set []*member
		for i := range n {
			m, err := l.launch(arm.Mongod, role, name, filepath.Join(opts.Dir, name, fmt.Sprintf("member%d", i)))
			if err != nil {
				return nil, err
			}
			set = append(set, m)
		}
		return set, l.initiate(ctx, name, set, role == roleConfig)
	}
	cfg, err := startSet("cfg", roleConfig, size.ConfigMembers)
	if err != nil {
		return fail(err)
	}
	shards := make([]string, size.Shards) // "sh0/h:p,..."
	l.shardOf = map[string]string{}
	for i := range size.Shards {
		name := fmt.Sprintf("sh%d", i)
		set, err := startSet(name, roleShard, size.MembersPerShard)
		if err != nil {
			return fail(err)
		}
		var hosts []string
		for _, m := range set {
			hosts = append(hosts, m.addr())
			l.shardOf[m.addr()] = name
		}
		shards[i] = name + "/" + strings.Join(hosts, ",")
	}
	var cfgHosts []string
	for _, m := range cfg {
		cfgHosts = append(cfgHosts, m.addr())
	}
	l.configDB = "cfg/" + strings.Join(cfgHosts, ",")
	for i := range size.Routers {
		if _, err := l.launch(arm.Sharded.Mongos, roleRouter, "", filepath.Join(opts.Dir, fmt.Sprintf("router%d", i))); err != nil {
			return fail(err)
		}
	}
	if err := addShards(ctx, l.Routers()[0], shards); err != nil {
		return fail(err)
	}
	if err := l.check(ctx); err != nil {
		l.Close(context.Background())
		return nil, err
	}
	return l, nil
}

// addShards adds each shard ("sh0/h:p,...") through the router.
func addShards(ctx context.Context, router string, shards []string) error {
	c, err := mongo.Connect(loopbackOnly.Client(options.Client().ApplyURI("mongodb://" + router + "/").SetServerSelectionTimeout(30 * time.Second)))
	if err != nil {
		return err
	}
	defer mongoclient.Disconnect(c)
	for _, s := range shards {
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: s}}).Err(); err != nil {
			return fmt.Errorf("addShard %s: %w", s, err)
		}
	}
	return nil
}

// Routers are a sharded local deployment's routers (none for a replica
// set).
func (l *local) Routers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.members {
		if m.role == roleRouter {
			out = append(out, m.addr())
		}
	}
	return out
}

// ShardOf maps each shard member to its shard (nil for a replica set).
func (l *local) ShardOf() map[string]string { return l.shardOf }
