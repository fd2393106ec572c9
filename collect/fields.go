// Package collect turns what the server reports into series: a table of
// named field extractors over serverStatus (in the manner of mongostat),
// and rates computed from real sample timestamps that survive counter
// resets and a change of primary.
package collect

import (
	"math"
	"reflect"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"
	"github.com/qmlsab/qmlsab/store"
)

// Sources are the documents a field is read from. A live sample reads
// serverStatus; an FTDC sample (diagnostic.data) holds serverStatus,
// replSetGetStatus and other collectors' replies side by side.
const (
	ServerStatus     = "serverStatus"
	ReplSetGetStatus = "replSetGetStatus"
)

// Field is a named value read from a server document. Paths are tried in
// order, so one name covers the section's moves between releases; a field
// none of whose paths exist is absent from the sample, not zero.
type Field struct {
	Name store.SampleField
	// Counter marks cumulative counters (rates are taken of them).
	Counter bool
	// Source is the document the paths are in (ServerStatus when empty).
	Source string
	Paths  []string
}

// Fields is the extractor table, for live samples and FTDC samples alike.
// Execution queues: up to 6.0 tickets are wiredTiger.concurrentTransactions
// (out, available, totalTickets); 7.0 adds the pools' queue statistics
// there (normalPriority, lowPriority under prioritization) and the
// throughput-probing monitor; 8.0 moved them to queues.execution
// (normalPriority only); master adds lowPriority pools and more.
var Fields = []Field{
	{Name: store.FieldUptimeMillis, Paths: []string{"uptimeMillis"}},
	{Name: store.FieldResidentMB, Paths: []string{"mem.resident"}},
	{Name: store.FieldReadTotalTickets, Paths: []string{"queues.execution.read.totalTickets", "wiredTiger.concurrentTransactions.read.totalTickets"}},
	{Name: store.FieldReadOut, Paths: []string{"queues.execution.read.out", "wiredTiger.concurrentTransactions.read.out"}},
	{Name: store.FieldReadAvailable, Paths: []string{"queues.execution.read.available", "wiredTiger.concurrentTransactions.read.available"}},
	{Name: store.FieldWriteTotalTickets, Paths: []string{"queues.execution.write.totalTickets", "wiredTiger.concurrentTransactions.write.totalTickets"}},
	{Name: store.FieldWriteOut, Paths: []string{"queues.execution.write.out", "wiredTiger.concurrentTransactions.write.out"}},
	{Name: store.FieldReadNormalQueueLength, Paths: []string{"queues.execution.read.normalPriority.queueLength", "wiredTiger.concurrentTransactions.read.normalPriority.queueLength"}},
	{Name: store.FieldReadLowQueueLength, Paths: []string{"queues.execution.read.lowPriority.queueLength", "wiredTiger.concurrentTransactions.read.lowPriority.queueLength"}},
	{Name: store.FieldReadLowAddedToQueue, Counter: true, Paths: []string{"queues.execution.read.lowPriority.addedToQueue", "wiredTiger.concurrentTransactions.read.lowPriority.addedToQueue"}},
	{Name: store.FieldReadLowRemovedFromQueue, Counter: true, Paths: []string{"queues.execution.read.lowPriority.removedFromQueue", "wiredTiger.concurrentTransactions.read.lowPriority.removedFromQueue"}},
	{Name: store.FieldReadLowCanceled, Counter: true, Paths: []string{"queues.execution.read.lowPriority.canceled", "wiredTiger.concurrentTransactions.read.lowPriority.canceled"}},
	{Name: store.FieldReadNormalRemovedFromQueue, Counter: true, Paths: []string{"queues.execution.read.normalPriority.removedFromQueue", "wiredTiger.concurrentTransactions.read.normalPriority.removedFromQueue"}},
	{Name: store.FieldReadNormalCanceled, Counter: true, Paths: []string{"queues.execution.read.normalPriority.canceled", "wiredTiger.concurrentTransactions.read.normalPriority.canceled"}},
	{Name: store.FieldReadFinishedProcessing, Counter: true, Paths: []string{"queues.execution.read.normalPriority.finishedProcessing", "wiredTiger.concurrentTransactions.read.normalPriority.finishedProcessing"}},
	{Name: store.FieldMonitorTimesDecreased, Counter: true, Paths: []string{"queues.execution.monitor.timesDecreased", "wiredTiger.concurrentTransactions.monitor.timesDecreased"}},
	{Name: store.FieldMonitorTimesIncreased, Counter: true, Paths: []string{"queues.execution.monitor.timesIncreased", "wiredTiger.concurrentTransactions.monitor.timesIncreased"}},
	{Name: store.FieldQueryMemoryCurrentUsageBytes, Paths: []string{"queryMemory.loadShedding.currentUsageBytes"}},
	{Name: store.FieldQueryMemoryLowMarkBytes, Paths: []string{"queryMemory.loadShedding.lowMarkBytes"}},
	{Name: store.FieldQueryMemoryHighMarkBytes, Paths: []string{"queryMemory.loadShedding.highMarkBytes"}},
	{Name: store.FieldQueryMemoryMemLimitBytes, Paths: []string{"queryMemory.loadShedding.memLimitBytes"}},
	{Name: store.FieldQueryMemoryOperationsShed, Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShed"}},
	{Name: store.FieldQueryMemoryOperationsShedQueued, Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShedQueued"}},
	{Name: store.FieldTcmallocAllocatedBytes, Paths: []string{"tcmalloc.generic.current_allocated_bytes"}},
	{Name: store.FieldTcmallocHeapBytes, Paths: []string{"tcmalloc.generic.heap_size"}},
	{Name: store.FieldTcmallocPageheapFreeBytes, Paths: []string{"tcmalloc.tcmalloc.pageheap_free_bytes"}},
	// metrics.query's spill counters: $sort's since 6.0 under sort, the
	// other stages' since 7.0 under their names.
	{Name: store.FieldSpillsSort, Counter: true, Paths: []string{"metrics.query.sort.spillToDisk"}},
	{Name: store.FieldSpillsSortBytes, Counter: true, Paths: []string{"metrics.query.sort.spillToDiskBytes"}},
	{Name: store.FieldSpillsGroup, Counter: true, Paths: []string{"metrics.query.group.spills"}},
	{Name: store.FieldSpillsGroupBytes, Counter: true, Paths: []string{"metrics.query.group.spilledBytes"}},
	{Name: store.FieldSpillsSetWindowFields, Counter: true, Paths: []string{"metrics.query.setWindowFields.spills"}},
	{Name: store.FieldSpillsSetWindowFieldsBytes, Counter: true, Paths: []string{"metrics.query.setWindowFields.spilledBytes"}},
	// mongosim's simulated host: its spill I/O, for checking that the model
	// conserves it (a real mongod has no such section).
	{Name: store.FieldSimSpillWrittenBytes, Counter: true, Paths: []string{"mongosim.spillIO.writtenBytes"}},
	{Name: store.FieldSimSpillReadBackBytes, Counter: true, Paths: []string{"mongosim.spillIO.readBackBytes"}},
	{Name: store.FieldSimSpillDiskReadBytes, Counter: true, Paths: []string{"mongosim.spillIO.diskReadBytes"}},
	{Name: store.FieldSimSpillWrittenBackBytes, Counter: true, Paths: []string{"mongosim.spillIO.writtenBackBytes"}},
	{Name: store.FieldSimSpillUnreadFreedBytes, Counter: true, Paths: []string{"mongosim.spillIO.unreadFreedBytes"}},
	{Name: store.FieldSimSpillLiveUnreadBytes, Paths: []string{"mongosim.spillIO.liveUnreadBytes"}},
	{Name: store.FieldSimPageCacheDirtyBytes, Paths: []string{"mongosim.spillIO.dirtyBytes"}},
	{Name: store.FieldConnectionsCurrent, Paths: []string{"connections.current"}},
	{Name: store.FieldConnectionsAvailable, Paths: []string{"connections.available"}},
	{Name: store.FieldConnectionsTotalCreated, Counter: true, Paths: []string{"connections.totalCreated"}},
	{Name: store.FieldOpcountersInsert, Counter: true, Paths: []string{"opcounters.insert"}},
	{Name: store.FieldOpcountersQuery, Counter: true, Paths: []string{"opcounters.query"}},
	{Name: store.FieldOpcountersUpdate, Counter: true, Paths: []string{"opcounters.update"}},
	{Name: store.FieldOpcountersDelete, Counter: true, Paths: []string{"opcounters.delete"}},
	{Name: store.FieldOpcountersGetmore, Counter: true, Paths: []string{"opcounters.getmore"}},
	{Name: store.FieldOpcountersCommand, Counter: true, Paths: []string{"opcounters.command"}},
	// Replication state: serverStatus.repl mirrors hello (ismaster before
	// 5.0); replSetGetStatus (FTDC records it beside serverStatus) gives
	// the member's state (1 primary, 2 secondary) and the term, which
	// grows with every election.
	{Name: store.FieldReplIsWritablePrimary, Paths: []string{"repl.isWritablePrimary", "repl.ismaster"}},
	{Name: store.FieldReplMyState, Source: ReplSetGetStatus, Paths: []string{"myState"}},
	{Name: store.FieldReplTerm, Source: ReplSetGetStatus, Paths: []string{"term"}},
}

// Lookup reads the number at a dotted path of one source document; ok is
// false when the path is absent or not a number.
type Lookup func(source, path string) (float64, bool)

// ExtractWith reads every field of the table that get has.
func ExtractWith(get Lookup) map[string]float64 {
	out := make(map[string]float64, len(Fields))
	for _, f := range Fields {
		src := f.Source
		if src == "" {
			src = ServerStatus
		}
		for _, p := range f.Paths {
			if x, ok := get(src, p); ok {
				out[f.Name] = x
				break
			}
		}
	}
	return out
}

// Extract reads every field present in a serverStatus document.
func Extract(doc bson.Raw) map[string]float64 { return ExtractWith(DocLookup(ServerStatus, doc)) }

// ExtractD reads every field present in a serverStatus document built in
// this process (the virtual engine's model status) without marshalling
// it: the same table, and each value read as Extract reads its marshalled
// form (DLookup).
func ExtractD(doc bson.D) map[string]float64 { return ExtractWith(DLookup(ServerStatus, doc)) }

// DLookup reads the fields of source from a document built in this
// process, as DocLookup reads the same document marshalled: a path goes
// through nested bson.D values (the first element of a name wins, as in
// a raw lookup); doubles, float32 and Go's integer types are numbers,
// booleans 1 or 0; NaN or infinite doubles, other sources and values of
// any other type are absent.
func DLookup(source string, doc bson.D) Lookup {
	return func(src, path string) (float64, bool) {
		if src != source {
			return 0, false
		}
		v, ok := lookupD(doc, path)
		if !ok {
			return 0, false
		}
		return numberOf(v)
	}
}

// lookupD finds the value at a dotted path of nested bson.D documents.
func lookupD(doc bson.D, path string) (any, bool) {
	for {
		name, rest, more := strings.Cut(path, ".")
		var v any
		found := false
		for _, e := range doc {
			if e.Key == name {
				v, found = e.Value, true
				break
			}
		}
		if !found {
			return nil, false
		}
		if !more {
			return v, true
		}
		sub, isDoc := v.(bson.D)
		if !isDoc {
			return nil, false
		}
		doc, path = sub, rest
	}
}

// numberOf reads a Go value as DocLookup reads its marshalled BSON: each
// signed integer type and uint8 to uint32 by its value, float32 as the
// double it marshals to; uint, uint64 and other types are not read.
func numberOf(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case bool:
		if n {
			return 1, true
		}
		return 0, true
	case float64:
		x = n
	case float32:
		x = float64(n)
	case int, int8, int16, int32, int64:
		x = float64(reflect.ValueOf(n).Int())
	case uint8, uint16, uint32:
		x = float64(reflect.ValueOf(n).Uint())
	default:
		return 0, false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

// DocLookup reads the fields of source from a reply document: finite
// numbers as they are, booleans as 1 or 0 (as FTDC flattens them); other
// sources, other types and NaN or infinite doubles are absent, and so is
// everything in a document malformed at any depth (the driver's lookups
// panic on some that its Validate accepts).
func DocLookup(source string, doc bson.Raw) Lookup {
	doc = readable(doc)
	return func(src, path string) (float64, bool) {
		if src != source {
			return 0, false
		}
		v, err := doc.LookupErr(strings.Split(path, ".")...)
		if err != nil {
			return 0, false
		}
		if b, ok := v.BooleanOK(); ok {
			if b {
				return 1, true
			}
			return 0, true
		}
		x, ok := v.AsFloat64OK()
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	}
}

// readable is doc when it is well formed at every depth, else nil (a
// document with nothing in it).
func readable(doc bson.Raw) bson.Raw {
	if bsoncheck.Document(doc) != nil {
		return nil
	}
	return doc
}

// IsCounter reports whether a field is cumulative.
func IsCounter(name string) bool {
	for _, f := range Fields {
		if f.Name == name {
			return f.Counter
		}
	}
	return false
}
