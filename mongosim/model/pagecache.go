package model

import "math"

// pageCache is the Linux page cache that spill files are written through
// and read back from (mm/page-writeback.c, mm/vmscan.c), with every byte
// accounted for:
//   - a spill write dirties pages of its query's file;
//   - background writeback starts once dirty pages exceed
//     dirty_background_ratio of dirtyable memory and drains them, oldest
//     file first, at the disk's bandwidth (sharing the device with reads
//     that miss the cache); a written-back page stays cached, clean;
//   - a writer that finds dirty pages at dirty_ratio is paused in
//     balance_dirty_pages until writeback brings them under;
//   - clean pages are evicted, oldest first, when the page cache would
//     need memory the processes use (it holds what anonymous memory and
//     the kernel leave free); an evicted page of a live file is on disk;
//   - a read of a spilled run takes the pages the cache still holds from
//     memory (CPU) and the evicted ones from the disk, which caches them
//     again, clean;
//   - deleting a file drops its pages, dirty ones without writing them.
//
// Dirty and writeback pages are page cache the kernel cannot reclaim at
// once, so they count towards the OOM killer's view of memory; clean
// pages do not.
//
// Not modelled: the 30 s dirty_expire_centisecs writeback of pages that
// stay under the background limit (a spill file rarely lives that long
// under a storm), readahead, and the order among files of one age.
type pageCache struct {
	ratio, bgRatio float64
	limit, bgLimit float64
	// dirtyable is the dirtyable memory the limits were set from.
	dirtyable    int64
	limitsSet    bool
	dirty, clean float64
	files        map[int64]*spillFile
	fifo         []*spillFile // oldest dirtied first (the flusher's order)
	head         int
	// lru holds files with clean pages, oldest cleaned first (reclaim's
	// order); lruHead is its first live entry.
	lru     []*spillFile
	lruHead int

	// Conservation counters, bytes since the member started: what spill
	// writes put in the cache, what reads took back (from memory and
	// from the disk), what writeback wrote to the disk, what reclaim
	// evicted, and what deleted files took with them (dirty pages never
	// written; bytes never read back).
	written, readBack, diskRead float64
	writtenBack, evicted        float64
	dropped, unread             float64
}

// spillFile is one query's spill file: its bytes by where they are.
type spillFile struct {
	dirty, clean, cold float64 // cold: evicted, on the disk only
	written, read      float64
	runs               int
	deleted            bool
	inLRU              bool
}

// hitShare is the share of the file's pages the cache holds (reads are
// taken as spread evenly over the file).
func (f *spillFile) hitShare() float64 {
	total := f.dirty + f.clean + f.cold
	if total <= 0 {
		return 1
	}
	return (f.dirty + f.clean) / total
}

func newPageCache(ratio, bgRatio float64) pageCache {
	return pageCache{ratio: ratio, bgRatio: bgRatio, files: map[int64]*spillFile{}}
}

func (p *pageCache) setDirtyable(b int64) {
	if b == p.dirtyable && p.limitsSet {
		return // the limits it gave last (an update runs every tick)
	}
	p.dirtyable, p.limitsSet = b, true
	p.limit = float64(b) * p.ratio / 100
	p.bgLimit = float64(b) * p.bgRatio / 100
}

// overLimit is balance_dirty_pages' verdict: a writer must wait.
func (p *pageCache) overLimit() bool { return p.dirty >= p.limit }

// flushing reports whether background writeback runs.
func (p *pageCache) flushing() bool { return p.dirty > p.bgLimit }

func (p *pageCache) file(id int64) *spillFile {
	f := p.files[id]
	if f == nil {
		f = &spillFile{}
		p.files[id] = f
	}
	return f
}

// write dirties bytes of file id.
func (p *pageCache) write(id int64, bytes float64) { p.writeFile(p.file(id), bytes) }

// writeFile dirties bytes of f, a file of the cache.
func (p *pageCache) writeFile(f *spillFile, bytes float64) {
	if f.dirty <= 0 {
		p.fifo = append(p.fifo, f)
	}
	f.dirty += bytes
	f.written += bytes
	p.dirty += bytes
	p.written += bytes
}

// writeback cleans up to bytes, oldest file first; the pages stay
// cached, clean.
func (p *pageCache) writeback(bytes float64) {
	for bytes > 0 && p.head < len(p.fifo) {
		f := p.fifo[p.head]
		if f.deleted || f.dirty <= 0 {
			p.head++
			continue
		}
		w := min(f.dirty, bytes)
		f.dirty -= w
		p.dirty -= w
		f.clean += w
		p.clean += w
		p.toLRU(f)
		p.writtenBack += w
		bytes -= w
		if f.dirty <= 1e-9 {
			f.dirty = 0
			p.head++
		}
	}
	if p.head > 1024 && p.head*2 > len(p.fifo) {
		p.fifo = append([]*spillFile(nil), p.fifo[p.head:]...)
		p.head = 0
	}
	if p.dirty < 1e-6 {
		p.dirty = 0
	}
}

func (p *pageCache) toLRU(f *spillFile) {
	if !f.inLRU {
		f.inLRU = true
		p.lru = append(p.lru, f)
	}
}

// reclaim evicts clean pages, oldest first, until the cache holds at most
// room bytes (or has no clean page left).
func (p *pageCache) reclaim(room float64) {
	for p.dirty+p.clean > room && p.lruHead < len(p.lru) {
		f := p.lru[p.lruHead]
		if f.deleted || f.clean <= 0 {
			f.inLRU = false
			p.lruHead++
			continue
		}
		e := min(f.clean, p.dirty+p.clean-room)
		f.clean -= e
		f.cold += e
		p.clean -= e
		p.evicted += e
		if f.clean <= 1e-9 {
			f.clean = 0
			f.inLRU = false
			p.lruHead++
		}
	}
	if p.lruHead > 1024 && p.lruHead*2 > len(p.lru) {
		p.lru = append([]*spillFile(nil), p.lru[p.lruHead:]...)
		p.lruHead = 0
	}
	if p.clean < 1e-6 {
		p.clean = 0
	}
}

// read takes bytes of f back, from the pages the cache holds or, with
// fromDisk, from the disk (the pages read are cached again, clean).
func (p *pageCache) read(f *spillFile, bytes float64, fromDisk bool) {
	// A batch's share of the spill is rounded up to whole bytes: the
	// cursor's last batch may ask for a few bytes more than are left.
	bytes = min(bytes, max(0, f.written-f.read))
	f.read += bytes
	p.readBack += bytes
	if fromDisk {
		p.diskRead += bytes
		m := min(bytes, f.cold)
		f.cold -= m
		f.clean += m
		p.clean += m
		p.toLRU(f)
	}
}

// remove deletes file id: its pages leave the cache, dirty ones unwritten,
// and what was never read back is freed with it.
func (p *pageCache) remove(id int64) {
	f := p.files[id]
	if f == nil {
		return
	}
	delete(p.files, id)
	p.drop(f)
}

func (p *pageCache) drop(f *spillFile) {
	f.deleted = true
	p.dirty = max(0, p.dirty-f.dirty)
	p.clean = max(0, p.clean-f.clean)
	p.dropped += f.dirty
	p.unread += math.Round(max(0, f.written-f.read)) // whole bytes: see SpillIO
	f.dirty, f.clean, f.cold = 0, 0, 0
}

// clear deletes every file (the process died: its spill files go with it).
func (p *pageCache) clear() {
	for id, f := range p.files {
		delete(p.files, id)
		p.drop(f)
	}
}

// writerStalls reports whether op, writing a spilled run, is paused by
// balance_dirty_pages when over is the page cache's overLimit: dirty
// pages are at vm.dirty_ratio. A step reads overLimit once, before any op
// moves the page cache.
func writerStalls(op *Op, over bool) bool {
	return over && op.spillLeft > 0
}

// writeSpill serialises what op's spilled runs can in cpu seconds of work
// into its query's file, dirtying pages.
func (n *Node) writeSpill(op *Op, cpu float64) {
	b := min(op.spillLeft, cpu*n.hw.SpillWriteBytesPerSec)
	op.spillLeft -= b
	if op.spillLeft < 1e-6 {
		b += op.spillLeft
		op.spillLeft = 0
	}
	n.host.pc.writeFile(n.queryFileOf(op), b)
}

// queryFileOf is op's query's spill file, looked up once per op: it is
// deleted only when the query ends, so never under a live op.
func (n *Node) queryFileOf(op *Op) *spillFile {
	if op.spillFile == nil {
		op.spillFile = n.host.pc.file(queryFile(op))
	}
	return op.spillFile
}

// SpillIO is a member's spill I/O since it started, in bytes: what spills
// wrote into the page cache, what reads took back (and how much of that
// came from the disk), what writeback wrote to the disk, what reclaim
// evicted, and what deleted files freed (dirty pages never written, bytes
// never read back). Written = ReadBack + Unread + what live files still
// hold unread.
type SpillIO struct {
	Written, ReadBack, DiskRead, WrittenBack, Evicted, DroppedDirty, Unread float64
	// Dirty and Clean are the page cache's spill pages now; LiveUnread is
	// what live spill files hold that was not read back yet.
	Dirty, Clean, LiveUnread float64
}

// SpillIO returns the member's spill I/O counters.
func (n *Node) SpillIO() SpillIO {
	pc := &n.host.pc
	// Whole bytes a file: a sum of whole numbers is the same in any order
	// (a map's), so a trial stays deterministic for its seed.
	live := 0.0
	for _, f := range pc.files {
		live += math.Round(max(0, f.written-f.read))
	}
	return SpillIO{Written: pc.written, ReadBack: pc.readBack, DiskRead: pc.diskRead, WrittenBack: pc.writtenBack,
		Evicted: pc.evicted, DroppedDirty: pc.dropped, Unread: pc.unread, Dirty: pc.dirty, Clean: pc.clean, LiveUnread: live}
}
