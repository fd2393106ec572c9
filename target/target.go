// Package target makes an arm's deployment exist for a trial: an embedded
// mongosim replica set, a replica set launched from a mongod binary, or an
// existing deployment attached to by URI. All three sit behind Provision.
package target

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
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
	// Close restores what the trial changed and releases what it started.
	Close(ctx context.Context) error
}

// Options are a trial's target settings.
type Options struct {
	// Dir is the trial's folder (dbpaths and member logs of a local target).
	Dir string
	// AllowRemote permits a uri target outside the loopback range.
	AllowRemote bool
	// RestartDelay is how long the local target waits before restarting a
	// member that died, as an automation agent would (default 5 s).
	RestartDelay time.Duration
	// MemberMemLimitMB caps each member's memory on the local target
	// (cmd/mongosim binaries only: --simMemLimitMB). 0: no cap.
	MemberMemLimitMB int64
	// Sim configures the embedded target's mongosim members (hardware, and
	// how many modelled documents one real document stands for).
	Sim mongosim.SimOptions
	// SimMemLimitMB is the embedded members' memory limit (0: 32 GiB).
	SimMemLimitMB int64
	Logger        *slog.Logger
}

// Provision creates the arm's deployment and applies its parameters.
func Provision(ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch arm.Target {
	case arms.TargetEmbedded, "":
		return provisionEmbedded(ctx, arm, opts)
	case arms.TargetLocal:
		return provisionLocal(ctx, arm, opts)
	case arms.TargetURI:
		return provisionURI(ctx, arm, opts)
	}
	return nil, fmt.Errorf("arm %s: unknown target %q", arm.Name, arm.Target)
}

// CheckLoopback refuses a URI with any host outside the loopback range:
// the storm is designed to exhaust a server's memory.
func CheckLoopback(uri string, allowRemote bool) error {
	hosts, err := uriHosts(uri)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		host, _, err := net.SplitHostPort(h)
		if err != nil {
			host = h
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
			continue
		}
		if !allowRemote {
			return fmt.Errorf("refusing non-loopback target %s: the storm is designed to exhaust a server's memory; pass --allow-remote if that server is yours to break", host)
		}
	}
	return nil
}

func uriHosts(uri string) ([]string, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || (scheme != "mongodb" && scheme != "mongodb+srv") {
		return nil, fmt.Errorf("not a MongoDB connection string (%s)", arms.RedactURI(uri))
	}
	hostPart, _, _ := strings.Cut(rest, "/")
	hostPart, _, _ = strings.Cut(hostPart, "?")
	if at := strings.LastIndex(hostPart, "@"); at >= 0 {
		hostPart = hostPart[at+1:]
	}
	if hostPart == "" {
		return nil, fmt.Errorf("connection string has no host (%s)", arms.RedactURI(uri))
	}
	if _, err := url.Parse("mongodb://" + hostPart); err != nil && !strings.Contains(hostPart, ",") {
		return nil, fmt.Errorf("bad host in connection string (%s)", arms.RedactURI(uri))
	}
	return strings.Split(hostPart, ","), nil
}

// MemberInfo is the startup check's record of one member.
type MemberInfo struct {
	Host       string            `json:"host"`
	Version    string            `json:"version"`
	GitVersion string            `json:"gitVersion"`
	Simulated  bool              `json:"simulated"`
	Parameters map[string]string `json:"parameters"`
}

// startupCheck reads each member's buildInfo and the effective values of
// the arm's parameters, and fails when a build does not know one.
func startupCheck(ctx context.Context, hosts []string, arm arms.Arm) ([]MemberInfo, error) {
	var out []MemberInfo
	for _, h := range hosts {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(10 * time.Second))
		if err != nil {
			return nil, err
		}
		info, err := checkMember(ctx, c, h, arm)
		c.Disconnect(context.Background())
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func checkMember(ctx context.Context, c *mongo.Client, host string, arm arms.Arm) (MemberInfo, error) {
	admin := c.Database("admin")
	bi, err := admin.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if err != nil {
		return MemberInfo{}, fmt.Errorf("member %s: buildInfo: %w", host, err)
	}
	info := MemberInfo{Host: host, Parameters: map[string]string{}}
	info.Version, _ = bi.Lookup("version").StringValueOK()
	info.GitVersion, _ = bi.Lookup("gitVersion").StringValueOK()
	info.Simulated, _ = bi.Lookup("mongosim", "simulated").BooleanOK()
	for name := range arm.SetParameters {
		r, err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
		if err != nil {
			return MemberInfo{}, fmt.Errorf("arm %s needs server parameter %s, which member %s (version %s, %s) does not know: %v",
				arm.Name, name, host, info.Version, info.GitVersion, err)
		}
		info.Parameters[name] = plain(r.Lookup(name))
	}
	return info, nil
}
