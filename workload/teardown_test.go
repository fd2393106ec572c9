package workload

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/qmlsab/qmlsab/mongosim"
)

// A trial stopped while every member is down returns at once whatever
// its serverSelectionTimeout: its clients disconnect within a bound of
// their own, not after waiting the timeout out for a server to end their
// sessions on (the driver's Disconnect does that first). Here the
// timeout is 10 minutes; the members are killed, the canary client is
// seen to know every one of them down, and Run must return within 60 s
// of its context's end.
func TestDriverReturnsPromptlyWhenStoppedWithEveryMemberDown(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time workload")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{MemLimitMB: 4096,
		Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	spec := DefaultSpillToDisk()
	spec.Phases = Phases{Warmup: time.Second, Storm: 10 * time.Minute, Recovery: time.Second}
	spec.StormRate, spec.CanaryRate = 20, 20
	spec.ServerSelectionTimeout = 10 * time.Minute
	var mu sync.Mutex
	unknown := map[string]bool{}
	allDown := make(chan struct{})
	var once sync.Once
	monitor := &event.ServerMonitor{ServerDescriptionChanged: func(e *event.ServerDescriptionChangedEvent) {
		mu.Lock()
		defer mu.Unlock()
		unknown[e.Address.String()] = e.NewDescription.Kind == "Unknown"
		n := 0
		for _, u := range unknown {
			if u {
				n++
			}
		}
		if n == len(rs.Hosts()) {
			once.Do(func() { close(allDown) })
		}
	}}
	d := &Driver{Spec: spec, URI: rs.URI(), Monitor: monitor}
	if err := d.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	returned := make(chan error, 1)
	go func() { _, err := d.Run(rctx, time.Now().Add(200*time.Millisecond), 1); returned <- err }()
	for { // the canaries answer: the clients are connected and their sessions in use
		if _, ok := d.Availability(); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no canary finished")
		case <-time.After(20 * time.Millisecond):
		}
	}
	for i := range rs.Hosts() {
		rs.Kill(i)
	}
	select {
	case <-allDown:
	case <-ctx.Done():
		t.Fatal("the canary client never saw every member down")
	}
	stop()
	select {
	case <-returned:
	case <-time.After(60 * time.Second):
		t.Fatal("Run still running 60 s after its context ended with every member down (serverSelectionTimeout 10 min)")
	}
}

// hangingProxy forwards connections to a server until a client sends a
// message holding trigger: from then on it forwards nothing, in either
// direction, on the connections it has or the ones it accepts (that
// message included), and keeps them all open, as a server that stops
// answering (a process stopped, a host swapping) does.
type hangingProxy struct {
	ln      net.Listener
	target  string
	trigger []byte
	hung    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	conns   []net.Conn
}

func startHangingProxy(t *testing.T, target string, trigger []byte) *hangingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &hangingProxy{ln: ln, target: target, trigger: trigger, hung: make(chan struct{})}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.keep(c)
			select {
			case <-p.hung:
				continue // held open, never answered
			default:
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.keep(s)
			go p.pipe(s, c, p.trigger)
			go p.pipe(c, s, nil)
		}
	}()
	return p
}

func (p *hangingProxy) keep(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

// pipe copies src to dst until the proxy hangs, which a read holding
// trigger does.
func (p *hangingProxy) pipe(dst, src net.Conn, trigger []byte) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if trigger != nil && bytes.Contains(buf[:n], trigger) {
			p.once.Do(func() { close(p.hung) })
		}
		select {
		case <-p.hung:
			return // what arrives now is never delivered; the sockets stay open
		default:
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// Hung is closed once the proxy hangs.
func (p *hangingProxy) Hung() <-chan struct{} { return p.hung }

func (p *hangingProxy) Addr() string { return p.ln.Addr().String() }

// A trial stopped while its server hangs (connections open, nothing
// answered) returns within a bound: the storm's cursors are closed, and
// the clients disconnected, each within a bound of its own, where an
// unbounded killCursors or endSessions on a connection the server never
// answers waits forever (no deadline, no socket timeout). The server
// hangs as a storm query's getMore reaches it, so that query's cursor is
// open when the trial stops.
func TestDriverReturnsPromptlyWhenStoppedWhileTheServerHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time workload")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := mongosim.Start(mongosim.Options{MemLimitMB: 4096, Sim: mongosim.SimOptions{CPUs: 4, BaselineMB: 512, ScanScale: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	// An OP_MSG command document whose first element is getMore (int64).
	proxy := startHangingProxy(t, s.Addr(), []byte("\x12getMore\x00"))
	spec := DefaultSpillToDisk()
	spec.Phases = Phases{Warmup: 500 * time.Millisecond, Storm: 10 * time.Minute, Recovery: time.Second}
	spec.StormRate, spec.CanaryRate = 50, 20
	spec.ServerSelectionTimeout = 10 * time.Minute
	// A connection opened to the hung server waits out its handshake for
	// connectTimeoutMS: longer than the test's bound, so that only a bound
	// of qmlsab's own ends a command that needs one.
	d := &Driver{Spec: spec, URI: "mongodb://" + proxy.Addr() + "/?directConnection=true&connectTimeoutMS=120000"}
	if err := d.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	returned := make(chan error, 1)
	start := time.Now().Add(200 * time.Millisecond)
	go func() { _, err := d.Run(rctx, start, 1); returned <- err }()
	select {
	case <-proxy.Hung():
	case <-ctx.Done():
		t.Fatal("no storm query ever sent a getMore")
	}
	stop()
	select {
	case <-returned:
	case <-time.After(60 * time.Second):
		t.Fatal("Run still running 60 s after its context ended while the server hangs")
	}
}
