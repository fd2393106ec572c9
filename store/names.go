package store

// The names two layers share through the schema: the phases a trial's
// records are keyed by, and the sample fields collect writes and metric
// reads. Both are plain strings on disk (Results.PhaseStarts,
// Sample.Values), so the types are aliases of string: the maps keep their
// JSON shape, and a name written through a constant is checked by the
// compiler where a literal would only make a metric silently absent.

// Phase names a phase of a trial (a key of Results.PhaseStarts and of
// trial.json's phases).
type Phase = string

// The phases of a storm trial, in order, and the end of the trial.
const (
	PhaseWarmup   Phase = "warmup"
	PhaseStorm    Phase = "storm"
	PhaseRecovery Phase = "recovery"
	// PhaseEnd is when the trial ended: a key of Results.PhaseStarts, not
	// a phase of its own.
	PhaseEnd Phase = "end"
)

// Phases are the phases of a storm trial in order (PhaseEnd excluded).
var Phases = []Phase{PhaseWarmup, PhaseStorm, PhaseRecovery}

// SampleField names a value of Sample.Values: collect's name for one
// server statistic, whichever of the server's paths it was read from.
type SampleField = string

// The sample fields: collect's extractor table writes them and metric
// reads them (metric's tests fail when a metric reads a field the table
// does not write).
const (
	FieldUptimeMillis SampleField = "uptimeMillis"
	FieldResidentMB   SampleField = "residentMB"

	FieldReadTotalTickets  SampleField = "read.totalTickets"
	FieldReadOut           SampleField = "read.out"
	FieldReadAvailable     SampleField = "read.available"
	FieldWriteTotalTickets SampleField = "write.totalTickets"
	FieldWriteOut          SampleField = "write.out"

	FieldReadNormalQueueLength      SampleField = "read.normal.queueLength"
	FieldReadLowQueueLength         SampleField = "read.low.queueLength"
	FieldReadLowAddedToQueue        SampleField = "read.low.addedToQueue"
	FieldReadLowRemovedFromQueue    SampleField = "read.low.removedFromQueue"
	FieldReadLowCanceled            SampleField = "read.low.canceled"
	FieldReadNormalRemovedFromQueue SampleField = "read.normal.removedFromQueue"
	FieldReadNormalCanceled         SampleField = "read.normal.canceled"
	FieldReadFinishedProcessing     SampleField = "read.finishedProcessing"
	FieldMonitorTimesDecreased      SampleField = "monitor.timesDecreased"
	FieldMonitorTimesIncreased      SampleField = "monitor.timesIncreased"

	FieldQueryMemoryCurrentUsageBytes    SampleField = "queryMemory.currentUsageBytes"
	FieldQueryMemoryLowMarkBytes         SampleField = "queryMemory.lowMarkBytes"
	FieldQueryMemoryHighMarkBytes        SampleField = "queryMemory.highMarkBytes"
	FieldQueryMemoryMemLimitBytes        SampleField = "queryMemory.memLimitBytes"
	FieldQueryMemoryOperationsShed       SampleField = "queryMemory.operationsShed"
	FieldQueryMemoryOperationsShedQueued SampleField = "queryMemory.operationsShedQueued"

	FieldTcmallocAllocatedBytes     SampleField = "tcmalloc.allocatedBytes"
	FieldTcmallocHeapBytes          SampleField = "tcmalloc.heapBytes"
	FieldTcmallocPageheapFreeBytes  SampleField = "tcmalloc.pageheapFreeBytes"
	FieldSpillsSort                 SampleField = "spills.sort"
	FieldSpillsSortBytes            SampleField = "spills.sortBytes"
	FieldSpillsGroup                SampleField = "spills.group"
	FieldSpillsGroupBytes           SampleField = "spills.groupBytes"
	FieldSpillsSetWindowFields      SampleField = "spills.setWindowFields"
	FieldSpillsSetWindowFieldsBytes SampleField = "spills.setWindowFieldsBytes"

	// The simulated host's spill I/O (mongosim only: serverStatus.mongosim.spillIO),
	// bytes since the member started; a real server reports none of them.
	FieldSimSpillWrittenBytes     SampleField = "sim.spillWrittenBytes"
	FieldSimSpillReadBackBytes    SampleField = "sim.spillReadBackBytes"
	FieldSimSpillDiskReadBytes    SampleField = "sim.spillDiskReadBytes"
	FieldSimSpillWrittenBackBytes SampleField = "sim.spillWrittenBackBytes"
	FieldSimSpillUnreadFreedBytes SampleField = "sim.spillUnreadFreedBytes"
	FieldSimSpillLiveUnreadBytes  SampleField = "sim.spillLiveUnreadBytes"
	FieldSimPageCacheDirtyBytes   SampleField = "sim.pageCacheDirtyBytes"

	FieldConnectionsCurrent      SampleField = "connections.current"
	FieldConnectionsAvailable    SampleField = "connections.available"
	FieldConnectionsTotalCreated SampleField = "connections.totalCreated"
	FieldOpcountersInsert        SampleField = "opcounters.insert"
	FieldOpcountersQuery         SampleField = "opcounters.query"
	FieldOpcountersUpdate        SampleField = "opcounters.update"
	FieldOpcountersDelete        SampleField = "opcounters.delete"
	FieldOpcountersGetmore       SampleField = "opcounters.getmore"
	FieldOpcountersCommand       SampleField = "opcounters.command"

	// The $currentOp census (collect.Census) of a sampled member's active
	// operations: how many run and how many wait for a ticket, their
	// tracked bytes (inUseTrackedMemBytes) in all, and by place
	// (CensusTrackedField of each of Queues; idle cursors' are not in
	// FieldCensusTrackedBytes, which counts operations).
	FieldCensusRunning      SampleField = "census.running"
	FieldCensusQueued       SampleField = "census.queued"
	FieldCensusTrackedBytes SampleField = "census.trackedBytes"

	FieldReplIsWritablePrimary SampleField = "repl.isWritablePrimary"
	FieldReplMyState           SampleField = "repl.myState"
	FieldReplTerm              SampleField = "repl.term"
)
