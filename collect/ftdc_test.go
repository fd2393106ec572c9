package collect

import (
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
	"github.com/qmlsab/qmlsab/metric"
)

// serverStatusShapes are serverStatus documents of each release's shape,
// as a live sample and an FTDC sample would hold them.
func serverStatusShapes(t *testing.T, uptime int64, pid bson.ObjectID, primary bool) map[string]bson.D {
	repl := bson.D{{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: pid}, {Key: "counter", Value: int64(4)}}},
		{Key: "isWritablePrimary", Value: primary}}
	common := bson.D{{Key: "host", Value: "db0.example.net:27017"}, {Key: "uptimeMillis", Value: uptime},
		{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(2048)}}},
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(40)}, {Key: "available", Value: int32(800)}, {Key: "totalCreated", Value: int32(90)}}},
		{Key: "opcounters", Value: bson.D{{Key: "insert", Value: int64(1)}, {Key: "query", Value: int64(2)}, {Key: "update", Value: int64(3)},
			{Key: "delete", Value: int64(4)}, {Key: "getmore", Value: int64(5)}, {Key: "command", Value: uptime / 10}}},
		{Key: "tcmalloc", Value: bson.D{{Key: "generic", Value: bson.D{{Key: "current_allocated_bytes", Value: int64(3 << 30)}, {Key: "heap_size", Value: int64(4 << 30)}}},
			{Key: "tcmalloc", Value: bson.D{{Key: "pageheap_free_bytes", Value: int64(1 << 20)}}}}},
		{Key: "metrics", Value: bson.D{{Key: "query", Value: bson.D{{Key: "sort", Value: bson.D{{Key: "spillToDisk", Value: int64(7)}, {Key: "spillToDiskBytes", Value: int64(7 << 20)}}},
			{Key: "group", Value: bson.D{{Key: "spills", Value: int64(2)}, {Key: "spilledBytes", Value: int64(1 << 20)}}},
			{Key: "setWindowFields", Value: bson.D{{Key: "spills", Value: uptime / 100}, {Key: "spilledBytes", Value: uptime << 10}}}}}}},
		{Key: "repl", Value: repl}}
	with := func(extra ...bson.E) bson.D { return append(append(bson.D{}, common...), extra...) }
	tickets := func(out int32) bson.D {
		return bson.D{{Key: "out", Value: out}, {Key: "available", Value: 128 - out}, {Key: "totalTickets", Value: int32(128)}}
	}
	withPools := func(d bson.D, pools ...bson.E) bson.D { return append(append(bson.D{}, d...), pools...) }
	mon := bson.E{Key: "monitor", Value: bson.D{{Key: "timesDecreased", Value: int64(12)}, {Key: "timesIncreased", Value: int64(13)}}}
	normal := bson.E{Key: "normalPriority", Value: pool(5, uptime/50, 2)}
	low := bson.E{Key: "lowPriority", Value: pool(120, uptime/20, uptime/40)}
	return map[string]bson.D{
		"6.0": with(bson.E{Key: "wiredTiger", Value: bson.D{{Key: "concurrentTransactions", Value: bson.D{
			{Key: "write", Value: tickets(1)}, {Key: "read", Value: tickets(3)}}}}}),
		"7.0": with(bson.E{Key: "wiredTiger", Value: bson.D{{Key: "concurrentTransactions", Value: bson.D{
			{Key: "write", Value: withPools(tickets(1), normal)}, {Key: "read", Value: withPools(tickets(3), normal, low)}, mon}}}}),
		"8.0": with(bson.E{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{
			{Key: "write", Value: withPools(tickets(1), normal)}, {Key: "read", Value: withPools(tickets(3), normal)}, mon}}}}),
		"master": with(bson.E{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{
			{Key: "read", Value: withPools(tickets(3), low, normal)}, {Key: "write", Value: withPools(tickets(1), normal)}, mon}}}},
			bson.E{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "currentUsageBytes", Value: int64(7 << 30)},
				{Key: "lowMarkBytes", Value: int64(3 << 30)}, {Key: "highMarkBytes", Value: int64(6 << 30)}, {Key: "memLimitBytes", Value: int64(8 << 30)},
				{Key: "operationsShed", Value: uptime / 30}, {Key: "operationsShedQueued", Value: int64(1)}}}}}),
	}
}

// One table reads both: every field a live serverStatus gives, an FTDC
// sample of the same document gives too, with the same value, in every
// release's shape; replSetGetStatus adds the replication state.
func TestFTDCSamplesReadThroughTheSameTable(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for _, version := range []string{"6.0", "7.0", "8.0", "master"} {
		t.Run(version, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "diagnostic.data")
			w, err := ftdc.NewWriter(dir, ftdc.WriterOptions{SamplesPerChunk: 5})
			if err != nil {
				t.Fatal(err)
			}
			pids := []bson.ObjectID{bson.NewObjectID(), bson.NewObjectID()}
			var live []map[string]float64
			for i := range 12 {
				proc := i / 8 // a restart after 8 samples: a new process, a new writer
				if i == 8 {
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
					if w, err = ftdc.NewWriter(dir, ftdc.WriterOptions{SamplesPerChunk: 5}); err != nil {
						t.Fatal(err)
					}
				}
				uptime := int64((i%8)+1) * 1000
				ss := serverStatusShapes(t, uptime, pids[proc], i < 6)[version]
				live = append(live, Extract(doc(t, ss)))
				at := t0.Add(time.Duration(i) * time.Second)
				rs := bson.D{{Key: "start", Value: at}, {Key: "set", Value: "rs0"}, {Key: "myState", Value: int32(map[bool]int32{true: 1, false: 2}[i < 6])},
					{Key: "term", Value: int64(3 + i/6)},
					// h2 (this member) is primary until it steps down at 6 s, h1 after.
					{Key: "members", Value: bson.A{bson.D{{Key: "name", Value: "h1:27017"}, {Key: "state", Value: map[bool]int32{true: 2, false: 1}[i < 6]}, {Key: "self", Value: false}},
						bson.D{{Key: "name", Value: "h2:27017"}, {Key: "state", Value: map[bool]int32{true: 1, false: 2}[i < 6]}, {Key: "self", Value: true}}}}}
				if err := w.Add(bson.D{{Key: "start", Value: at}, {Key: "serverStatus", Value: append(bson.D{{Key: "start", Value: at}}, ss...)},
					{Key: "replSetGetStatus", Value: rs}, {Key: "end", Value: at.Add(5 * time.Millisecond)}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFTDC("", Window(t0.Add(time.Second), t0.Add(11*time.Second)), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Member != "h2:27017" {
				t.Errorf("member %q, want the name replSetGetStatus gives itself", got.Member)
			}
			if len(got.Samples) != 10 || !got.First.Equal(t0) || !got.Last.Equal(t0.Add(11*time.Second)) {
				t.Fatalf("%d samples in [1 s, 11 s) of %v..%v, want 10", len(got.Samples), got.First, got.Last)
			}
			for k, s := range got.Samples {
				i := k + 1
				if !s.FromFTDC || !s.Up || s.Member != "h2:27017" || s.Primary != (i < 6) || s.ProcessID != pids[i/8].Hex() ||
					s.SeenPrimary != map[bool]string{true: "h2:27017", false: "h1:27017"}[i < 6] {
					t.Errorf("sample %d: %+v", i, s)
				}
				for name, want := range live[i] {
					if s.Values[name] != want {
						t.Errorf("sample %d: %s = %v from FTDC, %v live", i, name, s.Values[name], want)
					}
				}
				for name := range s.Values {
					if _, ok := live[i][name]; !ok && name != "repl.myState" && name != "repl.term" {
						t.Errorf("sample %d: FTDC gives %s, which the live document lacks", i, name)
					}
				}
				if s.Values["repl.myState"] != map[bool]float64{true: 1, false: 2}[i < 6] {
					t.Errorf("sample %d: repl.myState %v", i, s.Values["repl.myState"])
				}
			}
			if n := metric.RestartCount(got.Samples); n != 1 {
				t.Errorf("%d restarts, want the one new process", n)
			}
			// The member never saw another process of itself as primary,
			// but its replica-set view saw the primary move to h1.
			if n := len(metric.NewPrimaries(got.Samples)); n != 0 {
				t.Errorf("%d new primaries in one member's reports of itself, want 0", n)
			}
			if n := metric.PrimaryChanges(got.Samples); n != 1 {
				t.Errorf("%d primary changes, want the one its view of the set shows", n)
			}
			if version == "master" || version == "7.0" {
				if _, ok := got.Samples[0].Values["read.low.removedFromQueue"]; !ok {
					t.Error("low-priority counters missing")
				}
			}
		})
	}
}
