// Package model is mongosim's model of one mongod member under a memory
// storm: execution control, query memory and load shedding, stepped in
// 1 ms ticks over a clock the caller drives (virtual time for calibration
// and tests, the wall clock behind the wire server). It is deterministic
// for a seed.
//
// # Mechanisms and what they rest on
//
// Hardware. CPUs are shared by the running operations (processor sharing).
// Spill I/O is conserved (pagecache.go): a spilled run is serialised on a
// CPU into its query's file in the page cache, dirtying pages that
// writeback drains to the disk (an M50's gp3 volume: 125 MiB/s) and that
// pause their writer at vm.dirty_ratio; merging the runs reads every
// spilled byte back, from the pages the cache still holds (CPU) or from
// the disk, which writeback shares; a query's file is deleted when its
// cursor ends. The member reports the accounting (SpillIO).
//
// Host (host.go; docs/model-host.md). The kernel OOM-kills on host
// memory: RSS + other processes + kernel + dirty page cache. RSS is
// mongod's base, the WiredTiger cache's fill (sized by mongod's rule,
// filled by reads), tracked bytes, untracked per-op and per-cursor memory,
// and free pages the allocator has not yet released. Clean page cache
// holds what the processes leave and is evicted, oldest first, as they
// need it.
//
// Execution control (master). Read and write pools, each a normal pool
// (first come, first served) and a low-priority pool sized at the CPU count
// whose waiters wake fewest admissions first (OrderedTicketSemaphore).
// Every acquisition is an admission; an operation is deprioritized once it
// has taken executionControlHeuristicNumAdmissionsDeprioritizeThreshold (3)
// tickets, when executionControlDeprioritizationGate is on. An interrupted
// waiter leaves its queue without a ticket and counts as canceled.
// Operations yield every internalQueryExecYieldPeriodMS of time they ran
// (a real thread reaches its yield check while running, so the model
// counts CPU received and I/O wait, not wall time smeared by processor
// sharing), but never inside a spill-block read or while writing a run.
//
// Throughput probing, every 100 ms, on releases per second: up when the
// read and write pools together were exhausted, down otherwise (if peak use
// exceeded the minimum), keeping a move that improved (up) or held (down)
// throughput and moving the stable concurrency by an EMA (0.2). A read-only
// storm leaves the write pool idle, so probing walks the normal pools down
// while throughput holds, which is how the sweeper investigation's read pool fell from 128.
// The model starts the pools at the maximum (the investigation saw 128); mongod
// master would start at 2 × cores.
//
// Queries. A storm query's aggregate scans its input into a blocking stage
// that spills at its limit (internalQueryMaxBlockingSortMemoryUsageBytes for
// $sort and for the sort $setWindowFields puts before itself) and leaves
// its cursor holding merge buffers; each getMore is a new operation that
// reads its share of the spilled runs back block by block, a
// $setWindowFields getMore loading its partition first. A block's documents are emitted in a CPU burst far shorter than
// the shedder's 1 ms evaluation spacing, so a block yields one checkpoint.
// The deprioritization heuristic counts a query's admissions across its
// getMores (an inference: otherwise every batch would return to normal
// priority, and the investigation saw every aggregation waiting in the low-priority
// queue); each getMore keeps its own admission count for the queue order.
//
// Shedding (src/mongo/db/memory_tracking/query_memory_load_shedding.cpp).
// pressure = clamp((RSS% − low)/(high − low), 0, 1); hazard =
// ln2 · tracked/sizeReference · pressure/(1 − pressure); p = 1 − e^(−hazard·dt).
// The inline check runs only at checkpoints of ticket holders; its clock
// belongs to the query (it survives getMores), dt is capped at 1 s and
// evaluations closer than 1 ms are skipped with the time accruing; the
// first check above the low mark primes the clock and a check below it
// resets it; at or above the high mark p = 1. The queued-op sweeper (the sweeper
// investigation's fix) rolls the same hazard every RSS-monitor interval for eligible
// queued operations with dt = the interval; ownership is partitioned by
// queue state. The write-intent latch exempts operations that took a global
// IX; a $merge on a secondary forwards its writes and never does, unless
// the write-started flag (the partial-write investigation's fix) latches it when writing begins.
//
// # What the model shows, and where it parts from the investigation
//
// Since spill I/O is conserved and the virtual client has the Go driver's
// connection pool, no setting of the unknowns the joint fit searches
// reproduces the sweeper investigation: the in-server shedder alone (E)
// does not crash-loop where the killOp actor (D) holds. The embedded
// default is the nearest point; docs/investigations.md lists every
// residual.
package model
