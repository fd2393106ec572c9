// Package mongoclient holds the Go driver settings qmlsab's clients share.
//
// A client the harness opens for a moment (connect, a command or two,
// disconnect: arming a failpoint, reading a shed counter, a startup check)
// must not use the driver's streaming server monitor. With it, the
// monitor's second check is an awaitable hello that the server holds for
// maxAwaitTimeMS (the heartbeat frequency, 10 s by default), and a
// Disconnect that lands as that check begins is not seen by it: Disconnect
// then waits for the server's reply, a 10 s stall with nothing wrong on
// either side. The polling monitor's check is a plain hello answered at
// once, and between checks it waits on a timer Disconnect interrupts.
package mongoclient

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// ShortLived sets o up for a client that disconnects soon after it
// connects: the server monitor polls (a plain hello each check) instead of
// streaming awaitable hellos, so Disconnect never waits out a held hello.
func ShortLived(o *options.ClientOptions) *options.ClientOptions {
	return o.SetServerMonitoringMode(options.ServerMonitoringModePoll)
}

// ServerSelectionTimeout is how long a short-lived client waits for a
// server it can use when its URI does not say: long enough for a server
// on another machine to answer, short enough that a wrong address is
// reported within seconds (the driver's default is 30 s).
const ServerSelectionTimeout = 5 * time.Second

// Unreachable says, in one line, that no server of a deployment could be
// used, naming each server the driver knew and why it was not reached
// (connection refused, no such host, a timeout). It stands for the
// driver's server selection error, whose text is the topology's internal
// description, and wraps it (errors.Is sees the deadline). Other errors
// are returned as they are.
func Unreachable(err error) error {
	var sel topology.ServerSelectionError
	if !errors.As(err, &sel) {
		return err
	}
	var servers []string
	for _, s := range sel.Desc.Servers {
		why := "no answer"
		if s.LastError != nil {
			why = strings.Join(strings.Fields(s.LastError.Error()), " ")
		}
		servers = append(servers, fmt.Sprintf("%s (%s)", s.Addr, why))
	}
	return &unreachableError{servers: servers, err: err}
}

type unreachableError struct {
	servers []string
	err     error
}

func (e *unreachableError) Error() string {
	if len(e.servers) == 0 {
		return "no server reachable"
	}
	return "no server reachable: " + strings.Join(e.servers, ", ")
}

func (e *unreachableError) Unwrap() error { return e.err }
