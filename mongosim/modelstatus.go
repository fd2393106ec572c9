package mongosim

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/model"
)

// The serverStatus sections the model answers, as functions of a node, so
// the wire server and a virtual-time trial (which runs the model without
// the wire) report the same document. The caller holds whatever lock
// guards the node.

// ModelStatus is the part of serverStatus a member's model determines:
// uptime, mem, queues, queryMemory, tcmalloc, and the simulation marker.
func ModelStatus(n *model.Node, uptime time.Duration) bson.D {
	return bson.D{
		{Key: "process", Value: "mongod"},
		{Key: "uptime", Value: float64(int64(uptime / time.Second))},
		{Key: "uptimeMillis", Value: int64(uptime / time.Millisecond)},
		{Key: "mem", Value: bson.D{{Key: "bits", Value: int32(64)}, {Key: "resident", Value: int32(n.RSS() >> 20)}, {Key: "supported", Value: true}}},
		{Key: "queues", Value: QueuesSection(n)},
		{Key: "queryMemory", Value: QueryMemorySection(n)},
		{Key: "tcmalloc", Value: TcmallocSection(n)},
		{Key: "mongosim", Value: append(simulatedSection(), bson.E{Key: "spillIO", Value: SpillIOSection(n)})},
	}
}

// SpillIOSection is the simulated host's spill I/O since the member
// started (serverStatus.mongosim.spillIO; mongod has no such section):
// bytes spills wrote into the page cache, read back (of which from the
// disk), written back to the disk, freed unread with their files, held
// unread by live files, and the page cache's dirty bytes now.
func SpillIOSection(n *model.Node) bson.D {
	io := n.SpillIO()
	return bson.D{
		{Key: "writtenBytes", Value: int64(io.Written)}, {Key: "readBackBytes", Value: int64(io.ReadBack)},
		{Key: "diskReadBytes", Value: int64(io.DiskRead)}, {Key: "writtenBackBytes", Value: int64(io.WrittenBack)},
		{Key: "unreadFreedBytes", Value: int64(io.Unread)}, {Key: "liveUnreadBytes", Value: int64(io.LiveUnread)},
		{Key: "dirtyBytes", Value: int64(io.Dirty)},
	}
}

// QueuesSection is serverStatus.queues in master's shape.
func QueuesSection(n *model.Node) bson.D {
	pool := func(write, low bool) bson.D {
		p := n.Pool(write, low)
		return bson.D{
			{Key: "out", Value: int32(p.Out)}, {Key: "available", Value: int32(max(p.Total-p.Out, 0))}, {Key: "totalTickets", Value: int32(p.Total)},
			{Key: "addedToQueue", Value: p.AddedToQueue}, {Key: "removedFromQueue", Value: p.RemovedFromQueue},
			{Key: "queueLength", Value: int64(p.QueueLength)}, {Key: "queuedOperationsTotalAdmissions", Value: p.QueuedAdmissions},
			{Key: "startedProcessing", Value: p.StartedProcessing}, {Key: "processing", Value: int64(p.Out)},
			{Key: "finishedProcessing", Value: p.FinishedProcessing}, {Key: "totalTimeProcessingMicros", Value: p.TotalTimeProcessingMicros},
			{Key: "canceled", Value: p.Canceled}, {Key: "newAdmissions", Value: p.NewAdmissions},
			{Key: "totalTimeQueuedMicros", Value: p.TotalTimeQueuedMicros},
		}
	}
	rw := func(write bool) bson.D {
		normal, low := n.Pool(write, false), n.Pool(write, true)
		out, total := normal.Out, normal.Total
		if n.UsesPrioritization() {
			out, total = out+low.Out, total+low.Total
		}
		return bson.D{{Key: "lowPriority", Value: pool(write, true)}, {Key: "normalPriority", Value: pool(write, false)},
			{Key: "out", Value: int32(out)}, {Key: "available", Value: int32(max(total-out, 0))}, {Key: "totalTickets", Value: int32(total)}}
	}
	m := n.Monitor()
	p := n.Params()
	return bson.D{{Key: "execution", Value: bson.D{
		{Key: "usesThroughputProbing", Value: true},
		{Key: "usesPrioritization", Value: n.UsesPrioritization()},
		{Key: "deprioritizationGate", Value: p.DeprioritizationGate},
		{Key: "heuristicDeprioritization", Value: p.HeuristicDeprioritization},
		{Key: "totalDeprioritizations", Value: n.TotalDeprioritizations},
		{Key: "heuristicDeprioritizationThreshold", Value: int32(p.DeprioritizeThreshold)},
		{Key: "read", Value: rw(false)},
		{Key: "write", Value: rw(true)},
		{Key: "monitor", Value: bson.D{
			{Key: "timesDecreased", Value: m.TimesDecreased}, {Key: "timesIncreased", Value: m.TimesIncreased},
			{Key: "totalAmountDecreased", Value: m.TotalAmountDecreased}, {Key: "totalAmountIncreased", Value: m.TotalAmountIncreased},
			{Key: "resizeDurationMicros", Value: int64(0)}, {Key: "timesProbedStable", Value: m.TimesProbedStable},
			{Key: "timesProbedUp", Value: m.TimesProbedUp}, {Key: "timesProbedDown", Value: m.TimesProbedDown}}},
	}}}
}

// QueryMemorySection is serverStatus.queryMemory; empty when the shedder
// is off, as mongod leaves it.
func QueryMemorySection(n *model.Node) bson.D {
	if !n.SheddingEnabled() {
		return bson.D{}
	}
	limit := n.Hardware().MemLimitBytes
	p := n.Params()
	return bson.D{{Key: "loadShedding", Value: bson.D{
		{Key: "currentUsageBytes", Value: n.RSSSample()},
		{Key: "lowMarkBytes", Value: int64(float64(limit) * p.ShedLowPercent / 100)},
		{Key: "highMarkBytes", Value: int64(float64(limit) * p.ShedHighPercent / 100)},
		{Key: "memLimitBytes", Value: limit},
		{Key: "operationsShed", Value: n.OperationsShed},
		{Key: "operationsShedQueued", Value: n.OperationsShedQueued},
	}}}
}

// TcmallocSection is serverStatus.tcmalloc's generic part. Its tracked
// bytes (operations' and idle cursors') are the node's running total, not
// a walk of its operations: it is read every second.
func TcmallocSection(n *model.Node) bson.D {
	return bson.D{{Key: "generic", Value: bson.D{
		{Key: "current_allocated_bytes", Value: n.HostStats().InUseBytes},
		{Key: "heap_size", Value: n.RSS()},
		{Key: "tracked_query_bytes", Value: n.TrackedTotal()}}}}
}
