package target

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/mongosim/model"
)

// uriTarget attaches to an existing deployment: it never starts or kills a
// server process. It applies the arm's runtime-settable parameters with
// setParameter on every data-bearing member and restores the previous
// values on Close.
type uriTarget struct {
	uri       string
	members   []string
	shardOf   map[string]string // through a mongos: member -> shard id
	routers   []string          // through a mongos: the hosts the URI names
	simulated bool
	previous  map[string]map[string]bson.RawValue // host -> parameter -> value before
	startup   []MemberInfo
	caps      Capabilities
	logger    interface{ Info(string, ...any) }
	guard     mongoclient.Guard // every connection to a member passes it
}

func provisionURI(ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	guard := mongoclient.Guard{AllowRemote: opts.AllowRemote}
	if err := checkSeeds(ctx, arm.URI, guard); err != nil {
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	// The driver connects on its own to the members a replica set's hello
	// names: each connection it opens passes the guard, and the first it
	// refuses ends discovery at once, naming the host (rather than after
	// the server selection timeout).
	dctx, refused := context.WithCancelCause(ctx)
	defer refused(nil)
	watched := guard
	watched.OnRefuse = func(err error) { refused(fmt.Errorf("a host the driver discovered: %w", err)) }
	c, err := mongo.Connect(watched.Client(options.Client().ApplyURI(arm.URI).SetServerSelectionTimeout(15 * time.Second)))
	if err != nil {
		return nil, fmt.Errorf("arm %s: connecting to %s: %w", arm.Name, arms.RedactURI(arm.URI), mongouri.RedactError(err, arm.URI))
	}
	defer mongoclient.Disconnect(c)
	members, topology, shardOf, err := discoverMembers(dctx, c, arm.URI, guard)
	if cause := context.Cause(dctx); cause != nil && ctx.Err() == nil {
		err = cause // refused by the guard, whatever discovery made of it
	}
	if err != nil {
		return nil, fmt.Errorf("arm %s: discovering the members of %s: %w", arm.Name, arms.RedactURI(arm.URI), mongouri.RedactError(err, arm.URI))
	}
	if arm.IsSharded() && topology != "mongos" {
		return nil, fmt.Errorf("arm %s: topology sharded, but %s is a %s, not a mongos", arm.Name, arms.RedactURI(arm.URI), topology)
	}
	u := &uriTarget{uri: arm.URI, members: members, shardOf: shardOf, previous: map[string]map[string]bson.RawValue{}, logger: opts.Logger, guard: guard}
	if topology == "mongos" {
		if u.routers, err = mongouri.Hosts(arm.URI); err != nil {
			return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
		}
	}
	info, err := startupCheck(ctx, guard, members, arm)
	if err != nil {
		return nil, err
	}
	u.startup = info
	for i := range u.startup {
		u.startup[i].Topology = topology // the deployment's, as discovery saw it (mongos: not the shard's)
		u.simulated = u.simulated || u.startup[i].Simulated
	}
	if err := u.apply(ctx, arm.SetParameters); err != nil {
		_ = u.Close(context.Background())
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	if u.caps, err = probe(ctx, guard, u.startup, arm); err != nil {
		_ = u.Close(context.Background())
		return nil, err
	}
	return u, nil
}

// checkSeeds refuses a connection string that names a host outside the
// loopback range (after resolving its name), unless the guard allows
// remote hosts.
func checkSeeds(ctx context.Context, uri string, guard mongoclient.Guard) error {
	hosts, err := mongouri.Hosts(uri)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		if err := guard.Check(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// discoverMembers lists a replica set's members, or through mongos every
// shard's members (listShards), or a standalone's one host; topology says
// which ("replica set <name>", "mongos", "standalone"), and through mongos
// shardOf maps each member to its shard's id. A standalone is a
// one-member deployment of its own, sampled at the host the URI names (a
// standalone's hello has neither hosts nor me). Every host discovery
// finds, whether qmlsab samples it or not (a replica set's passives and
// arbiters, which the driver connects to, a shard's members), must pass
// the guard: qmlsab connects to each of them directly.
func discoverMembers(ctx context.Context, c *mongo.Client, uri string, guard mongoclient.Guard) (members []string, topology string, shardOf map[string]string, err error) {
	// Any member's hello lists the set: a secondary seed answers while
	// the primary is one the guard refused.
	hello, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}, options.RunCmd().SetReadPreference(readpref.Nearest())).Raw()
	if err != nil {
		return nil, "", nil, fmt.Errorf("hello: %w", err)
	}
	if msg, _ := hello.Lookup("msg").StringValueOK(); msg == "isdbgrid" {
		r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Raw()
		if err != nil {
			return nil, "", nil, fmt.Errorf("listShards: %w", err)
		}
		arr, _ := r.Lookup("shards").ArrayOK()
		vals, _ := arr.Values()
		var out []string
		shardOf = map[string]string{}
		for _, v := range vals {
			id, _ := v.Document().Lookup("_id").StringValueOK()
			host, _ := v.Document().Lookup("host").StringValueOK() // "rs0/h1:1,h2:2"
			hosts := []string{host}
			if _, list, ok := cutSlash(host); ok {
				hosts = splitComma(list)
			}
			for _, h := range hosts {
				if err := guard.Check(ctx, h); err != nil {
					return nil, "", nil, fmt.Errorf("shard %s member %s (listShards through the mongos): %w", id, h, err)
				}
				out = append(out, h)
				shardOf[h] = id
			}
		}
		if len(out) == 0 {
			return nil, "", nil, fmt.Errorf("listShards: the mongos has no shards")
		}
		return out, "mongos", shardOf, nil
	}
	for _, field := range []string{"hosts", "passives", "arbiters", "primary", "me"} {
		v := hello.Lookup(field)
		var named []string
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, h := range vals {
				named = append(named, h.StringValue())
			}
		} else if h, ok := v.StringValueOK(); ok {
			named = append(named, h)
		}
		for _, h := range named {
			if err := guard.Check(ctx, h); err != nil {
				return nil, "", nil, fmt.Errorf("member %s (hello.%s): %w", h, field, err)
			}
		}
	}
	if arr, ok := hello.Lookup("hosts").ArrayOK(); ok {
		vals, _ := arr.Values()
		var out []string
		for _, v := range vals {
			out = append(out, v.StringValue())
		}
		name, _ := hello.Lookup("setName").StringValueOK()
		return out, "replica set " + name, nil, nil
	}
	if me, _ := hello.Lookup("me").StringValueOK(); me != "" {
		return []string{me}, topologyOf(hello), nil, nil
	}
	hosts, err := mongouri.Hosts(uri)
	if err != nil {
		return nil, "", nil, err
	}
	if len(hosts) != 1 {
		return nil, "", nil, fmt.Errorf("a standalone answered, but the connection string names %d hosts: name the standalone's one host", len(hosts))
	}
	if strings.HasPrefix(uri, "mongodb+srv://") {
		return nil, "", nil, fmt.Errorf("a standalone answered through a mongodb+srv connection string: name its host:port with mongodb:// and directConnection=true")
	}
	host := hosts[0]
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "27017")
	}
	return []string{host}, "standalone", nil, nil
}

func cutSlash(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// apply sets the arm's parameters on each member, remembering the old
// values for Close.
func (u *uriTarget) apply(ctx context.Context, params map[string]string) error {
	for _, h := range u.members {
		c, err := u.direct(h)
		if err != nil {
			return err
		}
		admin := c.Database("admin")
		u.previous[h] = map[string]bson.RawValue{}
		var set []setting
		for _, name := range slices.Sorted(maps.Keys(params)) {
			value := params[name]
			r, err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
			if err != nil {
				mongoclient.Disconnect(c)
				return fmt.Errorf("member %s: getParameter %s: %w", h, name, err)
			}
			old := r.Lookup(name)
			if spec, ok := model.LookupParam(name); ok && !spec.Runtime {
				// A startup parameter (throughputProbingInitialConcurrency,
				// say) cannot change on a server that is running: its own
				// start decided it, and setParameter would refuse it.
				u.logger.Info("startup parameter not applied to an attached server", "member", h, "parameter", name, "arm", value, "server", old.String())
				continue
			}
			u.previous[h][name] = old
			set = append(set, setting{name: name, value: typedLike(old, value), text: value})
		}
		err = setParameters(ctx, admin, set)
		mongoclient.Disconnect(c)
		if err != nil {
			return fmt.Errorf("member %s: %w", h, err)
		}
	}
	return nil
}

// setting is one parameter's value for setParameter, and its text for
// messages.
type setting struct {
	name  string
	value any
	text  string
}

// setParameters sets each parameter with a setParameter of its own. A
// server checks each value against the values it holds at that moment
// (mongod's validators compare throughputProbingMaxConcurrency with the
// current minimum, and the minimum with the current maximum), so a set
// that is consistent only as a whole, {max: 2, min: 1} over the defaults
// 4 and 128, is refused in one order and accepted in the other. The set
// means the values it leaves, as startup parameters and the virtual clock
// read it (model.ParamsFrom): setParameters tries the settings in their
// order, then again the ones refused, while a pass sets at least one; a
// value refused in every order is reported with the server's refusal.
func setParameters(ctx context.Context, admin *mongo.Database, set []setting) error {
	for len(set) > 0 {
		var refused []setting
		var firstErr error
		for _, s := range set {
			if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: s.name, Value: s.value}}).Err(); err != nil {
				if ce := (mongo.CommandError{}); !errors.As(err, &ce) {
					return fmt.Errorf("setParameter %s=%s: %w", s.name, s.text, err) // not a refusal: the member did not answer
				}
				refused = append(refused, s)
				if firstErr == nil {
					firstErr = fmt.Errorf("setParameter %s=%s: %w", s.name, s.text, err)
				}
			}
		}
		if len(refused) == len(set) {
			return firstErr
		}
		set = refused
	}
	return nil
}

func (u *uriTarget) direct(host string) (*mongo.Client, error) {
	return directClient(u.guard, host, 10*time.Second)
}

func (u *uriTarget) URI() string                { return u.uri }
func (u *uriTarget) Members() []string          { return u.members }
func (u *uriTarget) Simulated() bool            { return u.simulated }
func (u *uriTarget) Startup() []MemberInfo      { return u.startup }
func (u *uriTarget) Capabilities() Capabilities { return u.caps }
func (u *uriTarget) ShardOf() map[string]string { return u.shardOf }
func (u *uriTarget) Routers() []string          { return u.routers }
func (u *uriTarget) Describe() string {
	kind := "existing deployment"
	if u.simulated {
		kind += " (SIMULATED: mongosim)"
	}
	return kind + " " + arms.RedactURI(u.uri)
}

// Close restores every parameter it changed, on every member it could
// reach; it reports the first failure but tries them all.
func (u *uriTarget) Close(ctx context.Context) error {
	var first error
	for h, params := range u.previous {
		c, err := u.direct(h)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		var set []setting
		for _, name := range slices.Sorted(maps.Keys(params)) {
			set = append(set, setting{name: name, value: params[name], text: params[name].String()})
		}
		if err := setParameters(ctx, c.Database("admin"), set); err != nil && first == nil {
			first = fmt.Errorf("member %s: restoring: %w", h, err)
		}
		mongoclient.Disconnect(c)
		delete(u.previous, h)
	}
	return first
}
