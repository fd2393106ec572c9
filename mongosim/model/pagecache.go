package model

// pageCache is the Linux page cache that spill files are written through
// (mm/page-writeback.c): a write dirties pages; background writeback starts
// once dirty pages exceed dirty_background_ratio of dirtyable memory and
// drains them at the disk's write bandwidth (sharing the device with the
// spill readers); a writer that finds dirty pages at dirty_ratio is paused
// in balance_dirty_pages until writeback brings them under. Deleting a file
// drops its pages, dirty ones without writing them. Dirty and writeback
// pages are page cache the kernel cannot reclaim at once, so they count
// towards the OOM killer's view of memory; clean pages do not.
type pageCache struct {
	ratio, bgRatio float64
	limit, bgLimit float64
	dirty          float64
	files          map[int64]*spillFile
	fifo           []*spillFile // oldest dirtied first (the flusher's order)
	head           int
	writtenBack    float64
	dropped        float64
}

type spillFile struct {
	dirty   float64
	runs    int
	deleted bool
}

func newPageCache(ratio, bgRatio float64) pageCache {
	return pageCache{ratio: ratio, bgRatio: bgRatio, files: map[int64]*spillFile{}}
}

func (p *pageCache) setDirtyable(b int64) {
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
	p.dirty += bytes
}

// writeback cleans up to bytes, oldest file first.
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

// remove deletes file id: its pages leave the cache, dirty ones unwritten.
func (p *pageCache) remove(id int64) {
	f := p.files[id]
	if f == nil {
		return
	}
	delete(p.files, id)
	f.deleted = true
	p.dirty = max(0, p.dirty-f.dirty)
	p.dropped += f.dirty
	f.dirty = 0
}

// writerStalls reports whether op, writing a spilled run, is paused by
// balance_dirty_pages: dirty pages are at vm.dirty_ratio.
func (n *Node) writerStalls(op *Op) bool {
	return n.host != nil && op.pendingSpill > 0 && op.spillLeft > 0 && n.host.pc.overLimit()
}

// writeSpill dirties the pages op's run writes in cpu seconds of work.
func (n *Node) writeSpill(op *Op, cpu float64) {
	if n.host == nil || op.spillLeft <= 0 {
		return
	}
	b := min(op.spillLeft, cpu*n.hw.SpillWriteBytesPerSec)
	op.spillLeft -= b
	// The op's query file, looked up once per op: it is deleted only when
	// the query ends, so never under a live op.
	if op.spillFile == nil {
		op.spillFile = n.host.pc.file(queryFile(op))
	}
	n.host.pc.writeFile(op.spillFile, b)
}
