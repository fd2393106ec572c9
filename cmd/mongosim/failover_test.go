package main_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

var binary string

func TestMain(m *testing.M) { stormtest.MainWithMongosim(m, &binary) }

// member is one mongosim process of a test's replica set.
type member struct {
	port   int
	dbpath string
	extra  []string // more flags
	cmd    *exec.Cmd
}

func (m *member) addr() string { return fmt.Sprintf("127.0.0.1:%d", m.port) }

func (m *member) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(m.dbpath+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(binary, append([]string{"--replSet", "rs0", "--port", fmt.Sprint(m.port), "--bind_ip", "127.0.0.1", "--dbpath", m.dbpath}, m.extra...)...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func(c *exec.Cmd, f *os.File) { _ = c.Wait(); f.Close() }(m.cmd, log)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", m.addr()); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("member %s did not start listening", m.addr())
}

func (m *member) kill() { _ = m.cmd.Process.Signal(syscall.SIGKILL) }

func freePorts(t *testing.T, n int) []int {
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := mongosim.ListenLoopback()
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func call(ctx context.Context, addr string, cmd bson.D) (bson.Raw, error) {
	c := &wire.Client{Addr: addr}
	defer c.Close()
	return c.Call(ctx, cmd)
}

// stateOf returns hello's view of a member: primary, secondary, or "" when down.
func stateOf(addr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := call(ctx, addr, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		return ""
	}
	if p, _ := r.Lookup("isWritablePrimary").BooleanOK(); p {
		return "primary"
	}
	if s, _ := r.Lookup("secondary").BooleanOK(); s {
		return "secondary"
	}
	return "other"
}

func TestFailoverOfProcessReplicaSet(t *testing.T) {
	const electionTimeout = 3 * time.Second
	dir := t.TempDir()
	var members []*member
	for i, p := range freePorts(t, 3) {
		m := &member{port: p, dbpath: filepath.Join(dir, fmt.Sprintf("db%d", i))}
		m.start(t)
		members = append(members, m)
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfgMembers := bson.A{}
	for i, m := range members {
		cfgMembers = append(cfgMembers, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: m.addr()}})
	}
	if _, err := call(ctx, members[0].addr(), bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"},
		{Key: "members", Value: cfgMembers}, {Key: "settings", Value: bson.D{{Key: "electionTimeoutMillis", Value: int64(electionTimeout / time.Millisecond)}}}}},
		{Key: "$db", Value: "admin"}}); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	primaryIdx := func() int {
		for i, m := range members {
			if stateOf(m.addr()) == "primary" {
				return i
			}
		}
		return -1
	}
	old := -1
	for old < 0 && ctx.Err() == nil {
		old = primaryIdx()
		time.Sleep(50 * time.Millisecond)
	}

	// A driver seeded with one member writes continuously with w:majority
	// and retryable writes (the default), recording what was acknowledged.
	client, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://%s/?replicaSet=rs0", members[(old+1)%3].addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	coll := client.Database("f").Collection("w", options.Collection().SetWriteConcern(writeconcern.Majority()))
	var mu sync.Mutex
	var acked []int
	var writeErrs []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := coll.InsertOne(octx, bson.D{{Key: "_id", Value: i}})
			ocancel()
			mu.Lock()
			if err != nil {
				writeErrs = append(writeErrs, err)
			} else {
				acked = append(acked, i)
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	})
	var before int
	for start := time.Now(); before < 50 && time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		before = len(acked)
		mu.Unlock()
	}
	if before == 0 {
		t.Fatal("no writes acknowledged before the kill")
	}

	members[old].kill()
	killedAt := time.Now()
	newIdx := -1
	for newIdx < 0 && time.Since(killedAt) < electionTimeout+time.Minute { // generous: a busy machine slows elections
		for i, m := range members {
			if i != old && stateOf(m.addr()) == "primary" {
				newIdx = i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	elected := time.Since(killedAt)
	t.Logf("new primary %s elected %v after SIGKILL of %s (election timeout %v)", members[newIdx].addr(), elected.Round(time.Millisecond), members[old].addr(), electionTimeout)
	if newIdx < 0 {
		t.Fatalf("no new primary %v after the kill", elected)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	after := len(acked) - before
	errs := writeErrs
	mu.Unlock()
	if after == 0 {
		t.Fatal("retryable writes did not continue after the failover")
	}
	// A retryable write is retried once: on a busy host the retry can
	// still meet the killed primary's connections (its pool cleared, the
	// topology not yet updated), as a real driver at a real failover can.
	// Such a write fails with a network error; any other failure, or more
	// than the writes in flight at the kill, is a defect.
	for _, err := range errs {
		if !mongo.IsNetworkError(err) && !strings.Contains(err.Error(), "connection pool") {
			t.Fatalf("a write failed across the failover with %v; only the retry meeting the dead primary's connections may fail", err)
		}
	}
	if len(errs) > 2 {
		t.Fatalf("%d writes failed across the failover (retryable writes should hide all but the in-flight few); first: %v", len(errs), errs[0])
	}

	// Every w:majority-acknowledged write survives the failover.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	have := map[int]bool{}
	for _, d := range docs {
		have[d.ID] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Fatalf("acknowledged write %d lost after failover (%d acked, %d present)", id, len(acked), len(docs))
		}
	}
	t.Logf("%d writes acknowledged (%d after the kill), all readable on the new primary", len(acked), after)

	// The killed member restarts from its dbpath, rejoins as a secondary
	// and catches up with everything the new primary has.
	members[old].start(t)
	direct, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + members[old].addr() + "/?directConnection=true&retryWrites=false").SetReadPreference(readpref.SecondaryPreferred()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Disconnect(context.Background())
	var n int64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		n, err = direct.Database("f").Collection("w").CountDocuments(cctx, bson.D{})
		ccancel()
		t.Logf("rejoin: count=%d err=%v state=%s", n, err, stateOf(members[old].addr()))
		if err == nil && n == int64(len(docs)) && stateOf(members[old].addr()) == "secondary" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := stateOf(members[old].addr()); st != "secondary" || n != int64(len(docs)) {
		t.Fatalf("restarted member: state %q with %d docs (err %v); want secondary with %d", st, n, err, len(docs))
	}
	var ce mongo.CommandError
	_, err = direct.Database("f").Collection("w").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	if !errors.As(err, &ce) || ce.Code != 10107 {
		t.Errorf("write to the rejoined secondary: %v, want NotWritablePrimary", err)
	}
}
