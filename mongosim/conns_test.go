package mongosim_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// claimHeader is the 16-byte header of an OP_MSG that claims size bytes.
func claimHeader(size uint32) []byte {
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h, size)
	binary.LittleEndian.PutUint32(h[4:], 1)
	binary.LittleEndian.PutUint32(h[12:], uint32(wire.OpMsg))
	return h
}

// ping runs ping on a fresh connection to addr.
func ping(t *testing.T, addr string) error {
	t.Helper()
	c := &wire.Client{Addr: addr}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Call(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	return err
}

// serverStatusConnections reads serverStatus.connections over a fresh
// connection.
func serverStatusConnections(t *testing.T, addr string) bson.Raw {
	t.Helper()
	c := &wire.Client{Addr: addr}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.Call(ctx, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	return st.Lookup("connections").Document()
}

// waitConnections waits (generously) until the member has n connections
// open.
func waitConnections(t *testing.T, addr string, n int32) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cur := serverStatusConnections(t, addr).Lookup("current").Int32()
		if cur >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", cur, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// 48 connections that each send a header claiming a 48 MB message (half
// of them a byte of its body too) and then idle hold no more than their
// read buffers: the member's heap grows by a few MiB, not 48 × 48 MB, and
// it keeps answering ping on a fresh connection. (Each such header made
// the member allocate the whole 48 MB at once; ~40 of them killed it.)
func TestClaimsOfLargeMessagesHoldNoMemory(t *testing.T) {
	s := startStandalone(t)
	const attackers = 48
	const bound = 32 << 20
	before := heapAlloc()
	var conns []net.Conn
	for i := range attackers {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		msg := claimHeader(wire.MaxMessageSize)
		if i%2 == 1 {
			msg = append(msg, 0, 0, 0, 0, 0) // the flags and a section kind
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	waitConnections(t, s.Addr(), attackers)
	// The member reads each header as soon as it comes; look at its heap
	// a few times while they idle.
	var peak uint64
	for range 5 {
		if h := heapAlloc(); h > peak {
			peak = h
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("heap %d MiB before, at most %d MiB during", before>>20, peak>>20)
	if grew := int64(peak) - int64(before); grew > bound {
		t.Errorf("%d connections each claiming a %d-byte message grew the heap by %d MiB; want at most %d MiB",
			attackers, wire.MaxMessageSize, grew>>20, bound>>20)
	}
	if err := ping(t, s.Addr()); err != nil {
		t.Errorf("ping on a fresh connection during the attack: %v", err)
	}
	for _, c := range conns {
		c.Close()
	}
}

// A message whose rest does not come within the member's message timeout
// is dropped with its connection; an idle connection, between messages,
// is not.
func TestHalfSentMessageIsDroppedAtItsDeadline(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{Limits: mongosim.ConnLimits{MessageTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	idle, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	full := opMsg(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	for name, partial := range map[string][]byte{
		"a header alone":                claimHeader(1000),
		"half of a ping":                full[:len(full)/2],
		"100 KiB of a 1 MiB message":    append(claimHeader(1<<20), make([]byte, 100<<10)...),
		"3 bytes of a message's length": full[:3],
	} {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(partial); err != nil {
			t.Fatal(err)
		}
		// Generous: the member closes it after 100 ms; a connection still
		// open after a minute was never going to be closed.
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		n, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the connection is still open after a minute; want it closed after the 100ms message timeout", name)
		} else if n != 0 || err == nil {
			t.Errorf("%s: read %d bytes, %v; want the connection closed", name, n, err)
		}
		c.Close()
	}
	// The idle connection has been idle longer than the timeout: it was
	// not closed, and answers.
	if m, err := roundTrip(t, idle, full); err != nil || bson.Raw(m.Body).Lookup("ok").AsFloat64() != 1 {
		t.Errorf("ping on a connection idle past the message timeout: %v", err)
	}
}

// Past MaxIncomingConnections a new connection is closed as soon as it is
// accepted, as mongod closes it, and counted in serverStatus; once one
// closes, a new one is served.
func TestConnectionsPastTheCapAreClosed(t *testing.T) {
	const maxConns = 4
	s, err := mongosim.Start(mongosim.Options{Limits: mongosim.ConnLimits{MaxIncomingConnections: maxConns}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	pingMsg := opMsg(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	var open []net.Conn
	for range maxConns {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := roundTrip(t, c, pingMsg); err != nil {
			t.Fatalf("connection %d of %d: %v", len(open)+1, maxConns, err)
		}
		open = append(open, c)
	}
	extra, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if _, err := roundTrip(t, extra, pingMsg); err == nil {
		t.Fatalf("connection %d past a cap of %d was served", maxConns+1, maxConns)
	}
	st, err := roundTrip(t, open[0], opMsg(t, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}}))
	if err != nil {
		t.Fatal(err)
	}
	conns := bson.Raw(st.Body).Lookup("connections").Document()
	if conns.Lookup("current").Int32() != maxConns || conns.Lookup("available").Int32() != 0 || conns.Lookup("rejected").Int32() < 1 {
		t.Errorf("serverStatus.connections %v; want current %d, available 0, rejected ≥ 1", conns, maxConns)
	}
	open[0].Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(t, s.Addr())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after one of %d connections closed, a new one is still refused: %v", maxConns, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
