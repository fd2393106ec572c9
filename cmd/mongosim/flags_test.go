package main_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// A flag value the member would have replaced by a default or acted on
// wrongly is refused before it starts, naming the flag, with mongod's
// exit status for a bad option (2). (--simCPUs 0 and --simScanScale -1
// became the defaults; --simCPUs -4 and --simRestartDelay -1s were used.)
func TestBadFlagValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "--port 70000: must be between 0 and 65535"},
		{[]string{"--port", "-1"}, "--port -1: must be between 0 and 65535"},
		{[]string{"--simCPUs", "0"}, "--simCPUs 0: must be at least 1"},
		{[]string{"--simCPUs", "-4"}, "--simCPUs -4: must be at least 1"},
		{[]string{"--maxConns", "0"}, "--maxConns 0: must be at least 1"},
		{[]string{"--simMemLimitMB", "-1"}, "--simMemLimitMB -1: must be at least 1"},
		{[]string{"--simMemLimitMB", "0"}, "--simMemLimitMB 0: must be at least 1"},
		{[]string{"--simBaselineMB", "0"}, "--simBaselineMB 0: must be at least 1"},
		{[]string{"--simPartitionMB", "-20"}, "--simPartitionMB -20: must be at least 1"},
		{[]string{"--simDiskMBps", "0"}, "--simDiskMBps 0: must be a positive number"},
		{[]string{"--simScanScale", "-1"}, "--simScanScale -1: must be a positive number"},
		{[]string{"--simScanScale", "NaN"}, "--simScanScale NaN: must be a positive number"},
		{[]string{"--simDiskMBps", "+Inf"}, "--simDiskMBps +Inf: must be a positive number"},
		{[]string{"--simRestartDelay", "-1s"}, "--simRestartDelay -1s: must not be negative"},
		{[]string{"--simMemLimitMB", "4096", "--simBaselineMB", "8192"}, "--simBaselineMB 8192: must be below --simMemLimitMB 4096"},
	} {
		var stderr bytes.Buffer
		dbpath := filepath.Join(t.TempDir(), "db")
		cmd := exec.Command(binary, append([]string{"--port", "0", "--dbpath", dbpath}, tc.args...)...)
		cmd.Stderr = &stderr
		code := exitWithin(t, cmd, 60*time.Second)
		if code != 2 || !strings.Contains(stderr.String(), "mongosim: "+tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// --maxConns is the member's connection cap: serverStatus counts what is
// left of it.
func TestMaxConnsCapsTheMember(t *testing.T) {
	m := &member{port: freePorts(t, 1)[0], dbpath: filepath.Join(t.TempDir(), "db")}
	m.extra = []string{"--maxConns", "7"}
	m.start(t)
	defer m.kill()
	c := &wire.Client{Addr: m.addr()}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.Call(ctx, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	conns := st.Lookup("connections").Document()
	if cur, avail := conns.Lookup("current").Int32(), conns.Lookup("available").Int32(); cur+avail != 7 {
		t.Errorf("serverStatus.connections %v: current + available = %d, want --maxConns 7", conns, cur+avail)
	}
}
