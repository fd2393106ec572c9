// Package remoteset starts mongosim sets and clusters with a member or a
// shard on a non-loopback address of this host, for the tests of the
// loopback guard. It is apart from stormtest because it imports mongosim,
// which stormtest's users (ftdc among them) must not.
package remoteset

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

// NonLoopbackIP is an address of one of this host's interfaces outside
// the loopback range: a server listening on it stands for a server on
// another machine that qmlsab must not reach without --allow-remote, yet
// the test can still reach it. A host with no such interface skips the
// test, saying why.
func NonLoopbackIP(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("listing this host's addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this host has no IPv4 address outside the loopback range to stand for a remote server")
	return ""
}

// RemoteMemberSet is a mongosim replica set (rs0) of three members: the
// first two listen on loopback, the third on an address outside it.
type RemoteMemberSet struct {
	Members []*mongosim.Server
	// SeedURI names the loopback members only: the third is found through
	// their hello.hosts, as a member on another machine would be.
	SeedURI string
	// Remote is the third member's host:port, as the set advertises it.
	Remote string
}

// StartRemoteMemberSet starts a RemoteMemberSet with the members' startup
// parameters, initiates it, and waits for its primary; the test's cleanup
// kills it.
func StartRemoteMemberSet(t testing.TB, ctx context.Context, parameters map[string]string) *RemoteMemberSet {
	t.Helper()
	remoteIP := NonLoopbackIP(t)
	rs := &RemoteMemberSet{}
	members := bson.A{}
	for i, ip := range []string{"127.0.0.1", "127.0.0.1", remoteIP} {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := mongosim.Start(mongosim.Options{Listener: ln, ReplSet: "rs0", Parameters: parameters})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Kill)
		rs.Members = append(rs.Members, s)
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: s.Addr()}})
	}
	rs.Remote = rs.Members[2].Addr()
	rs.SeedURI = "mongodb://" + rs.Members[0].Addr() + "," + rs.Members[1].Addr() + "/?replicaSet=rs0"
	initiate(t, ctx, rs.Members[0].Addr(), bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members}})
	waitPrimary(t, ctx, rs.Members)
	return rs
}

// RemoteShardCluster is a mongosim sharded cluster whose router and config
// server listen on loopback and whose one shard (sh0, one member) listens
// on an address outside it: a router reached on loopback that names a
// shard on another machine.
type RemoteShardCluster struct {
	// RouterURI names the router.
	RouterURI string
	// Shard is the shard's one member.
	Shard *mongosim.Server
	// Remote is the shard member's host:port, as listShards names it.
	Remote string
}

// StartRemoteShardCluster starts a RemoteShardCluster, the shard member
// with the startup parameters; the test's cleanup stops it.
func StartRemoteShardCluster(t testing.TB, ctx context.Context, parameters map[string]string) *RemoteShardCluster {
	t.Helper()
	remoteIP := NonLoopbackIP(t)
	cfg, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{Name: "cfg", Members: 1, ClusterRole: mongosim.RoleConfigServer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	ln, err := net.Listen("tcp", net.JoinHostPort(remoteIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	shard, err := mongosim.Start(mongosim.Options{Listener: ln, ReplSet: "sh0", ClusterRole: mongosim.RoleShardServer, Parameters: parameters})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shard.Kill)
	initiate(t, ctx, shard.Addr(), bson.D{{Key: "_id", Value: "sh0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: shard.Addr()}}}}})
	waitPrimary(t, ctx, []*mongosim.Server{shard})
	rt, err := mongosim.StartRouter(mongosim.RouterOptions{ConfigDB: "cfg/" + strings.Join(cfg.Hosts(), ",")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	c := stormtest.Connect(t, "mongodb://"+rt.Addr()+"/", "stormtest-addshard")
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: "sh0/" + shard.Addr()}}).Err(); err != nil {
		t.Fatalf("addShard sh0/%s: %v", shard.Addr(), err)
	}
	return &RemoteShardCluster{RouterURI: "mongodb://" + rt.Addr() + "/", Shard: shard, Remote: shard.Addr()}
}

// initiate runs replSetInitiate with cfg on the member at addr.
func initiate(t testing.TB, ctx context.Context, addr string, cfg bson.D) {
	t.Helper()
	c, err := mongo.Connect(direct(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate on %s: %v", addr, err)
	}
}

// waitPrimary waits until one of the members is primary.
func waitPrimary(t testing.TB, ctx context.Context, members []*mongosim.Server) {
	t.Helper()
	for {
		for _, m := range members {
			if m.IsPrimary() {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Errorf("no primary elected: %w", ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Parameter reads a server parameter from the member at addr over a
// connection of the test's own (not qmlsab's), as its string form.
func Parameter(t testing.TB, ctx context.Context, addr, name string) string {
	t.Helper()
	c, err := mongo.Connect(direct(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
	if err != nil {
		t.Fatalf("getParameter %s on %s: %v", name, addr, err)
	}
	return raw.Lookup(name).String()
}

// direct is a short-lived client's options for the member at addr alone:
// its monitor polls, so Disconnect does not wait out an awaitable hello
// (as internal/mongoclient.ShortLived, which this package cannot import:
// that package's tests import this one).
func direct(addr string) *options.ClientOptions {
	return options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetServerMonitoringMode(options.ServerMonitoringModePoll)
}
