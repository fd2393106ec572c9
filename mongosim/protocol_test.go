package mongosim_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

func startStandalone(t *testing.T) *mongosim.Server {
	t.Helper()
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// roundTrip writes raw bytes and reads one reply.
func roundTrip(t *testing.T, c net.Conn, raw []byte) (wire.Message, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(raw); err != nil {
		return wire.Message{}, err
	}
	m, _, err := wire.Read(c, nil)
	return m, err
}

func opMsg(t *testing.T, d bson.D) []byte {
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendMsg(nil, 1, 0, 0, b)
}

func TestMalformedMessageClosesOnlyThatConnection(t *testing.T) {
	s := startStandalone(t)
	garbage := [][]byte{
		binary.LittleEndian.AppendUint32(nil, 1<<30),                           // oversized
		append(binary.LittleEndian.AppendUint32(nil, 20), make([]byte, 16)...), // zero opcode
		func() []byte { // body document with a lying length
			m := opMsg(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
			binary.LittleEndian.PutUint32(m[21:], 9999)
			return m
		}(),
	}
	for i, g := range garbage {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := roundTrip(t, c, g); err == nil {
			t.Errorf("garbage %d: got a reply, want the connection closed", i)
		}
		c.Close()
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := roundTrip(t, c, opMsg(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}))
	if err != nil || bson.Raw(m.Body).Lookup("ok").Double() != 1 {
		t.Fatalf("server after garbage: %v %v", m, err)
	}
}

func TestLegacyOpQueryOnlyForHandshake(t *testing.T) {
	s := startStandalone(t)
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	query := func(d bson.D) bson.Raw {
		q, _ := bson.Marshal(d)
		idx, b := wiremessage.AppendHeaderStart(nil, 5, 0, wire.OpQuery)
		b = wiremessage.AppendQueryFlags(b, 0)
		b = wiremessage.AppendQueryFullCollectionName(b, "admin.$cmd")
		b = wiremessage.AppendQueryNumberToSkip(b, 0)
		b = wiremessage.AppendQueryNumberToReturn(b, -1)
		b = append(b, q...)
		m, err := roundTrip(t, c, bsoncore.UpdateLength(b, idx, int32(len(b[idx:]))))
		if err != nil || m.OpCode != wire.OpReply || len(m.Documents) != 1 || m.ResponseTo != 5 {
			t.Fatalf("OP_QUERY reply: %+v %v", m, err)
		}
		return bson.Raw(m.Documents[0])
	}
	hello := query(bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}})
	if ok, _ := hello.Lookup("ismaster").BooleanOK(); !ok || hello.Lookup("maxWireVersion").Int32() < 9 || !hello.Lookup("helloOk").Boolean() {
		t.Fatalf("legacy isMaster reply: %v", hello)
	}
	refused := query(bson.D{{Key: "find", Value: "c"}})
	if refused.Lookup("code").Int32() != 352 {
		t.Fatalf("OP_QUERY find: %v, want UnsupportedOpQueryCommand (352)", refused)
	}
}

func TestErrorsUseMongodCodes(t *testing.T) {
	s := startStandalone(t)
	client := connect(t, "mongodb://"+s.Addr()+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		cmd      bson.D
		code     int32
		codeName string
		msg      string
	}{
		{bson.D{{Key: "frobnicate", Value: 1}}, 59, "CommandNotFound", "no such command: 'frobnicate'"},
		{bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$lookupx", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}},
			40324, "Location40324", "Unrecognized pipeline stage name: '$lookupx'"},
		{bson.D{{Key: "getMore", Value: int64(12345)}, {Key: "collection", Value: "c"}}, 43, "CursorNotFound", "cursor id 12345 not found"},
		{bson.D{{Key: "setParameter", Value: 1}, {Key: "noSuchParam", Value: 1}}, 72, "InvalidOptions", "unrecognized parameter"},
	} {
		db := "test"
		if tc.cmd[0].Key == "setParameter" {
			db = "admin"
		}
		err := client.Database(db).RunCommand(ctx, tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Name != tc.codeName || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("%s: got %v; want (%s) %d %q", tc.cmd[0].Key, err, tc.codeName, tc.code, tc.msg)
		}
	}
}

// TestAwaitableHelloWaits counts the hellos a connected driver sends while
// nothing changes: a server that answered awaitable hellos at once would
// see thousands per second (a heartbeat storm).
func TestAwaitableHelloWaits(t *testing.T) {
	rs := startSet(t, mongosim.ReplicaSetOptions{})
	var hellos, succeeded atomic.Int64
	mon := &event.ServerMonitor{
		ServerHeartbeatStarted:   func(*event.ServerHeartbeatStartedEvent) { hellos.Add(1) },
		ServerHeartbeatSucceeded: func(e *event.ServerHeartbeatSucceededEvent) { succeeded.Add(1) },
	}
	c := connect(t, rs.URI(), options.Client().SetServerMonitor(mon).SetHeartbeatInterval(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	start := hellos.Load()
	time.Sleep(2 * time.Second)
	n := hellos.Load() - start
	// 3 members, one streaming monitor each; each waits up to the heartbeat
	// interval. Allow slack, but nowhere near a storm.
	t.Logf("%d heartbeats in 2 s against 3 members", n)
	if n > 30 {
		t.Fatalf("%d heartbeats in 2 s against 3 members: awaitable hello is not waiting", n)
	}
	if succeeded.Load() == 0 {
		t.Fatal("no heartbeat succeeded")
	}

	// A step-down must reach the streaming monitors quickly.
	p := rs.Primary()
	admin := connect(t, "mongodb://"+rs.Hosts()[p]+"/?directConnection=true").Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "replSetStepDown", Value: 10}}).Err(); err != nil {
		t.Fatalf("replSetStepDown: %v", err)
	}
	newP, err := rs.WaitForPrimary(ctx)
	if err != nil || newP == p {
		t.Fatalf("after step-down primary is %d (was %d): %v", newP, p, err)
	}
	t0 := time.Now()
	if _, err := c.Database("x").Collection("y").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatalf("insert after step-down: %v", err)
	}
	// Without the streaming monitor the driver would learn of the new
	// primary only at its next heartbeat, 10 s away; any time short of that
	// (however slow a busy machine) shows the stream at work.
	if d := time.Since(t0); d >= 10*time.Second {
		t.Errorf("insert after step-down took %v, a heartbeat interval; the streaming monitor should learn of the change at once", d)
	}
}
