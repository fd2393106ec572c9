package model

import "time"

// Host is the machine a member runs on, beyond what mongod itself tracks:
// the memory the kernel's OOM killer counts, the WiredTiger cache, the
// allocator, untracked per-operation memory and the page cache spill files
// are written through. A nil Hardware.Host takes DefaultHostFor the
// machine's memory. Every field has a documented default (an Atlas M50)
// and a plausible range; docs/model-host.md gives the sources.
type Host struct {
	// OtherProcessBytes is resident memory of the other processes on the
	// host (Atlas's automation, monitoring and backup agents, sshd, ...).
	// Default 768 MiB; plausible 256 MiB - 2 GiB.
	OtherProcessBytes int64 `json:"other_process_bytes"`
	// KernelBytes is memory the kernel keeps for itself inside MemTotal
	// (slab, page tables, socket buffers). Default 512 MiB; plausible
	// 256 MiB - 1.5 GiB.
	KernelBytes int64 `json:"kernel_bytes"`

	// DirtyRatio and DirtyBackgroundRatio are vm.dirty_ratio and
	// vm.dirty_background_ratio, percent of dirtyable memory (free pages
	// plus page cache). Linux defaults 20 and 10.
	DirtyRatio           float64 `json:"dirty_ratio"`
	DirtyBackgroundRatio float64 `json:"dirty_background_ratio"`

	// MongodBaseBytes is mongod's heap outside the WiredTiger cache and
	// query memory with no load (code, catalog, replication buffers, idle
	// connections). Default 1 GiB; plausible 0.5 - 2 GiB.
	MongodBaseBytes int64 `json:"mongod_base_bytes"`
	// WTCacheBytes is the WiredTiger cache size; 0 is mongod's rule,
	// max(256 MiB, 50 % of (memory - 1 GiB)): 15.5 GiB on an M50.
	WTCacheBytes int64 `json:"wt_cache_bytes"`
	// WTEvictionTarget is WiredTiger's eviction_target (percent of the
	// cache): eviction keeps a cache under a read load near it. Default 80.
	WTEvictionTarget float64 `json:"wt_eviction_target"`
	// DataSetBytes is the in-cache size of the data the storm reads (its
	// collection, uncompressed). The cache fills towards min(DataSetBytes,
	// target) as reads miss. Default 12 GiB; plausible 2 - 64 GiB.
	DataSetBytes int64 `json:"data_set_bytes"`
	// WTInitialFill is the fraction of that fill the cache holds when the
	// process starts the trial (after the data load and warm-up); the
	// storm's reads fill the rest. Default 0.5; range 0 - 1.
	WTInitialFill float64 `json:"wt_initial_fill"`

	// ReleaseBytesPerSec is how fast the allocator returns free pages it
	// holds to the OS (tcmallocReleaseRate as 8.0 defines it, bytes per
	// second, by the background thread). Freed memory stays resident until
	// then (or until it is reused). Default 64 MiB/s; plausible 0 - 1 GiB/s.
	ReleaseBytesPerSec float64 `json:"release_bytes_per_sec"`

	// UntrackedPerOpBytes is resident memory of a live operation that no
	// memory tracker counts (its thread's touched stack, OperationContext,
	// CurOp, plan tree, storage cursor). Default 512 KiB; plausible
	// 128 KiB - 2 MiB.
	UntrackedPerOpBytes int64 `json:"untracked_per_op_bytes"`
	// UntrackedPerCursorBytes is the same for an idle cursor (ClientCursor,
	// plan executor, storage session). Default 128 KiB; plausible
	// 32 KiB - 1 MiB.
	UntrackedPerCursorBytes int64 `json:"untracked_per_cursor_bytes"`
	// SpillRunBufferBytes is the read buffer of one spilled run while a
	// cursor merges its runs (the sorter's file iterator: 64 KiB blocks).
	SpillRunBufferBytes int64 `json:"spill_run_buffer_bytes"`
	// ReplyBufferUntracked counts a getMore's reply batch (the BSON it
	// builds as it emits documents) as untracked memory until the op ends.
	ReplyBufferUntracked bool `json:"reply_buffer_untracked"`
}

// DefaultHost is an Atlas M50's host.
func DefaultHost() Host {
	return Host{
		OtherProcessBytes: 768 << 20, KernelBytes: 512 << 20,
		DirtyRatio: 20, DirtyBackgroundRatio: 10,
		MongodBaseBytes: 1 << 30, WTEvictionTarget: 80, DataSetBytes: 12 << 30, WTInitialFill: 0.5,
		ReleaseBytesPerSec:  64 << 20,
		UntrackedPerOpBytes: 512 << 10, UntrackedPerCursorBytes: 128 << 10, SpillRunBufferBytes: 64 << 10,
		ReplyBufferUntracked: true,
	}
}

// m50Memory is the memory of the machine DefaultHost describes.
const m50Memory = 32 << 30

// DefaultHostFor is DefaultHost for a machine of memLimit bytes: the
// memory outside mongod (other processes, the kernel) and mongod's own
// base are an M50's shares of its memory, so that a small simulated
// member (a test's 2 GiB, say) keeps an M50's proportions instead of
// spending its whole memory on an M50's fixed sizes.
func DefaultHostFor(memLimit int64) Host {
	h := DefaultHost()
	if memLimit <= 0 || memLimit == m50Memory {
		return h
	}
	scale := func(b int64) int64 { return int64(float64(b) * float64(memLimit) / m50Memory) }
	h.OtherProcessBytes = scale(h.OtherProcessBytes)
	h.KernelBytes = scale(h.KernelBytes)
	h.MongodBaseBytes = scale(h.MongodBaseBytes)
	return h
}

// WTCacheSize is the WiredTiger cache size mongod picks for this memory.
func (h Host) WTCacheSize(memLimit int64) int64 {
	if h.WTCacheBytes > 0 {
		return h.WTCacheBytes
	}
	return max(256<<20, (memLimit-(1<<30))/2)
}

// hostState is a member's host: allocator, WiredTiger cache, untracked
// memory and the page cache.
type hostState struct {
	h         Host
	ram       int64
	alloc     allocator
	wt        wtCache
	pc        pageCache
	untracked int64 // untracked resident bytes of live ops and cursors
	used      int64 // what the OOM killer weighs: RSS + others + kernel + dirty
	inUse     int64
	// The last update's resident bytes and dirty pages, and whether the
	// allocator held no free pages after it: an update with the same
	// memory in use and the same dirty pages then changes nothing.
	rss       int64
	usedDirty float64
	usedClean float64
	settled   bool
}

func newHostState(hw Hardware) *hostState {
	h := *hw.Host
	s := &hostState{h: h, ram: hw.MemLimitBytes}
	s.wt = newWTCache(h.WTCacheSize(hw.MemLimitBytes), h.WTEvictionTarget, h.DataSetBytes, h.WTInitialFill)
	s.pc = newPageCache(h.DirtyRatio, h.DirtyBackgroundRatio)
	s.alloc = allocator{releaseRate: h.ReleaseBytesPerSec, perTick: h.ReleaseBytesPerSec * Tick.Seconds()}
	return s
}

// dirtyable is what Linux calls dirtyable memory: free pages plus the page
// cache, i.e. everything that is neither anonymous memory nor the kernel's.
func (s *hostState) dirtyable(rss int64) int64 {
	return max(0, s.ram-rss-s.h.OtherProcessBytes-s.h.KernelBytes)
}

// update recomputes resident memory after a tick of dt and reports whether
// the kernel would OOM-kill (host memory that cannot be reclaimed at once
// exceeds the machine's).
func (s *hostState) update(tracked int64, overhead float64, dt time.Duration) (rss int64, oom bool) {
	inUse := s.inUseWith(tracked, overhead)
	if s.settled && inUse == s.inUse && s.pc.dirty == s.usedDirty && s.pc.clean == s.usedClean {
		// Nothing moved since the last update, and the allocator holds no
		// free pages: every step below would give what it gave then (an
		// idle member's ticks, thousands a second of model time).
		return s.rss, s.used > s.ram
	}
	s.inUse = inUse
	rss = s.alloc.update(s.inUse, dt)
	free := s.dirtyable(rss)
	s.pc.setDirtyable(free)
	// The page cache lives in what the processes and the kernel leave:
	// reclaim evicts clean pages to make room (dirty ones wait for
	// writeback).
	s.pc.reclaim(float64(free))
	s.used = rss + s.h.OtherProcessBytes + s.h.KernelBytes + int64(s.pc.dirty)
	s.rss, s.usedDirty, s.usedClean, s.settled = rss, s.pc.dirty, s.pc.clean, s.alloc.held == 0
	return rss, s.used > s.ram
}

func (s *hostState) inUseWith(tracked int64, overhead float64) int64 {
	return s.h.MongodBaseBytes + s.wt.fill + int64(float64(tracked)*overhead) + s.untracked
}

// unchanged reports whether an update with tracked bytes would return
// what the last one did and change nothing.
func (s *hostState) unchanged(tracked int64, overhead float64) bool {
	return s.settled && s.inUseWith(tracked, overhead) == s.inUse && s.pc.dirty == s.usedDirty && s.pc.clean == s.usedClean
}

// HostStats is a member's host memory, for tests and observers.
type HostStats struct {
	InUseBytes, HeldFreeBytes, RSSBytes  int64
	WTCacheBytes, WTCacheSize            int64
	UntrackedBytes                       int64
	DirtyBytes, DirtyLimit, DirtyBgLimit int64
	HostUsedBytes                        int64
	WritersStalled                       int
	WrittenBackBytes, DroppedDirtyBytes  int64
}

// HostStats returns the host's memory.
func (n *Node) HostStats() HostStats {
	s := n.host
	return HostStats{InUseBytes: s.inUse, HeldFreeBytes: int64(s.alloc.held), RSSBytes: n.rss,
		WTCacheBytes: s.wt.fill, WTCacheSize: s.wt.size, UntrackedBytes: s.untracked,
		DirtyBytes: int64(s.pc.dirty), DirtyLimit: int64(s.pc.limit), DirtyBgLimit: int64(s.pc.bgLimit),
		HostUsedBytes: s.used, WritersStalled: n.stalled,
		WrittenBackBytes: int64(s.pc.writtenBack), DroppedDirtyBytes: int64(s.pc.dropped)}
}
