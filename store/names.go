package store

// The names layers share through the schema: a trial's status, the clock
// it ran on, the phases its records are keyed by, the kinds of its events,
// and the sample fields collect writes and metric reads. All are plain
// strings on disk. Status, Clock, Phase and EventKind are defined types,
// declared here and only here: the JSON keeps its shape (a map keyed by a
// defined string type marshals as one keyed by string), and a value
// written as a literal instead of through a constant is a mistake the
// vocabulary's test (internal/vocabcheck) names by file and line.

// Status is a trial's place in its run (TrialStatus.Status).
type Status string

// Trial statuses.
const (
	Pending     Status = "pending"
	Valid       Status = "valid"
	Invalid     Status = "invalid"     // a harness fault; Reason says which
	Interrupted Status = "interrupted" // the run was stopped during the trial
)

// Clock is the clock a run's trials ran on (Manifest.Clock, Trial.Clock).
type Clock string

// Clocks a trial can run on.
const (
	// ClockVirtual runs the embedded set's model in model time, without
	// the wire, as fast as the CPU computes it (docs/benchmarks.md has the
	// engine's measured speed). Members are sampled through the same
	// serverStatus document and extractor table as over the wire.
	ClockVirtual Clock = "virtual"
	// ClockWall runs in real time behind the wire protocol: every storm
	// query, canary, sample and killOp is a real command. An imported
	// record and any target other than the embedded one ran on it.
	ClockWall Clock = "wall"
)

// Phase names a phase of a trial (a key of Results.PhaseStarts and of
// trial.json's phases, an event's phase), or a stage a trial's progress
// shows around its phases.
type Phase string

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

// The stages a trial's progress shows besides its phases; no record is
// keyed by them.
const (
	PhaseProvisioning Phase = "provisioning" // the arm's target is being started
	PhaseLoading      Phase = "loading"      // the workload's data is being loaded
	PhaseMergeOps     Phase = "merge ops"    // the merge workload's ops are running
	PhaseWriting      Phase = "writing"      // the trial's files are being written
)

// EventKind is the kind of an Event.
type EventKind string

// The kinds of events a trial records.
const (
	EventPhase   EventKind = "phase"   // a phase began
	EventPrimary EventKind = "primary" // a new primary was seen in the samples
	EventRestart EventKind = "restart" // a member came back as a new process
	// EventTopology is a new primary the workload's driver saw through its
	// topology monitoring.
	EventTopology EventKind = "topology"
	EventKill     EventKind = "kill"  // the killOp actor's kill
	EventFault    EventKind = "fault" // an injected fault began
)

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
