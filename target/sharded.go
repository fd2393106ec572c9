package target

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

// Sharding is what a sharded deployment adds to Deployment: its URI names
// the routers (mongos), and Members are the shards' data-bearing members.
type Sharding interface {
	// ShardOf maps each of Members to the id of the shard it belongs to
	// ("sh0"), as the config server's listShards names them.
	ShardOf() map[string]string
	// Routers are the routers' host:port.
	Routers() []string
}

// ShardingOf returns the deployment's sharding, or nil when it is not
// sharded.
func ShardingOf(dep Deployment) Sharding {
	if s, ok := dep.(Sharding); ok && len(s.Routers()) > 0 {
		return s
	}
	return nil
}

// embeddedSharded is an in-process mongosim sharded cluster, one per trial.
type embeddedSharded struct {
	cluster *mongosim.ShardedCluster
	shardOf map[string]string
	members []string
	startup []MemberInfo
	caps    Capabilities
}

func provisionEmbeddedSharded(ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	size := arm.Sharded.WithDefaults()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c, err := mongosim.StartShardedCluster(sctx, mongosim.ShardedClusterOptions{Shards: size.Shards, MembersPerShard: size.MembersPerShard,
		Routers: size.Routers, ConfigMembers: size.ConfigMembers, Parameters: arm.SetParameters,
		Shard: mongosim.ReplicaSetOptions{Logger: opts.Logger, Sim: opts.Sim, MemLimitMB: opts.SimMemLimitMB}})
	if err != nil {
		return nil, fmt.Errorf("arm %s: starting the embedded mongosim sharded cluster: %w", arm.Name, err)
	}
	e := &embeddedSharded{cluster: c, shardOf: map[string]string{}}
	for i, rs := range c.Shards() {
		for _, h := range rs.Hosts() {
			e.members = append(e.members, h)
			e.shardOf[h] = fmt.Sprintf("sh%d", i)
		}
	}
	if e.startup, err = startupCheck(ctx, loopbackOnly, e.members, arm); err != nil {
		c.Close()
		return nil, err
	}
	for i := range e.startup {
		e.startup[i].Topology = "mongos" // each shard member is behind a router
	}
	if e.caps, err = probe(ctx, loopbackOnly, e.startup, arm); err != nil {
		c.Close()
		return nil, err
	}
	return e, nil
}

func (e *embeddedSharded) URI() string                { return e.cluster.URI() }
func (e *embeddedSharded) Members() []string          { return e.members }
func (e *embeddedSharded) Simulated() bool            { return true }
func (e *embeddedSharded) Startup() []MemberInfo      { return e.startup }
func (e *embeddedSharded) Capabilities() Capabilities { return e.caps }
func (e *embeddedSharded) ShardOf() map[string]string { return e.shardOf }
func (e *embeddedSharded) Routers() []string          { return e.cluster.Routers() }
func (e *embeddedSharded) Describe() string {
	return fmt.Sprintf("embedded mongosim sharded cluster (SIMULATED) of %d shards, routers %s", len(e.cluster.Shards()), strings.Join(e.Routers(), ","))
}

// Cluster exposes the in-process cluster (tests and fault injection).
func (e *embeddedSharded) Cluster() *mongosim.ShardedCluster { return e.cluster }

func (e *embeddedSharded) Close(context.Context) error { return e.cluster.Close() }
