package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/sync/semaphore"
)

// loopbackPair is a client and a server end of one TCP connection.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// msgOfSize is an OP_MSG whose body pads it to about size bytes.
func msgOfSize(t *testing.T, size int) []byte {
	t.Helper()
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "pad", Value: strings.Repeat("x", max(size-64, 1))}, {Key: "$db", Value: "d"}})
	return AppendMsg(nil, 1, 0, 0, body)
}

type readResult struct {
	msg Message
	err error
}

func readAsync(ctx context.Context, nc net.Conn, lim ReadLimits) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		m, err := ReadConn(ctx, nc, bufio.NewReaderSize(nc, 16<<10), lim)
		done <- readResult{m, err}
	}()
	return done
}

// waitFull waits (generously) until less than n bytes are left of
// budget: the reader that holds it has reserved the rest.
func waitFull(t *testing.T, budget *semaphore.Weighted, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for budget.TryAcquire(n) {
		budget.Release(n)
		if time.Now().After(deadline) {
			t.Fatal("the reader never reserved the whole budget")
		}
		time.Sleep(time.Millisecond)
	}
}

// Messages smaller and larger than the read buffer are read whole, and
// every byte reserved for them is returned.
func TestReadConnReadsMessagesAndReturnsTheBudget(t *testing.T) {
	client, server := loopbackPair(t)
	budget := semaphore.NewWeighted(4 << 20)
	lim := ReadLimits{Budget: budget, Timeout: time.Minute}
	br := bufio.NewReaderSize(server, 16<<10)
	for _, size := range []int{200, 16 << 10, 16<<10 + 1, 1 << 20} {
		raw := msgOfSize(t, size)
		go client.Write(raw)
		m, err := ReadConn(context.Background(), server, br, lim)
		if err != nil {
			t.Fatalf("%d-byte message: %v", len(raw), err)
		}
		if got := len(bson.Raw(m.Body).Lookup("pad").StringValue()); got != max(size-64, 1) {
			t.Errorf("%d-byte message: pad of %d bytes, want %d", len(raw), got, max(size-64, 1))
		}
		if !budget.TryAcquire(4 << 20) {
			t.Fatalf("after a %d-byte message the budget is not all back", len(raw))
		}
		budget.Release(4 << 20)
	}
}

// A message whose rest does not come within the deadline is given up
// with ErrMessageTimeout, and its reservation is returned; a message over
// the budget waits for it, and proceeds once another message is read.
func TestReadConnWaitsForTheBudgetUntilItsDeadline(t *testing.T) {
	const budgetBytes = 256 << 10
	budget := semaphore.NewWeighted(budgetBytes)

	// A holds the budget, all but less than the 64 KiB a larger message
	// starts with: 150 KiB of a 200 KiB message have come.
	aClient, aServer := loopbackPair(t)
	aRaw := msgOfSize(t, 200<<10)
	aClient.Write(aRaw[:150<<10])
	aDone := readAsync(context.Background(), aServer, ReadLimits{Budget: budget, Timeout: time.Minute})
	waitFull(t, budget, firstChunk)

	// B's whole 100 KiB message waits for the budget and runs into its
	// deadline: the connection is given up, not read past the budget.
	bClient, bServer := loopbackPair(t)
	bClient.Write(msgOfSize(t, 100<<10))
	b := <-readAsync(context.Background(), bServer, ReadLimits{Budget: budget, Timeout: 100 * time.Millisecond})
	if !errors.Is(b.err, ErrMessageTimeout) {
		t.Fatalf("a message over the budget: %v; want ErrMessageTimeout", b.err)
	}

	// C waits too, with time to spare, and is read once A has its rest.
	cClient, cServer := loopbackPair(t)
	cClient.Write(msgOfSize(t, 100<<10))
	cDone := readAsync(context.Background(), cServer, ReadLimits{Budget: budget, Timeout: time.Minute})
	select {
	case c := <-cDone:
		t.Fatalf("C was read while A held the budget: %v", c.err)
	case a := <-aDone:
		t.Fatalf("A ended before its rest was sent: %v", a.err)
	default:
	}
	aClient.Write(aRaw[150<<10:])
	if a := <-aDone; a.err != nil {
		t.Fatalf("A: %v", a.err)
	}
	if c := <-cDone; c.err != nil {
		t.Fatalf("C, once A was read: %v", c.err)
	}

	// D sends a third of a message and stops: dropped at its deadline,
	// its reservation returned.
	dClient, dServer := loopbackPair(t)
	dClient.Write(msgOfSize(t, 150<<10)[:50<<10])
	d := <-readAsync(context.Background(), dServer, ReadLimits{Budget: budget, Timeout: 100 * time.Millisecond})
	if !errors.Is(d.err, ErrMessageTimeout) {
		t.Fatalf("a half-sent message: %v; want ErrMessageTimeout", d.err)
	}
	if !budget.TryAcquire(budgetBytes) {
		t.Error("after every read ended, the budget is not all back")
	}
}

// A header that claims the largest message and then nothing reserves
// nothing; a small message behind the deadline of a half-sent one is
// dropped the same way.
func TestReadConnHoldsNothingForAClaim(t *testing.T) {
	budget := semaphore.NewWeighted(MinReadBudget)
	client, server := loopbackPair(t)
	hdr := AppendMsg(nil, 1, 0, 0, mustDoc(t, bson.D{{Key: "ping", Value: 1}}))[:16]
	binary.LittleEndian.PutUint32(hdr, MaxMessageSize)
	client.Write(hdr)
	done := readAsync(context.Background(), server, ReadLimits{Budget: budget, Timeout: 200 * time.Millisecond})
	r := <-done
	if !errors.Is(r.err, ErrMessageTimeout) {
		t.Fatalf("a claim of %d bytes and nothing: %v; want ErrMessageTimeout", MaxMessageSize, r.err)
	}
	if !budget.TryAcquire(MinReadBudget) {
		t.Error("the claim kept part of the budget")
	}
	// Small: 20 bytes of a 100-byte message.
	client2, server2 := loopbackPair(t)
	client2.Write(msgOfSize(t, 100)[:20])
	if r := <-readAsync(context.Background(), server2, ReadLimits{Timeout: 100 * time.Millisecond}); !errors.Is(r.err, ErrMessageTimeout) {
		t.Fatalf("a half-sent small message: %v; want ErrMessageTimeout", r.err)
	}
}
