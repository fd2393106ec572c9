package target

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

// freePort is a loopback port nothing listens on (at the time of asking).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// need finds a row of the provisioning table.
func need(t *testing.T, c Capabilities, name string) Need {
	t.Helper()
	for _, n := range c.Needs {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("the provisioning table has no %q row:\n%s", name, c.Table())
	return Need{}
}

// A standalone (cmd/mongosim without --replSet, whose hello has neither
// hosts nor me, as a real standalone mongod's has not) attaches by URI as a
// one-member deployment at the URI's host: its implementation, version and
// topology are recorded, and replSetGetStatus is absent for the reason.
func TestURITargetAttachesAStandaloneMongosimBinary(t *testing.T) {
	port := freePort(t)
	cmd := exec.Command(mongosimBin, "--port", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	host := fmt.Sprintf("127.0.0.1:%d", port)
	f, _ := arms.Lookup("F")
	f.Target, f.URI = arms.TargetURI, "mongodb://"+host+"/?directConnection=true"
	var d Deployment
	var err error
	for { // the binary may still be starting
		if d, err = Provision(ctx, f, Options{}); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("attaching a standalone: %v", err)
	}
	defer d.Close(ctx)
	if got := d.Members(); len(got) != 1 || got[0] != host {
		t.Fatalf("members %v, want the URI's host %s", got, host)
	}
	st := d.Startup()
	if len(st) != 1 || st[0].Implementation != "mongosim (simulated)" || st[0].Topology != "standalone" || st[0].Version == "" {
		t.Fatalf("startup record %+v: want mongosim (simulated), standalone, with a version", st)
	}
	if s := st[0].Server(); !strings.HasPrefix(s, "mongosim (simulated) (reports version ") || !strings.Contains(s, st[0].Version) {
		t.Errorf("server line %q", s)
	}
	caps := d.Capabilities()
	if n := need(t, caps, "replSetGetStatus"); n.Absent != "standalone: no replication" {
		t.Errorf("replSetGetStatus on a standalone: %+v", n)
	}
	for _, name := range []string{"serverStatus mem", "serverStatus queryMemory", "serverStatus queues", "aggregate $currentOp"} {
		if n := need(t, caps, name); n.Absent != "" {
			t.Errorf("%s absent on mongosim: %s", name, n.Absent)
		}
	}
	// The arm's parameters applied to the one member, as on a set.
	c, _ := mongo.Connect(options.Client().ApplyURI(f.URI))
	defer c.Disconnect(ctx)
	r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "queryMemoryLoadSheddingLowMarkPercent", Value: 1}}).Raw()
	if err != nil || r.Lookup("queryMemoryLoadSheddingLowMarkPercent").AsFloat64() != 30 {
		t.Fatalf("low mark on the standalone %v (%v), want the arm's 30", r, err)
	}
	if !strings.Contains(caps.Table(), "absent: standalone: no replication") {
		t.Errorf("table:\n%s", caps.Table())
	}
}

// A server without serverStatus sections the collectors read lists them
// absent (not zero) and still attaches; one without what the killOp
// actor reads refuses an arm with that actor, naming the arm, the server
// and the missing thing.
func TestProvisioningProbeListsAbsentSectionsAndRefusesTheKillOpActor(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{Sim: mongosim.SimOptions{
		OmitStatusSections: []string{"queues", "queryMemory"}, OmitHostInfo: []string{"memLimitMB", "memSizeMB"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	uri := "mongodb://" + s.Addr() + "/?directConnection=true"
	a, _ := arms.Lookup("A")
	a.Target, a.URI = arms.TargetURI, uri
	d, err := Provision(ctx, a, Options{})
	if err != nil {
		t.Fatalf("arm A (no actor) on a server missing sections: %v", err)
	}
	caps := d.Capabilities()
	_ = d.Close(ctx)
	for _, name := range []string{"serverStatus queues", "serverStatus queryMemory"} {
		if n := need(t, caps, name); !strings.Contains(n.Absent, "the reply has no ") {
			t.Errorf("%s: %+v, want absent", name, n)
		}
	}
	if n := need(t, caps, "serverStatus mem"); n.Absent != "" {
		t.Errorf("mem is reported: %+v", n)
	}
	dArm, _ := arms.Lookup("D")
	dArm.Target, dArm.URI = arms.TargetURI, uri
	_, err = Provision(ctx, dArm, Options{})
	if err == nil {
		t.Fatal("arm D's killOp actor accepted on a server whose hostInfo has no memory limit")
	}
	for _, want := range []string{"arm D", "mongosim (simulated)", "memLimitMB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
}

// What the server is comes from buildInfo.
func TestImplementationFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		doc  bson.D
		want string
	}{
		{bson.D{{Key: "version", Value: "8.0.4"}}, "mongod"},
		{bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "v1.24.2"}}, "FerretDB 1.24.2"},
		{bson.D{{Key: "version", Value: "8.0.0"}, {Key: "mongosim", Value: bson.D{{Key: "simulated", Value: true}}}}, "mongosim (simulated)"},
	} {
		raw, _ := bson.Marshal(tc.doc)
		if got := implementation(raw); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.doc, got, tc.want)
		}
	}
	m := MemberInfo{Version: "7.0.42", Implementation: "FerretDB 1.24.2"}
	if got := m.Server(); got != "FerretDB 1.24.2 (reports version 7.0.42)" {
		t.Errorf("server line %q", got)
	}
	if got := (MemberInfo{Version: "8.0.4", Implementation: "mongod"}).Server(); got != "mongod 8.0.4" {
		t.Errorf("server line %q", got)
	}
}
