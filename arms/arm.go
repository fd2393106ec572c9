package arms

import (
	"strings"

	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/clustersize"
	"github.com/qmlsab/qmlsab/internal/mongouri"
)

// Target kinds: how an arm's deployment comes to exist.
const (
	TargetEmbedded = "embedded" // an in-process mongosim replica set
	TargetLocal    = "local"    // a replica set launched from a mongod binary
	TargetURI      = "uri"      // an existing deployment, attached to
)

// Topologies: the shape of an arm's deployment.
const (
	TopologyReplicaSet = "replset" // one replica set (the default)
	TopologySharded    = "sharded" // config server, shards and routers (mongos)
)

// Sharded is a sharded cluster's size: on the embedded target and on a
// local one, which launches Mongos (the router binary; cmd/mongosim under
// a name starting with "mongos" will do) beside the arm's mongod. A uri
// target naming a mongos is sharded as discovered and needs none of it.
// The sizes left zero are clustersize's defaults, the simulator's too.
type Sharded struct {
	Shards          int    // shard replica sets, ≥ 1 (default 2)
	MembersPerShard int    // members of each shard set (default 1)
	ConfigMembers   int    // config server set members (default 1)
	Routers         int    // routers (default 1)
	Mongos          string // the router binary (target local)
}

// WithDefaults fills the sizes left zero (clustersize.FillDefaults).
func (s Sharded) WithDefaults() Sharded {
	clustersize.FillDefaults(&s.Shards, &s.MembersPerShard, &s.ConfigMembers, &s.Routers)
	return s
}

// Arm is one configuration under test.
type Arm struct {
	Name        string
	Description string
	Build       string
	Target      string
	Mongod      string // for TargetLocal
	URI         string // for TargetURI
	// Topology is TopologyReplicaSet ("" too) or TopologySharded; Sharded
	// sizes a sharded cluster the target starts.
	Topology      string
	Sharded       Sharded
	SetParameters map[string]string
	Actors        []Actor
}

// Actor is a client-side actor running beside the workload; exactly one
// field is set.
type Actor struct {
	KillOp *killop.Config
	Exec   *ExecActor
}

// ExecActor starts an external program (a real mongotune, say) with the
// deployment's URI in its environment (QMLSAB_URI) and stops it at the end.
type ExecActor struct {
	Command []string
	Env     map[string]string
}

// Embedded reports whether the arm runs on an in-process mongosim set (the
// default target).
func (a Arm) Embedded() bool { return a.Target == TargetEmbedded || a.Target == "" }

// IsSharded reports whether the arm runs on a sharded cluster.
func (a Arm) IsSharded() bool { return a.Topology == TopologySharded }

// KillOp returns the arm's killOp actor, if it has one.
func (a Arm) KillOp() *killop.Config {
	for _, act := range a.Actors {
		if act.KillOp != nil {
			return act.KillOp
		}
	}
	return nil
}

// Redacted returns the arm with credentials removed from its URI, as it
// may be printed or stored.
func (a Arm) Redacted() Arm {
	a.URI = RedactURI(a.URI)
	return a
}

// unparseableURI stands for an arm's uri that is no URI at all, redacted
// whole.
const unparseableURI = "<unparseable URI redacted>"

// RedactURI returns an arm's connection string as it may be printed or
// stored: its password and secret options replaced by "<redacted>"
// (mongouri.Redact). An arm's uri is always meant as a URI, so text that
// is not one at all is hidden whole.
func RedactURI(uri string) string {
	if uri == "" {
		return ""
	}
	if !mongouri.HasScheme(uri) && !strings.Contains(uri, "://") {
		return unparseableURI
	}
	return mongouri.Redact(uri)
}
