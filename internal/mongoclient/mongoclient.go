// Package mongoclient holds the Go driver settings qmlsab's clients share:
// which hosts they may reach (Guard), and how a short-lived client
// monitors its server (ShortLived).
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

import "go.mongodb.org/mongo-driver/v2/mongo/options"

// ShortLived sets o up for a client that disconnects soon after it
// connects: the server monitor polls (a plain hello each check) instead of
// streaming awaitable hellos, so Disconnect never waits out a held hello.
func ShortLived(o *options.ClientOptions) *options.ClientOptions {
	return o.SetServerMonitoringMode(options.ServerMonitoringModePoll)
}
