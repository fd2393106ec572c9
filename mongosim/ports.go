package mongosim

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// ListenLoopback listens on a free loopback port chosen below the kernel's
// ephemeral range. A port from the ephemeral range can be taken by any
// outgoing connection's source port while a member is down, so a member
// restarted on "its" port could find it occupied; ports below the range are
// only ever taken by listeners.
func ListenLoopback() (net.Listener, error) {
	lo := ephemeralLow()
	base := 10000
	if lo-base < 2000 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var last error
	for range 200 {
		port := base + rand.IntN(lo-base)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no free loopback port below %d: %w", lo, last)
}

func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
