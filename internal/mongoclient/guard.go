package mongoclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Guard decides which hosts a client of the deployment under test may
// connect to. The storm is designed to exhaust a server's memory, so
// without AllowRemote (qmlsab run --allow-remote) only the loopback range
// is reachable. Its zero value is that refusal.
//
// As the client's dialer (Client) it checks every connection the Go
// driver opens, after name resolution: the seed hosts, and the members it
// discovers on its own (a replica set's hello.hosts, passives and
// arbiters), which the connection string never names. A host name is
// resolved once and the connection made to the address checked, so a name
// that resolves to a remote address (localhost.example.com) is refused,
// and one that resolves differently a moment later is not dialled by name.
type Guard struct {
	// AllowRemote lets clients connect outside the loopback range.
	AllowRemote bool
	// Lookup resolves a host name (nil: the system's resolver).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// OnRefuse, when set, is told of each connection the dialer refuses
	// (a caller that must fail at once rather than wait out the driver's
	// server selection).
	OnRefuse func(error)
}

// RemoteError is the refusal of a host outside the loopback range.
type RemoteError struct {
	// Host is the host as it was named (host:port).
	Host string
	// Addrs are the addresses its name resolved to (its own, for an IP).
	Addrs []netip.Addr
	// Lookup is why its name could not be resolved, when it could not.
	Lookup error
}

func (e *RemoteError) Error() string {
	var why string
	switch {
	case e.Lookup != nil:
		why = fmt.Sprintf("refusing target %s: its name does not resolve (%v), so it cannot be checked to be loopback", e.Host, e.Lookup)
	case len(e.Addrs) == 1 && e.Addrs[0].String() == hostOf(e.Host):
		why = fmt.Sprintf("refusing non-loopback target %s", e.Host)
	default:
		addrs := make([]string, len(e.Addrs))
		for i, a := range e.Addrs {
			addrs[i] = a.String()
		}
		why = fmt.Sprintf("refusing non-loopback target %s (it resolves to %s)", e.Host, strings.Join(addrs, ", "))
	}
	return why + ": the storm is designed to exhaust a server's memory; pass --allow-remote if that server is yours to break"
}

// hostOf is the host of host:port, [v6]:port, host or [v6].
func hostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isSocketPath reports whether a host is a Unix domain socket's path, as
// a connection string names one (an escaped path ending in .sock): a
// socket is on this machine by construction.
func isSocketPath(host string) bool {
	return strings.HasSuffix(host, ".sock")
}

// Check returns nil when host (host:port, [v6]:port or a bare host) may
// be connected to, and a *RemoteError naming it otherwise.
func (g Guard) Check(ctx context.Context, host string) error {
	if g.AllowRemote {
		return nil
	}
	_, err := g.loopbackAddrs(ctx, host)
	return err
}

// loopbackAddrs resolves host's name and returns its addresses when every
// one is a loopback address, or a *RemoteError.
func (g Guard) loopbackAddrs(ctx context.Context, hostport string) ([]netip.Addr, error) {
	host := hostOf(hostport)
	if isSocketPath(host) {
		return nil, nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := g.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		addrs, err = lookup(ctx, host)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return nil, &RemoteError{Host: hostport, Lookup: err}
		}
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return nil, &RemoteError{Host: hostport, Addrs: addrs}
		}
	}
	return addrs, nil
}

// DialContext connects as net.Dialer does, to a loopback address only
// (unless AllowRemote): a host name is resolved here, every address it
// resolves to must be loopback, and the connection is made to those
// addresses, not to the name. It is the driver's options.ContextDialer.
func (g Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	if g.AllowRemote || network == "unix" {
		return d.DialContext(ctx, network, address)
	}
	addrs, err := g.loopbackAddrs(ctx, address)
	if err != nil {
		if g.OnRefuse != nil {
			g.OnRefuse(err)
		}
		return nil, err
	}
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", address, err)
	}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// Client makes o's client dial through the guard.
func (g Guard) Client(o *options.ClientOptions) *options.ClientOptions {
	return o.SetDialer(g)
}
