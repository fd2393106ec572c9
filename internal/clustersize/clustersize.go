// Package clustersize is the default size of a sharded cluster qmlsab
// starts, in one place: an arm's sharded: block (arms.Sharded, for the
// embedded and the local target) and the simulator's in-process cluster
// (mongosim.StartShardedCluster) both fill the sizes left unset from it.
// It is a package of its own because neither side may import the other:
// the simulator stands below the experiment, and the arms compile without
// the simulator.
//
// The default is the smallest cluster the sharded workloads need: two
// shards (a boundary for merge_partial_write's output to cross), each a
// replica set of one member, a config server set of one member and one
// router. One member per shard keeps a trial at four processes; a shard
// that must survive losing its primary needs more (membersPerShard: 3).
package clustersize

// The defaults of a sharded cluster's size.
const (
	DefaultShards          = 2
	DefaultMembersPerShard = 1
	DefaultConfigMembers   = 1
	DefaultRouters         = 1
)

// FillDefaults sets each size that is not positive to its default.
func FillDefaults(shards, membersPerShard, configMembers, routers *int) {
	for _, f := range []struct {
		n   *int
		def int
	}{{shards, DefaultShards}, {membersPerShard, DefaultMembersPerShard}, {configMembers, DefaultConfigMembers}, {routers, DefaultRouters}} {
		if *f.n <= 0 {
			*f.n = f.def
		}
	}
}
