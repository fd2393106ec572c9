// Package collect turns what the server reports into series: a table of
// named field extractors over serverStatus (in the manner of mongostat),
// and rates computed from real sample timestamps that survive counter
// resets and a change of primary.
package collect

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Field is a named value read from serverStatus. Paths are tried in order,
// so one name covers the section's moves between releases; a field none of
// whose paths exist is absent from the sample, not zero.
type Field struct {
	Name string
	// Counter marks cumulative counters (rates are taken of them).
	Counter bool
	Paths   []string
}

// Fields is the extractor table. Shapes: 7.0 keeps tickets under
// wiredTiger.concurrentTransactions; 8.0 moved them to queues.execution
// (normalPriority only); master adds lowPriority pools and more.
var Fields = []Field{
	{Name: "uptimeMillis", Paths: []string{"uptimeMillis"}},
	{Name: "residentMB", Paths: []string{"mem.resident"}},
	{Name: "read.totalTickets", Paths: []string{"queues.execution.read.totalTickets", "wiredTiger.concurrentTransactions.read.totalTickets"}},
	{Name: "read.out", Paths: []string{"queues.execution.read.out", "wiredTiger.concurrentTransactions.read.out"}},
	{Name: "write.totalTickets", Paths: []string{"queues.execution.write.totalTickets", "wiredTiger.concurrentTransactions.write.totalTickets"}},
	{Name: "read.normal.queueLength", Paths: []string{"queues.execution.read.normalPriority.queueLength", "wiredTiger.concurrentTransactions.read.normalPriority.queueLength"}},
	{Name: "read.low.queueLength", Paths: []string{"queues.execution.read.lowPriority.queueLength"}},
	{Name: "read.low.addedToQueue", Counter: true, Paths: []string{"queues.execution.read.lowPriority.addedToQueue"}},
	{Name: "read.low.removedFromQueue", Counter: true, Paths: []string{"queues.execution.read.lowPriority.removedFromQueue"}},
	{Name: "read.low.canceled", Counter: true, Paths: []string{"queues.execution.read.lowPriority.canceled"}},
	{Name: "read.normal.removedFromQueue", Counter: true, Paths: []string{"queues.execution.read.normalPriority.removedFromQueue", "wiredTiger.concurrentTransactions.read.normalPriority.removedFromQueue"}},
	{Name: "read.normal.canceled", Counter: true, Paths: []string{"queues.execution.read.normalPriority.canceled", "wiredTiger.concurrentTransactions.read.normalPriority.canceled"}},
	{Name: "read.finishedProcessing", Counter: true, Paths: []string{"queues.execution.read.normalPriority.finishedProcessing", "wiredTiger.concurrentTransactions.read.normalPriority.finishedProcessing"}},
	{Name: "monitor.timesDecreased", Counter: true, Paths: []string{"queues.execution.monitor.timesDecreased", "wiredTiger.concurrentTransactions.monitor.timesDecreased"}},
	{Name: "queryMemory.currentUsageBytes", Paths: []string{"queryMemory.loadShedding.currentUsageBytes"}},
	{Name: "queryMemory.lowMarkBytes", Paths: []string{"queryMemory.loadShedding.lowMarkBytes"}},
	{Name: "queryMemory.highMarkBytes", Paths: []string{"queryMemory.loadShedding.highMarkBytes"}},
	{Name: "queryMemory.memLimitBytes", Paths: []string{"queryMemory.loadShedding.memLimitBytes"}},
	{Name: "queryMemory.operationsShed", Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShed"}},
	{Name: "queryMemory.operationsShedQueued", Counter: true, Paths: []string{"queryMemory.loadShedding.operationsShedQueued"}},
	{Name: "tcmalloc.allocatedBytes", Paths: []string{"tcmalloc.generic.current_allocated_bytes"}},
	{Name: "connections.current", Paths: []string{"connections.current"}},
	{Name: "opcounters.command", Counter: true, Paths: []string{"opcounters.command"}},
}

// Extract reads every field present in a serverStatus document.
func Extract(doc bson.Raw) map[string]float64 {
	out := make(map[string]float64, len(Fields))
	for _, f := range Fields {
		for _, p := range f.Paths {
			v, err := doc.LookupErr(strings.Split(p, ".")...)
			if err != nil {
				continue
			}
			if x, ok := v.AsFloat64OK(); ok {
				out[f.Name] = x
				break
			}
		}
	}
	return out
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
