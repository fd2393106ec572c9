package mongoclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/internal/stormtest/remoteset"
)

// names is a resolver of fixed answers: what a DNS server would say.
func names(m map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		ips, ok := m[host]
		if !ok {
			return nil, fmt.Errorf("lookup %s: no such host", host)
		}
		var out []netip.Addr
		for _, ip := range ips {
			out = append(out, netip.MustParseAddr(ip))
		}
		return out, nil
	}
}

// The guard refuses a host by where its name leads, not by how it reads:
// a name that looks local but resolves outside the loopback range, or to
// a mix of both, is refused, as is one that does not resolve; loopback
// addresses in every spelling pass; --allow-remote lets everything pass.
func TestGuardChecksHostsAfterResolvingThem(t *testing.T) {
	g := Guard{Lookup: names(map[string][]string{
		"localhost":           {"127.0.0.1", "::1"},
		"localhost.evil.com":  {"203.0.113.5"},
		"db.local":            {"127.0.0.2"},
		"split.example":       {"127.0.0.1", "198.51.100.7"},
		"mapped.example":      {"::ffff:127.0.0.1"},
		"mapped-away.example": {"::ffff:198.51.100.7"},
	})}
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1:27017", "127.8.9.10:1", "[::1]:3", "::1", "localhost:2", "localhost", "db.local:27017", "mapped.example:1", "/tmp/mongodb-27017.sock"} {
		if err := g.Check(ctx, host); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	for host, want := range map[string]string{
		"10.0.0.5:27017":           "refusing non-loopback target 10.0.0.5:27017:",
		"[2001:db8::1]:27017":      "refusing non-loopback target [2001:db8::1]:27017:",
		"localhost.evil.com:27017": "localhost.evil.com:27017 (it resolves to 203.0.113.5)",
		"split.example:1":          "split.example:1 (it resolves to 127.0.0.1, 198.51.100.7)",
		"mapped-away.example:1":    "mapped-away.example:1 (it resolves to ::ffff:198.51.100.7)",
		"nowhere.example:27017":    "refusing target nowhere.example:27017: its name does not resolve (lookup nowhere.example: no such host)",
		"[fe80::1%eth0]:27017":     "[fe80::1%eth0]:27017",
		"0.0.0.0:27017":            "0.0.0.0:27017",
		"localhost.evil.com":       "localhost.evil.com (it resolves",
		"192.0.2.2:40001":          "192.0.2.2:40001",
	} {
		err := g.Check(ctx, host)
		var remote *RemoteError
		if !errors.As(err, &remote) {
			t.Errorf("%s: %v, want a refusal", host, err)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allow-remote") || !strings.Contains(err.Error(), "exhaust") {
			t.Errorf("%s: %q, want it to say %q, why, and --allow-remote", host, err, want)
		}
	}
	allowed := Guard{AllowRemote: true, Lookup: g.Lookup}
	for _, host := range []string{"10.0.0.5:27017", "localhost.evil.com:27017", "nowhere.example:1"} {
		if err := allowed.Check(ctx, host); err != nil {
			t.Errorf("--allow-remote given, %s: %v", host, err)
		}
	}
}

// As the driver's dialer, the guard connects to the address it checked
// (a name is dialled by the loopback address it resolved to), refuses a
// name that resolves outside the loopback range without dialling it, and
// tells OnRefuse.
func TestGuardDialsOnlyTheLoopbackAddressItChecked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	var refused []error
	g := Guard{
		Lookup:   names(map[string][]string{"storm.example": {"127.0.0.1"}, "localhost.evil.com": {"203.0.113.5"}}),
		OnRefuse: func(err error) { refused = append(refused, err) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := g.DialContext(ctx, "tcp", net.JoinHostPort("storm.example", port))
	if err != nil {
		t.Fatalf("dialling a name that resolves to loopback: %v", err)
	}
	c.Close()
	select {
	case <-accepted:
	case <-ctx.Done():
		t.Fatal("the loopback listener never saw the connection")
	}
	if len(refused) != 0 {
		t.Fatalf("OnRefuse called for an allowed host: %v", refused)
	}
	_, err = g.DialContext(ctx, "tcp", "localhost.evil.com:"+port)
	var remote *RemoteError
	if !errors.As(err, &remote) || remote.Host != "localhost.evil.com:"+port {
		t.Fatalf("dialling a name that resolves outside loopback: %v, want a refusal naming it", err)
	}
	if len(refused) != 1 || !errors.As(refused[0], &remote) {
		t.Fatalf("OnRefuse got %v, want the one refusal", refused)
	}
}

// A client whose dialer is the guard never connects to a server outside
// the loopback range, however it learns of it: here the server is up and
// answering on this host's non-loopback address, and the client's ping
// fails with the guard's refusal naming it; with --allow-remote the same
// ping succeeds.
func TestGuardedClientRefusesANonLoopbackServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := remoteset.StartRemoteMemberSet(t, ctx, nil)
	uri := "mongodb://" + rs.Remote + "/?directConnection=true"
	for _, g := range []Guard{{}, {AllowRemote: true}} {
		c, err := mongo.Connect(g.Client(options.Client().ApplyURI(uri).SetServerSelectionTimeout(2 * time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
		Disconnect(c)
		switch {
		case g.AllowRemote && err != nil:
			t.Errorf("--allow-remote given: ping %s: %v", rs.Remote, err)
		case !g.AllowRemote && (err == nil || !strings.Contains(err.Error(), "refusing non-loopback target "+rs.Remote)):
			t.Errorf("ping %s through the guard: %v, want the guard's refusal naming it", rs.Remote, err)
		}
	}
}
