//go:build !linux

package target

import "os/exec"

// startMember starts cmd. Outside Linux there is no parent-death signal:
// a member outlives a qmlsab killed outright (SIGKILL); qmlsab's own
// shutdown, on every signal it can catch, stops the members.
func startMember(cmd *exec.Cmd) error { return cmd.Start() }
