package target

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

var mongosimBin string

func TestMain(m *testing.M) {
	if dir := os.Getenv(provisionerEnv); dir != "" {
		runProvisioner(dir) // re-executed by TestLocalMembersDieWithAKilledQmlsab
		return
	}
	stormtest.MainWithMongosim(m, &mongosimBin)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func localArm() arms.Arm {
	e, _ := arms.Lookup("E")
	e.Target, e.Mongod = arms.TargetLocal, mongosimBin
	return e
}

func TestLocalTargetLaunchesSupervisesAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	d, err := Provision(ctx, localArm(), Options{Dir: dir, RestartDelay: 500 * time.Millisecond, MemberMemLimitMB: 8192})
	if err != nil {
		t.Fatal(err)
	}
	l := d.(*local)
	if !d.Simulated() || !strings.Contains(d.Describe(), "SIMULATED") {
		t.Errorf("a mongosim-backed local target must say it is simulated: %q", d.Describe())
	}
	// The arm's parameters reached every member.
	for _, h := range d.Members() {
		c, _ := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true"))
		r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "queryMemoryLoadSheddingLowMarkPercent", Value: 1}}).Raw()
		c.Disconnect(ctx)
		if err != nil || r.Lookup("queryMemoryLoadSheddingLowMarkPercent").AsFloat64() != 30 {
			t.Fatalf("member %s: low mark %v (%v), want the arm's 30", h, r, err)
		}
	}
	// The startup check recorded each member's build and effective parameters.
	if st := d.Startup(); len(st) != 3 || st[0].Version == "" || st[0].Parameters["queryMemoryLoadSheddingLowMarkPercent"] == "" || !st[0].Simulated {
		t.Errorf("startup record: %+v", st)
	}
	// The per-member memory limit reached the members (hostInfo's memLimitMB).
	c, _ := mongo.Connect(options.Client().ApplyURI("mongodb://" + d.Members()[0] + "/?directConnection=true"))
	hi, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hostInfo", Value: 1}}).Raw()
	c.Disconnect(ctx)
	if err != nil || hi.Lookup("system", "memLimitMB").AsInt64() != 8192 {
		t.Errorf("member memory limit: %v (%v), want 8192", hi, err)
	}
	// Each member's log lands in the trial folder.
	for i := range 3 {
		if st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("member%d", i), "mongod.log")); err != nil || st.Size() == 0 {
			t.Errorf("member %d log: %v", i, err)
		}
	}
	// SIGKILL a member: the supervisor restarts it, logs it, and the set is healthy.
	victim := l.PIDs()[1]
	syscall.Kill(victim, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for len(l.Restarts()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if r := l.Restarts(); len(r) != 1 || r[0].Member != d.Members()[1] {
		t.Fatalf("restarts after SIGKILL: %+v", r)
	}
	if err := l.waitPrimary(ctx, 30*time.Second); err != nil {
		t.Fatalf("set not healthy after the restart: %v", err)
	}
	pids := l.PIDs()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pids, victim) {
		if alive(p) {
			t.Errorf("process %d still alive after Close", p)
		}
	}
}

func TestLocalTargetCancelledLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d, err := Provision(ctx, localArm(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pids := d.(*local).PIDs()
	cancel() // Ctrl-C: the run's context ends without a Close
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		left := 0
		for _, p := range pids {
			if alive(p) {
				left++
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("processes %v still alive 15 s after the context was cancelled", pids)
}

func TestLocalTargetLeavesNoProcessWhenProvisioningFails(t *testing.T) {
	dir := t.TempDir()
	// The members start, then the trial's deadline passes before a primary
	// can be elected (the first election alone takes over 300 ms):
	// provisioning fails and must take its processes with it.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	d, err := Provision(ctx, localArm(), Options{Dir: dir})
	if err == nil {
		d.Close(context.Background())
		t.Fatal("provisioning within 200 ms succeeded; the failure path was not exercised")
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("pgrep", "-f", dir).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := exec.Command("pgrep", "-af", dir).Output()
	t.Fatalf("after a failed provision (%v) processes remain:\n%s", err, out)
}

func TestLocalTargetFailsClearlyOnABadBinary(t *testing.T) {
	a := localArm()
	a.Mongod = "/bin/false"
	dir := t.TempDir()
	_, err := Provision(context.Background(), a, Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "exited at start-up") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("bad binary: %v", err)
	}
	a.Mongod = "/bin/true"
	if _, err := Provision(context.Background(), a, Options{Dir: dir, MemberMemLimitMB: 1024}); err == nil || !strings.Contains(err.Error(), "cgroup") {
		t.Fatalf("memory limit on a non-mongosim binary: %v", err)
	}
	a.Mongod = filepath.Join(dir, "nope")
	if _, err := Provision(context.Background(), a, Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing binary: %v", err)
	}
}

func TestURITargetAppliesAndRestoresParameters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	get := func() map[string]float64 {
		out := map[string]float64{}
		for _, h := range rs.Hosts() {
			c, _ := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true"))
			r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "queryMemoryLoadSheddingLowMarkPercent", Value: 1}}).Raw()
			c.Disconnect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out[h] = r.Lookup("queryMemoryLoadSheddingLowMarkPercent").AsFloat64()
		}
		return out
	}
	before := get()
	f, _ := arms.Lookup("F")
	f.Target, f.URI = arms.TargetURI, rs.URI()
	d, err := Provision(ctx, f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members()) != 3 || !d.Simulated() {
		t.Fatalf("members %v simulated %v", d.Members(), d.Simulated())
	}
	for h, v := range get() {
		if v != 30 {
			t.Fatalf("during the trial member %s has low mark %v, want the arm's 30", h, v)
		}
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for h, v := range get() {
		if v != before[h] {
			t.Fatalf("after the trial member %s has low mark %v, want the previous %v", h, v, before[h])
		}
	}
}

// An attached server checks each setParameter against the values it holds
// at that moment, so {max: 2, min: 1} over the defaults (min 4, max 128)
// is refused when max comes first and accepted when min does. The arm's
// parameters are one set, as on the other targets and the virtual clock:
// the uri target finds an order the server accepts, on every attach (the
// order once followed the map's, a coin toss each time), and restores the
// old values the same way.
func TestURITargetAppliesAParameterSetWhateverItsOrder(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	uri := "mongodb://" + s.Addr() + "/?directConnection=true"
	get := func() (minC, maxC int64) {
		c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerMonitoringMode(options.ServerMonitoringModePoll))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(ctx)
		r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1},
			{Key: "throughputProbingMinConcurrency", Value: 1}, {Key: "throughputProbingMaxConcurrency", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return r.Lookup("throughputProbingMinConcurrency").AsInt64(), r.Lookup("throughputProbingMaxConcurrency").AsInt64()
	}
	a := arms.Arm{Name: "P", Target: arms.TargetURI, URI: uri,
		SetParameters: map[string]string{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "1"}}
	for i := range 12 { // a map's order varies from one range to the next
		d, err := Provision(ctx, a, Options{})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		if minC, maxC := get(); minC != 1 || maxC != 2 {
			t.Fatalf("attach %d: min %d, max %d, want the arm's 1 and 2", i, minC, maxC)
		}
		if err := d.Close(ctx); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if minC, maxC := get(); minC != 4 || maxC != 128 {
			t.Fatalf("after close %d: min %d, max %d, want the defaults 4 and 128 back", i, minC, maxC)
		}
	}
	bad := arms.Arm{Name: "Q", Target: arms.TargetURI, URI: uri,
		SetParameters: map[string]string{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "3"}}
	if _, err := Provision(ctx, bad, Options{}); err == nil || !strings.Contains(err.Error(), "arm Q") || !strings.Contains(err.Error(), "throughputProbing") {
		t.Fatalf("a set no order makes consistent: %v, want a refusal naming the arm and the parameter", err)
	}
	if minC, maxC := get(); minC != 4 || maxC != 128 {
		t.Fatalf("after a refused set: min %d, max %d, want the defaults 4 and 128 kept", minC, maxC)
	}
}

func TestURITargetRefusesRemoteAndUnknownParameters(t *testing.T) {
	a, _ := arms.Lookup("E")
	a.Target, a.URI = arms.TargetURI, "mongodb://admin:hunter2@db.example.com:27017/?replicaSet=rs0"
	_, err := Provision(context.Background(), a, Options{})
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") || !strings.Contains(err.Error(), "exhaust") {
		t.Fatalf("remote target without --allow-remote: %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
	for _, uri := range []string{"mongodb://127.0.0.1:1", "mongodb://localhost:2,[::1]:3/?replicaSet=x"} {
		if err := checkSeeds(context.Background(), uri, mongoclient.Guard{}); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
	}
	if err := checkSeeds(context.Background(), "mongodb://10.0.0.5:27017", mongoclient.Guard{AllowRemote: true}); err != nil {
		t.Errorf("--allow-remote given: %v", err)
	}
	// A build that does not know a parameter the arm needs fails the trial.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	b := arms.Arm{Name: "X", Target: arms.TargetURI, URI: rs.URI(), SetParameters: map[string]string{"queryMemoryFancyNewKnob": "1"}}
	_, err = Provision(ctx, b, Options{})
	if err == nil || !strings.Contains(err.Error(), "queryMemoryFancyNewKnob") || !strings.Contains(err.Error(), "does not know") {
		t.Fatalf("unknown parameter: %v", err)
	}
}

func TestEmbeddedTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, _ := arms.Lookup("G")
	d, err := Provision(ctx, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if !d.Simulated() || len(d.Members()) != 3 || !strings.HasPrefix(d.URI(), "mongodb://127.0.0.1:") {
		t.Fatalf("embedded: %s %v", d.Describe(), d.Members())
	}
	// The startup record holds values as written in an arms file.
	for _, m := range d.Startup() {
		for name, want := range g.SetParameters {
			if got := m.Parameters[name]; got != want {
				t.Errorf("%s: startup record of %s is %q, want %q", m.Host, name, got, want)
			}
		}
	}
}

// Close of a local set whose members all hang (SIGSTOP: SIGTERM never
// acts on them) kills them after one grace period for them all, not one
// each: three hung members end within two grace periods, where waiting
// for each in turn takes three (a sharded cluster's ten, ten).
func TestLocalTargetCloseKillsHungMembersAfterOneGracePeriod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := Provision(ctx, localArm(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pids := d.(*local).PIDs()
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if took, bound := time.Since(start), 2*stopGrace; took >= bound {
		t.Errorf("Close of %d hung members took %v; want one grace period of %v for them all (under %v)", len(pids), took.Round(time.Millisecond), stopGrace, bound)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("process %d still alive after Close", p)
		}
	}
}
