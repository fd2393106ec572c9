package collect

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/store"
)

// FuzzServerReplies feeds arbitrary serverStatus, hostInfo, $currentOp and
// hello documents through everything that reads a live server's answers:
// the extractor table, the census, the hello reading and the killOp
// actor's decision. A server may answer in any shape (sections missing,
// numbers as strings, doubles where integers were, extra nesting, even
// malformed bytes); none may panic, and what a server did not report as a
// number is absent, never a zero or a NaN.
func FuzzServerReplies(f *testing.F) {
	marshal := func(d bson.D) []byte {
		b, err := bson.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	serverStatus := marshal(bson.D{{Key: "uptimeMillis", Value: int64(5000)}, {Key: "mem", Value: bson.D{{Key: "resident", Value: int32(900)}}},
		{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{{Key: "read", Value: bson.D{{Key: "out", Value: int32(3)},
			{Key: "normalPriority", Value: bson.D{{Key: "queueLength", Value: int64(2)}, {Key: "canceled", Value: int64(1)}}}}}}}}},
		{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "operationsShed", Value: int64(4)}, {Key: "memLimitBytes", Value: 1.5e9}}}}},
		{Key: "repl", Value: bson.D{{Key: "isWritablePrimary", Value: true}}}, {Key: "ok", Value: 1.0}})
	hostInfo := marshal(bson.D{{Key: "system", Value: bson.D{{Key: "memSizeMB", Value: int64(8192)}, {Key: "memLimitMB", Value: int64(1000)}}}, {Key: "ok", Value: 1.0}})
	op := marshal(bson.D{{Key: "opid", Value: int32(7)}, {Key: "op", Value: "command"}, {Key: "appName", Value: "qmlsab-storm"},
		{Key: "inUseTrackedMemBytes", Value: int64(300 << 20)}, {Key: "currentQueue", Value: bson.D{{Key: "name", Value: "execution"}}},
		{Key: "command", Value: bson.D{{Key: "aggregate", Value: "events"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{}}}}}}}})
	hello := marshal(bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(1)}}}})
	f.Add(serverStatus, hostInfo, op, hello)
	// A 7.0 mongod: no queryMemory section, no container limit, opid as int64.
	f.Add(marshal(bson.D{{Key: "mem", Value: bson.D{{Key: "resident", Value: 512.0}}}, {Key: "wiredTiger", Value: bson.D{{Key: "concurrentTransactions", Value: bson.D{{Key: "read", Value: bson.D{{Key: "out", Value: int32(1)}}}}}}}}),
		marshal(bson.D{{Key: "system", Value: bson.D{{Key: "memSizeMB", Value: int32(4096)}}}}),
		marshal(bson.D{{Key: "opid", Value: int64(8)}, {Key: "op", Value: "getmore"}, {Key: "stage", Value: "SORT"}}),
		marshal(bson.D{{Key: "ismaster", Value: true}}))
	// Wrong types everywhere.
	f.Add(marshal(bson.D{{Key: "mem", Value: "lots"}, {Key: "uptimeMillis", Value: math.NaN()}, {Key: "connections", Value: bson.A{1, 2}}}),
		marshal(bson.D{{Key: "system", Value: bson.D{{Key: "memLimitMB", Value: "1000"}}}}),
		marshal(bson.D{{Key: "opid", Value: "shard0:9"}, {Key: "op", Value: 3}, {Key: "command", Value: "x"}}),
		marshal(bson.D{{Key: "isWritablePrimary", Value: 1}, {Key: "topologyVersion", Value: "p"}}))

	// A server reporting an operation's tracked memory beyond any host's
	// (2^63−1 bytes, a double of 1e300): clamped, never a crash, and the
	// victims summary a kill feeds stays its fixed size.
	huge := func(v any) []byte {
		return marshal(bson.D{{Key: "opid", Value: int64(9)}, {Key: "op", Value: "command"}, {Key: "appName", Value: "qmlsab-storm"},
			{Key: "inUseTrackedMemBytes", Value: v}, {Key: "currentQueue", Value: bson.D{{Key: "name", Value: "execution"}}}})
	}
	f.Add(serverStatus, hostInfo, huge(int64(math.MaxInt64)), hello)
	f.Add(serverStatus, hostInfo, huge(1e300), hello)
	f.Add(serverStatus, hostInfo, huge(int64(store.MaxTrackedBytes+1)), hello)

	cfg := killop.Default("qmlsab-storm")
	cfg.RSSHighPercent = 1 // so that a readable decision acts
	f.Fuzz(func(t *testing.T, serverStatus, hostInfo, currentOp, hello []byte) {
		ss := bson.Raw(serverStatus)
		values := Extract(ss)
		for name, x := range values {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("%s = %v", name, x)
			}
			if !reportedAsNumber(ss, name) {
				t.Fatalf("%s = %v though no path of it holds a number or boolean", name, x)
			}
		}
		if o, ok := censusOp(currentOp); ok {
			if o.TrackedBytes < 0 || o.TrackedBytes > store.MaxTrackedBytes {
				t.Fatalf("census op with %d tracked bytes", o.TrackedBytes)
			}
			AddCensus(values, []CensusOp{o, o, o})
			if x := values[CensusTrackedBytes]; x < 0 || x > 3*float64(store.MaxTrackedBytes) {
				t.Fatalf("census of three ops of %d bytes: %v tracked", o.TrackedBytes, x)
			}
		}
		if _, pid, _ := helloFacts(hello); pid != "" {
			if _, err := hex.DecodeString(pid); err != nil || len(pid) != 24 {
				t.Fatalf("process id %q", pid)
			}
		}

		d := actor.Decide(cfg, hostInfo, ss, []bson.Raw{currentOp})
		if d.Idle != "" && (len(d.Kills) > 0 || d.LimitMB != 0 && d.ResidentMB != 0) {
			t.Fatalf("idle (%s) yet decided %+v", d.Idle, d)
		}
		if d.Idle == "" && d.LimitMB <= 0 {
			t.Fatalf("decided without a memory limit: %+v", d)
		}
		var victims store.Victims
		for _, k := range d.Kills {
			if k.TrackedBytes <= 0 || k.TrackedBytes > store.MaxTrackedBytes {
				t.Fatalf("killed op %d of %d tracked bytes: outside (0, %d]", k.ID, k.TrackedBytes, store.MaxTrackedBytes)
			}
			victims.Add(k.TrackedBytes, k.Stage)
			if len(victims.Bins) > store.VictimBins {
				t.Fatalf("a victim of %d bytes grew the summary to %d bins", k.TrackedBytes, len(victims.Bins))
			}
			id := bson.Raw(currentOp).Lookup("opid")
			if n, ok := id.AsInt64OK(); !ok || n != k.ID || (id.Type != bson.TypeInt32 && id.Type != bson.TypeInt64) {
				t.Fatalf("killed op %d, but the operation's opid is %v", k.ID, id)
			}
		}
	})
}

// reportedAsNumber reports whether some path of the named field holds a
// number or a boolean in doc.
func reportedAsNumber(doc bson.Raw, name string) bool {
	for _, f := range Fields {
		if f.Name != name {
			continue
		}
		for _, p := range f.Paths {
			v, err := doc.LookupErr(strings.Split(p, ".")...)
			if err == nil && (v.Type == bson.TypeBoolean || v.IsNumber()) {
				return true
			}
		}
	}
	return false
}
