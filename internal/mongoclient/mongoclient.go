// Package mongoclient holds the Go driver settings qmlsab's clients share:
// which hosts they may reach (Guard), how a short-lived client monitors
// its server (ShortLived), and how a client is closed within a bound
// (Disconnect).
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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// ShortLived sets o up for a client that disconnects soon after it
// connects: the server monitor polls (a plain hello each check) instead of
// streaming awaitable hellos, so Disconnect never waits out a held hello.
func ShortLived(o *options.ClientOptions) *options.ClientOptions {
	return o.SetServerMonitoringMode(options.ServerMonitoringModePoll)
}

// DisconnectTimeout bounds Disconnect, and a Cleanup context.
const DisconnectTimeout = 3 * time.Second

// Cleanup is the context of a command that tidies up after the work (a
// cursor's killCursors): not the work's context, which may be over
// already (a signal), nor context.Background, with which a command sent
// to a member that hangs waits forever (no deadline, no socket timeout),
// but DisconnectTimeout from now.
func Cleanup() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), DisconnectTimeout)
}

// Disconnect closes c within DisconnectTimeout, whatever its servers do.
// The driver's Disconnect first ends the client's sessions with a command
// that selects a server, and without a deadline that selection waits the
// client's whole serverSelectionTimeout when no member answers (a local
// target's members already stopped, a member hung): minutes at a
// workload's setting, between a signal and the exit. Ending sessions is a
// courtesy (the server expires them itself), so a short deadline loses
// nothing; the connections are closed either way.
func Disconnect(c *mongo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), DisconnectTimeout)
	defer cancel()
	return c.Disconnect(ctx)
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
