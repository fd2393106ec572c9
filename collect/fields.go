// Package collect turns what the server reports into series: a table of
// named field extractors over serverStatus (in the manner of mongostat),
// and rates computed from real sample timestamps that survive counter
// resets and a change of primary.
package collect

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"
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
	Name string
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
	{Name: "uptimeMillis", Paths: []string{"uptimeMillis"}},
	{Name: "residentMB", Paths: []string{"mem.resident"}},
	{Name: "read.totalTickets", Paths: []string{"queues.execution.read.totalTickets", "wiredTiger.concurrentTransactions.read.totalTickets"}},
	{Name: "read.out", Paths: []string{"queues.execution.read.out", "wiredTiger.concurrentTransactions.read.out"}},
	{Name: "read.available", Paths: []string{"queues.execution.read.available", "wiredTiger.concurrentTransactions.read.available"}},
	{Name: "write.totalTickets", Paths: []string{"queues.execution.write.totalTickets", "wiredTiger.concurrentTransactions.write.totalTickets"}},
	{Name: "write.out", Paths: []string{"queues.execution.write.out", "wiredTiger.concurrentTransactions.write.out"}},
	{Name: "read.normal.queueLength", Paths: []string{"queues.execution.read.normalPriority.queueLength", "wiredTiger.concurrentTransactions.read.normalPriority.queueLength"}},
	{Name: "read.low.queueLength", Paths: []string{"queues.execution.read.lowPriority.queueLength", "wiredTiger.concurrentTransactions.read.lowPriority.queueLength"}},
	{Name: "read.low.addedToQueue", Counter: true, Paths: []string{"queues.execution.read.lowPriority.addedToQueue", "wiredTiger.concurrentTransactions.read.lowPriority.addedToQueue"}},
	{Name: "read.low.removedFromQueue", Counter: true, Paths: []string{"queues.execution.read.lowPriority.removedFromQueue", "wiredTiger.concurrentTransactions.read.lowPriority.removedFromQueue"}},
	{Name: "read.low.canceled", Counter: true, Paths: []string{"queues.execution.read.lowPriority.canceled", "wiredTiger.concurrentTransactions.read.lowPriority.canceled"}},
	{Name: "read.normal.removedFromQueue", Counter: true, Paths: []string{"queues.execution.read.normalPriority.removedFromQueue", "wiredTiger.concurrentTransactions.read.normalPriority.removedFromQueue"}},
	{Name: "read.normal.canceled", Counter: true, Paths: []string{"queues.execution.read.normalPriority.canceled", "wiredTiger.concurrentTransactions.read.normalPriority.canceled"}},
	{Name: "read.finishedProcessing", Counter: true, Paths: []string{"queues.execution.read.normalPriority.finishedProcessing", "wiredTiger.concurrentTransactions.read.normalPriority.finishedProcessing"}},
	{Name: "monitor.timesDecreased", Counter: true, Paths: []string{"queues.execution.monitor.timesDecreased", "wiredTiger.concurrentTransactions.monitor.timesDecreased"}},
	{Name: "monitor.timesIncreased", Counter: true, Paths: []string{"queues.execution.monitor.timesIncreased", "wiredTiger.concurrentTransactions.monitor.timesIncreased"}},
	{Name: "queryMemory.currentUsageBytes", Paths: []string{"queryMemory.loadShedding.currentUsageBytes"}},
	{Name: "queryMemory.lowMarkBytes", Paths: []string{"queryMemory.loadShedding.lowMarkBytes"}},
	{Name: "queryMemory.highMarkBytes", Paths: []string{"queryMemory.loadShedding.highMarkBytes"}},
	{Name: "queryMemory.memLimitBytes", Paths: []string{"queryMemory.loadShedding.memLimitBytes"}},
	{Name: "queryMemory.operationsShed", Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShed"}},
	{Name: "queryMemory.operationsShedQueued", Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShedQueued"}},
	{Name: "tcmalloc.allocatedBytes", Paths: []string{"tcmalloc.generic.current_allocated_bytes"}},
	{Name: "tcmalloc.heapBytes", Paths: []string{"tcmalloc.generic.heap_size"}},
	{Name: "tcmalloc.pageheapFreeBytes", Paths: []string{"tcmalloc.tcmalloc.pageheap_free_bytes"}},
	// metrics.query's spill counters: $sort's since 6.0 under sort, the
	// other stages' since 7.0 under their names.
	{Name: "spills.sort", Counter: true, Paths: []string{"metrics.query.sort.spillToDisk"}},
	{Name: "spills.sortBytes", Counter: true, Paths: []string{"metrics.query.sort.spillToDiskBytes"}},
	{Name: "spills.group", Counter: true, Paths: []string{"metrics.query.group.spills"}},
	{Name: "spills.groupBytes", Counter: true, Paths: []string{"metrics.query.group.spilledBytes"}},
	{Name: "spills.setWindowFields", Counter: true, Paths: []string{"metrics.query.setWindowFields.spills"}},
	{Name: "spills.setWindowFieldsBytes", Counter: true, Paths: []string{"metrics.query.setWindowFields.spilledBytes"}},
	{Name: "connections.current", Paths: []string{"connections.current"}},
	{Name: "connections.available", Paths: []string{"connections.available"}},
	{Name: "connections.totalCreated", Counter: true, Paths: []string{"connections.totalCreated"}},
	{Name: "opcounters.insert", Counter: true, Paths: []string{"opcounters.insert"}},
	{Name: "opcounters.query", Counter: true, Paths: []string{"opcounters.query"}},
	{Name: "opcounters.update", Counter: true, Paths: []string{"opcounters.update"}},
	{Name: "opcounters.delete", Counter: true, Paths: []string{"opcounters.delete"}},
	{Name: "opcounters.getmore", Counter: true, Paths: []string{"opcounters.getmore"}},
	{Name: "opcounters.command", Counter: true, Paths: []string{"opcounters.command"}},
	// Replication state: serverStatus.repl mirrors hello (ismaster before
	// 5.0); replSetGetStatus (FTDC records it beside serverStatus) gives
	// the member's state (1 primary, 2 secondary) and the term, which
	// grows with every election.
	{Name: "repl.isWritablePrimary", Paths: []string{"repl.isWritablePrimary", "repl.ismaster"}},
	{Name: "repl.myState", Source: ReplSetGetStatus, Paths: []string{"myState"}},
	{Name: "repl.term", Source: ReplSetGetStatus, Paths: []string{"term"}},
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
