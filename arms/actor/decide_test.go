package actor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/store"
)

func doc(t testing.TB, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hostInfoWith(t testing.TB, system bson.D) bson.Raw {
	return doc(t, bson.D{{Key: "system", Value: system}, {Key: "ok", Value: 1.0}})
}

func TestMemoryLimitFallsBackToMachineMemoryAndIsAbsentOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		system bson.D
		want   int64 // 0: absent
	}{
		{"container limit", bson.D{{Key: "memLimitMB", Value: int64(4096)}, {Key: "memSizeMB", Value: int64(65536)}}, 4096},
		{"int32 limit", bson.D{{Key: "memLimitMB", Value: int32(2048)}}, 2048},
		{"double limit", bson.D{{Key: "memLimitMB", Value: 1024.0}}, 1024},
		{"no limit field", bson.D{{Key: "memSizeMB", Value: int64(8192)}}, 8192},
		{"limit of zero", bson.D{{Key: "memLimitMB", Value: int64(0)}, {Key: "memSizeMB", Value: int64(8192)}}, 8192},
		{"limit as a string", bson.D{{Key: "memLimitMB", Value: "4096"}, {Key: "memSizeMB", Value: int64(8192)}}, 8192},
		{"neither", bson.D{{Key: "hostname", Value: "h"}}, 0},
		{"both wrong-typed", bson.D{{Key: "memLimitMB", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "memSizeMB", Value: true}}, 0},
		{"negative", bson.D{{Key: "memLimitMB", Value: int64(-1)}}, 0},
		{"beyond int64 bytes", bson.D{{Key: "memLimitMB", Value: 1e300}}, 0},
	} {
		got, ok := MemoryLimitMB(hostInfoWith(t, tc.system))
		if ok != (tc.want != 0) || got != tc.want {
			t.Errorf("%s: got %d (known %v), want %d", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := MemoryLimitMB(doc(t, bson.D{{Key: "system", Value: "flat"}})); ok {
		t.Error("a system that is not a document gave a limit")
	}
}

func stormOp(t testing.TB, id any, tracked int64) bson.Raw {
	return doc(t, bson.D{{Key: "opid", Value: id}, {Key: "appName", Value: "storm"}, {Key: "op", Value: "command"},
		{Key: "inUseTrackedMemBytes", Value: tracked}, {Key: "command", Value: bson.D{{Key: "aggregate", Value: "c"}}}})
}

func TestDecideKillsOnlyWhatItCanReadAndIdlesWithoutMemoryFigures(t *testing.T) {
	cfg := killop.Default("storm")
	cfg.Policy = killop.PolicyLargestFirst // these ops hold tickets; D's default considers queued ones only
	hi := hostInfoWith(t, bson.D{{Key: "memLimitMB", Value: int64(1000)}})
	hot := doc(t, bson.D{{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(900)}}}})
	ops := []bson.Raw{stormOp(t, int32(7), 200<<20), stormOp(t, "shard0:8", 300<<20), doc(t, bson.D{{Key: "appName", Value: "storm"}})}

	d := Decide(cfg, hi, hot, ops)
	if d.Idle != "" || d.LimitMB != 1000 || d.ResidentMB != 900 {
		t.Fatalf("decision %+v, want limit 1000 MB, resident 900 MB", d)
	}
	if len(d.Kills) != 1 || d.Kills[0].ID != 7 {
		t.Fatalf("kills %+v, want op 7 only (the others have no integer opid)", d.Kills)
	}

	for name, ss := range map[string]bson.Raw{
		"no mem section":     doc(t, bson.D{{Key: "ok", Value: 1.0}}),
		"resident a string":  doc(t, bson.D{{Key: "mem", Value: bson.D{{Key: "resident", Value: "900"}}}}),
		"mem not a document": doc(t, bson.D{{Key: "mem", Value: int32(900)}}),
	} {
		if d := Decide(cfg, hi, ss, ops); d.Idle != noResident || len(d.Kills) != 0 || d.ResidentMB != 0 {
			t.Errorf("%s: decision %+v, want idle for want of resident memory", name, d)
		}
	}
	if d := Decide(cfg, hostInfoWith(t, bson.D{}), hot, ops); d.Idle != noLimit || len(d.Kills) != 0 {
		t.Errorf("no memory limit: decision %+v, want idle for want of a limit", d)
	}
}

// fakeServer answers the actor from fixed documents and counts its questions.
type fakeServer struct {
	hostInfoErrs int // hostInfo fails this many times first
	hi, ss       bson.Raw
	ops          []bson.Raw

	mu            sync.Mutex
	statusAsked   int
	opsAsked      int
	statusReached chan struct{} // closed at the 20th serverStatus
	kills         []int64
}

func (f *fakeServer) hostInfo(context.Context) (bson.Raw, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hostInfoErrs > 0 {
		f.hostInfoErrs--
		return nil, errors.New("connection reset")
	}
	return f.hi, nil
}

func (f *fakeServer) serverStatus(context.Context) (bson.Raw, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusAsked++; f.statusAsked == 20 {
		close(f.statusReached)
	}
	return f.ss, nil
}

func (f *fakeServer) currentOp(context.Context) ([]bson.Raw, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opsAsked++
	return f.ops, nil
}

func (f *fakeServer) killOp(_ context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills = append(f.kills, id)
	return nil
}

// runUntil20Statuses runs the actor against srv until it has read
// serverStatus 20 times, then stops it.
func runUntil20Statuses(t *testing.T, srv *fakeServer, cfg killop.Config, onKill func(store.Kill), o killOpOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runKillOp(ctx, srv, cfg, onKill, o) }()
	select {
	case <-srv.statusReached:
	case <-time.After(60 * time.Second):
		t.Fatal("the actor never read serverStatus 20 times")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestKillOpActorWithoutResidentMemorySaysSoOnceAndKillsNothing(t *testing.T) {
	srv := &fakeServer{hostInfoErrs: 3, statusReached: make(chan struct{}),
		hi:  hostInfoWith(t, bson.D{{Key: "memLimitMB", Value: int64(1000)}}),
		ss:  doc(t, bson.D{{Key: "uptime", Value: 1.0}}),
		ops: []bson.Raw{stormOp(t, int64(9), 500<<20)}}
	var logs stormtest.SyncBuffer
	cfg := killop.Default("storm")
	cfg.Interval = time.Millisecond
	runUntil20Statuses(t, srv, cfg, func(store.Kill) { t.Error("killed an operation") }, killOpOptions{log: slog.New(slog.NewTextHandler(&logs, nil))})
	if n := strings.Count(logs.String(), "mem.resident"); n != 1 {
		t.Errorf("said why it does nothing %d times over 20 ticks, want once:\n%s", n, logs.String())
	}
	if len(srv.kills) != 0 {
		t.Errorf("killed %v", srv.kills)
	}
}

func TestKillOpActorWithoutMemoryLimitSaysSoAndStopsCleanly(t *testing.T) {
	srv := &fakeServer{hi: hostInfoWith(t, bson.D{{Key: "cpuArch", Value: "x86_64"}}), statusReached: make(chan struct{})}
	var logs stormtest.SyncBuffer
	cfg := killop.Default("storm")
	cfg.Interval = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runKillOp(ctx, srv, cfg, nil, killOpOptions{log: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), "memLimitMB") {
		if time.Now().After(deadline) {
			t.Fatal("the actor never said it has no memory limit")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.statusAsked != 0 {
		t.Errorf("read serverStatus %d times with no limit to compare it to", srv.statusAsked)
	}
	if n := strings.Count(logs.String(), "memLimitMB"); n != 1 {
		t.Errorf("said it has no limit %d times, want once:\n%s", n, logs.String())
	}
}

// $currentOp answers a document per operation, hundreds in a storm: the
// actor asks for it only when resident memory is above its threshold.
func TestKillOpActorReadsOperationsOnlyAboveItsThreshold(t *testing.T) {
	for _, c := range []struct {
		residentMB int32
		wantOps    bool
	}{{500, false}, {900, true}} {
		srv := &fakeServer{statusReached: make(chan struct{}),
			hi:  hostInfoWith(t, bson.D{{Key: "memLimitMB", Value: int64(1000)}}),
			ss:  doc(t, bson.D{{Key: "mem", Value: bson.D{{Key: "resident", Value: c.residentMB}}}}),
			ops: []bson.Raw{stormOp(t, int64(9), 500<<20)}}
		cfg := killop.Default("storm")
		cfg.Interval = time.Millisecond
		var rounds atomic.Int64
		runUntil20Statuses(t, srv, cfg, nil, killOpOptions{log: slog.New(slog.DiscardHandler), rounds: &rounds})
		srv.mu.Lock()
		asked := srv.opsAsked
		srv.mu.Unlock()
		if n := rounds.Load(); n < 19 {
			t.Errorf("resident %d MB: %d rounds counted over 20 answered serverStatus, want each one", c.residentMB, n)
		}
		if (asked > 0) != c.wantOps {
			t.Errorf("resident %d MB of 1000 (threshold 70 %%): $currentOp asked %d times", c.residentMB, asked)
		}
	}
}

// The actor reads an operation's top-level fields; garbage nested in its
// command (well framed, so the driver accepts the document) leaves those
// readable and panics nothing.
func TestOpOfReadsAnOperationWhoseCommandIsGarbage(t *testing.T) {
	good := doc(t, bson.D{{Key: "opid", Value: int64(9)}, {Key: "appName", Value: "storm"}, {Key: "inUseTrackedMemBytes", Value: int64(5 << 20)},
		{Key: "command", Value: bson.D{{Key: "aggregate", Value: "events"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$sort", Value: bson.D{}}}}}}}})
	op, ok := OpOf(good)
	if !ok || op.Stage != "$sort" || op.TrackedBytes != 5<<20 {
		t.Fatalf("OpOf(well formed) = %+v, %v", op, ok)
	}
	// Corrupt the command's inner bytes, keeping every length prefix.
	i := bytes.Index(good, []byte("aggregate"))
	for _, b := range []byte{0x02, 0x03, 0x04, 0x7f, 0xff} {
		bad := bytes.Clone(good)
		for j := i - 1; j < len(bad)-2; j += 3 {
			bad[j] = b
		}
		op, ok := OpOf(bad)
		if !ok || op.ID != 9 || op.TrackedBytes != 5<<20 || op.AppName != "storm" {
			t.Errorf("garbage %#x in the command: OpOf = %+v, %v; want opid 9, its app and 5 MiB tracked", b, op, ok)
		}
	}
}

// Each kill names where its op was when $currentOp showed it: waiting in
// the low-priority queue (deprioritized), in the normal-priority queue, or
// running — so kills can be counted by queue, apart from the server's own
// sheds.
func TestKillOpActorRecordsEachKillsQueue(t *testing.T) {
	queue := bson.D{{Key: "name", Value: "execution"}, {Key: "timeQueuedMicros", Value: int64(0)}}
	op := func(id int64, extra ...bson.E) bson.Raw {
		d := bson.D{{Key: "opid", Value: id}, {Key: "appName", Value: "storm"}, {Key: "op", Value: "command"},
			{Key: "inUseTrackedMemBytes", Value: int64(id) << 20}, {Key: "command", Value: bson.D{{Key: "aggregate", Value: "c"}}}}
		return doc(t, append(d, extra...))
	}
	srv := &fakeServer{statusReached: make(chan struct{}),
		hi: hostInfoWith(t, bson.D{{Key: "memLimitMB", Value: int64(1000)}}),
		ss: doc(t, bson.D{{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(900)}}}}),
		ops: []bson.Raw{
			op(30, bson.E{Key: "currentQueue", Value: queue}, bson.E{Key: "priorityLowered", Value: true}),
			op(20, bson.E{Key: "currentQueue", Value: queue}),
			op(10, bson.E{Key: "currentQueue", Value: nil}),
		}}
	cfg := killop.Default("storm")
	cfg.Policy, cfg.Interval = killop.PolicyLargestFirst, time.Millisecond // running ops too
	var mu sync.Mutex
	queues := map[int64]string{}
	runUntil20Statuses(t, srv, cfg, func(k store.Kill) { mu.Lock(); queues[k.OpID] = k.Queue; mu.Unlock() }, killOpOptions{log: slog.New(slog.DiscardHandler)})
	mu.Lock()
	defer mu.Unlock()
	want := map[int64]string{30: store.QueueLowPriority, 20: store.QueueNormalPriority, 10: store.QueueRunning}
	for id, q := range want {
		if queues[id] != q {
			t.Errorf("op %d killed from %q, want %q (kills: %v)", id, queues[id], q, queues)
		}
	}
}
