// Package target makes an arm's deployment exist for a trial: an embedded
// mongosim replica set, a replica set launched from a mongod binary, or an
// existing deployment attached to by URI. All three sit behind Provision.
// An arm of topology sharded gets a sharded cluster instead (an embedded
// mongosim one, or one launched from mongod and mongos binaries); a uri
// naming a mongos is one as discovered. Such a deployment implements
// Sharding.
//
// The name is kept although target/ is the build-output folder of Cargo
// and Maven, which global gitignore templates and code-structure tools
// often skip: it is the name of the concept it implements, the arm's
// target (the "target" key of an arms file, Arm.Target, the manifest's
// and report's target column), so a package called otherwise would give
// one concept two names in the code, and renaming the concept would change
// the arms file format. The repository ignores no target/ folder (its
// .gitignore is explicit), and the Makefile's package lists and the
// layering tests name the package by its path, so nothing here skips it;
// a checkout whose global gitignore has "target/" needs
// `git check-ignore -v target/target.go` to come back empty.
package target

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/mongosim"
)

// Deployment is a provisioned target.
type Deployment interface {
	// URI connects to the whole deployment. It may carry credentials:
	// never print or store it; use Describe.
	URI() string
	// Members are the data-bearing members' host:port, each reachable with
	// a direct connection (for sampling).
	Members() []string
	// Describe is the deployment for logs and results (no secrets).
	Describe() string
	// Simulated reports whether the numbers come from mongosim's model.
	Simulated() bool
	// Startup is the startup check's record of each member: its build and
	// the effective values of the arm's parameters (for trial metadata).
	Startup() []MemberInfo
	// Capabilities is the provisioning probe: what the collectors and the
	// arm's actors will measure on this deployment, and what is absent.
	Capabilities() Capabilities
	// Close restores what the trial changed and releases what it started.
	Close(ctx context.Context) error
}

// FieldMemberMemLimitMB is Options.MemberMemLimitMB, as an error names it
// (internal/field).
const FieldMemberMemLimitMB = "Options.MemberMemLimitMB"

// Options are a trial's target settings.
type Options struct {
	// Dir is the trial's folder (dbpaths and member logs of a local target).
	Dir string
	// AllowRemote permits a uri target outside the loopback range: its
	// seed hosts and every member and shard discovery finds. Without it
	// each is refused, and so is every connection the driver would open
	// to one (mongoclient.Guard).
	AllowRemote bool
	// RestartDelay is how long the local target waits before restarting a
	// member that died, as an automation agent would (default 5 s).
	RestartDelay time.Duration
	// MemberMemLimitMB (FieldMemberMemLimitMB in errors) caps each
	// member's memory on the local target
	// (cmd/mongosim binaries only: --simMemLimitMB). 0: no cap.
	MemberMemLimitMB int64
	// Sim configures the embedded target's mongosim members (hardware, and
	// how many modelled documents one real document stands for).
	Sim mongosim.SimOptions
	// SimMemLimitMB is the embedded members' memory limit (0: 32 GiB).
	SimMemLimitMB int64
	// Deadline bounds provisioning's waits on the server (starting or
	// attaching, the startup check, the probe); 0: only ctx bounds them.
	// It does not bound the deployment's life.
	Deadline time.Duration
	Logger   *slog.Logger
}

// Provision creates the arm's deployment and applies its parameters.
func Provision(ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	wait := ctx
	if opts.Deadline > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, opts.Deadline)
		defer cancel()
	}
	switch arm.Target {
	case arms.TargetEmbedded, "":
		if arm.IsSharded() {
			return provisionEmbeddedSharded(wait, arm, opts)
		}
		return provisionEmbedded(wait, arm, opts)
	case arms.TargetLocal:
		if arm.IsSharded() {
			return provisionLocalSharded(ctx, wait, arm, opts)
		}
		return provisionLocal(ctx, wait, arm, opts)
	case arms.TargetURI:
		return provisionURI(wait, arm, opts)
	}
	return nil, fmt.Errorf("arm %s: unknown target %q", arm.Name, arm.Target)
}

// loopbackOnly is the guard of the clients to a deployment qmlsab
// started (embedded, local): its processes listen on loopback only, and
// so does every host their clients may reach.
var loopbackOnly = mongoclient.Guard{}

// directClient connects to one member alone (a startup check, a
// parameter to set or restore): a short-lived client whose connections
// pass the guard.
func directClient(guard mongoclient.Guard, host string, selection time.Duration) (*mongo.Client, error) {
	return mongo.Connect(guard.Client(mongoclient.ShortLived(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").SetServerSelectionTimeout(selection))))
}

// MemberInfo is the startup check's record of one member.
type MemberInfo struct {
	Host string `json:"host"`
	// Version is buildInfo.version: the MongoDB release the server
	// answers as (another implementation reports the one it imitates).
	Version    string `json:"version"`
	GitVersion string `json:"gitVersion"`
	// Implementation is what the server is, from buildInfo: "mongod",
	// "FerretDB <its version>" (buildInfo.ferretdbVersion), or "mongosim
	// (simulated)" (buildInfo.mongosim.simulated).
	Implementation string `json:"implementation"`
	// Topology is the deployment the member is part of: "standalone",
	// "replica set <name>", or "mongos" (a shard member behind one).
	Topology   string            `json:"topology"`
	Simulated  bool              `json:"simulated"`
	Parameters map[string]string `json:"parameters"`
}

// Server names the implementation and the version it answers as, for a
// reader ("mongod 8.0.4", "FerretDB 1.24.2 (reports version 7.0.42)").
func (m MemberInfo) Server() string {
	version := m.Version
	if version == "" {
		version = "version not reported"
	}
	if m.Implementation == "mongod" || m.Implementation == "" {
		return "mongod " + version
	}
	return m.Implementation + " (reports version " + version + ")"
}

// implementation reads what the server is from its buildInfo reply.
func implementation(buildInfo bson.Raw) string {
	if v, ok := buildInfo.Lookup("ferretdbVersion").StringValueOK(); ok {
		return "FerretDB " + strings.TrimPrefix(v, "v")
	}
	if sim, _ := buildInfo.Lookup("mongosim", "simulated").BooleanOK(); sim {
		return "mongosim (simulated)"
	}
	return "mongod"
}

// topologyOf reads the member's own deployment from its hello reply.
func topologyOf(hello bson.Raw) string {
	if msg, _ := hello.Lookup("msg").StringValueOK(); msg == "isdbgrid" {
		return "mongos"
	}
	if name, ok := hello.Lookup("setName").StringValueOK(); ok && name != "" {
		return "replica set " + name
	}
	return "standalone"
}

// startupCheck reads each member's buildInfo and the effective values of
// the arm's parameters, and fails when a build does not know one.
func startupCheck(ctx context.Context, guard mongoclient.Guard, hosts []string, arm arms.Arm) ([]MemberInfo, error) {
	var out []MemberInfo
	for _, h := range hosts {
		c, err := directClient(guard, h, 10*time.Second)
		if err != nil {
			return nil, err
		}
		info, err := checkMember(ctx, c, h, arm)
		mongoclient.Disconnect(c)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// probe asks every member for what the collectors and the arm's actors
// read, once the arm's parameters are in force (a section such as
// queryMemory.loadShedding may appear only with them), and refuses an arm
// whose killOp actor needs what the server lacks.
func probe(ctx context.Context, guard mongoclient.Guard, members []MemberInfo, arm arms.Arm) (Capabilities, error) {
	var caps Capabilities
	for _, m := range members {
		c, err := directClient(guard, m.Host, 10*time.Second)
		if err != nil {
			return Capabilities{}, err
		}
		got, err := probeMember(ctx, c, m.Host, m.Topology != "standalone", arm)
		mongoclient.Disconnect(c)
		if err != nil {
			return Capabilities{}, err
		}
		if len(members) > 1 {
			got = got.from(m.Host)
		}
		caps = caps.merge(got)
	}
	for _, name := range slices.Sorted(maps.Keys(arm.SetParameters)) {
		caps.Needs = append(caps.Needs, Need{Name: "getParameter " + name, Detail: "= " + members[0].Parameters[name]})
	}
	if len(members) > 0 {
		if err := refuseActor(arm, members[0].Server(), caps); err != nil {
			return Capabilities{}, err
		}
	}
	return caps, nil
}

func checkMember(ctx context.Context, c *mongo.Client, host string, arm arms.Arm) (MemberInfo, error) {
	admin := c.Database("admin")
	bi, err := admin.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if err != nil {
		return MemberInfo{}, fmt.Errorf("member %s: buildInfo: %w", host, err)
	}
	hello, err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		return MemberInfo{}, fmt.Errorf("member %s: hello: %w", host, err)
	}
	info := MemberInfo{Host: host, Parameters: map[string]string{}, Implementation: implementation(bi), Topology: topologyOf(hello)}
	info.Version, _ = bi.Lookup("version").StringValueOK()
	info.GitVersion, _ = bi.Lookup("gitVersion").StringValueOK()
	info.Simulated, _ = bi.Lookup("mongosim", "simulated").BooleanOK()
	for name := range arm.SetParameters {
		r, err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
		if err != nil {
			return MemberInfo{}, fmt.Errorf("arm %s needs server parameter %s, which member %s (%s, %s) does not know: %v",
				arm.Name, name, host, info.Server(), info.GitVersion, err)
		}
		info.Parameters[name] = plain(r.Lookup(name))
	}
	return info, nil
}
