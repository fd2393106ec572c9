package collect

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExtractDReadsWhatExtractReadsOfTheMarshalledDocument: the virtual
// engine hands the extractor table its documents as built, a wire sampler
// as marshalled; both must read the same figures from the same document,
// whatever the Go types of its values.
func TestExtractDReadsWhatExtractReadsOfTheMarshalledDocument(t *testing.T) {
	doc := bson.D{
		{Key: "uptimeMillis", Value: int64(123456789)},
		{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(4096)}, {Key: "supported", Value: true}}},
		{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{
			{Key: "read", Value: bson.D{
				{Key: "totalTickets", Value: int32(128)}, {Key: "out", Value: 7}, {Key: "available", Value: uint32(121)},
				{Key: "normalPriority", Value: bson.D{{Key: "queueLength", Value: int64(1) << 40}, {Key: "finishedProcessing", Value: float32(2.5)}}},
				{Key: "lowPriority", Value: bson.D{{Key: "queueLength", Value: math.NaN()}, {Key: "addedToQueue", Value: math.Inf(1)},
					{Key: "removedFromQueue", Value: "12"}, {Key: "canceled", Value: int8(-3)}}},
			}},
			// The write section is a number where a document is expected:
			// every path through it is absent.
			{Key: "write", Value: int32(5)},
			{Key: "monitor", Value: bson.D{{Key: "timesDecreased", Value: int16(9)}, {Key: "timesIncreased", Value: false}}},
		}}}},
		// The first of two elements of one name wins, as a raw lookup reads.
		{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "operationsShed", Value: int64(3)}, {Key: "operationsShed", Value: int64(99)}}}}},
		{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "lowMarkBytes", Value: int64(1)}}}}},
		{Key: "tcmalloc", Value: bson.D{{Key: "generic", Value: bson.D{{Key: "heap_size", Value: 0.1 + 0.2}, {Key: "current_allocated_bytes", Value: uint8(200)}}}}},
		{Key: "repl", Value: bson.D{{Key: "ismaster", Value: true}}},
		{Key: "connections", Value: bson.D{{Key: "current", Value: bson.A{int32(1)}}, {Key: "available", Value: nil}}},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want, got := Extract(raw), ExtractD(doc)
	if len(want) < 10 {
		t.Fatalf("the marshalled document gave only %d fields (%v); the test document must exercise the table", len(want), want)
	}
	if len(got) != len(want) {
		t.Errorf("ExtractD gave %d fields, Extract %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: ExtractD %v (present %v), Extract %v", name, g, ok, w)
		}
	}
	// Paths the table does not name, read with both lookups.
	rawGet, dGet := DocLookup(ServerStatus, raw), DLookup(ServerStatus, doc)
	for _, path := range []string{"mem", "mem.supported", "queues.execution.write", "queues.execution.write.out", "queues.execution.read.lowPriority.queueLength",
		"queues.execution.read.lowPriority.removedFromQueue", "queryMemory.loadShedding.lowMarkBytes", "connections.current", "connections.available", "", ".", "mem."} {
		w, wok := rawGet(ServerStatus, path)
		g, gok := dGet(ServerStatus, path)
		if w != g || wok != gok {
			t.Errorf("%q: DLookup (%v, %v), DocLookup (%v, %v)", path, g, gok, w, wok)
		}
	}
	if _, ok := dGet(ReplSetGetStatus, "uptimeMillis"); ok {
		t.Error("DLookup read a serverStatus path for replSetGetStatus")
	}
}
