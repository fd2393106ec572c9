package model

import (
	"math"
	"time"

	"github.com/qmlsab/qmlsab/internal/queryshape"
)

// QueryShape describes a storm query in modelled units (the shape a
// client sends in its aggregate's comment, queryshape.HintKey).
type QueryShape = queryshape.Shape

// Per-document CPU costs of the model (an M50 vCPU).
const (
	ScanCPUPerDoc  = 250 * time.Nanosecond  // read a cached document and feed a blocking stage
	PointOpCPU     = 300 * time.Microsecond // a canary's find-by-_id or insert
	MergeCPUPerDoc = 3 * time.Microsecond   // $merge/$out writing a document
)

// StageLimit is the spill threshold of the query's blocking stage under p.
// $setWindowFields with sortBy sorts its input first, so its spills are
// the sort's.
func (p Params) StageLimit(stage string) int64 {
	switch stage {
	case "$group":
		return p.GroupMemoryBytes
	case "$sort", "$setWindowFields":
		return p.SortMemoryBytes
	}
	return p.WindowMemoryBytes
}

// AggregateWork is the initial aggregate: it scans its input into the
// blocking stage, which spills each time it reaches its limit, and ends
// holding the output phase's buffer for the cursor.
func (p Params) AggregateWork(q QueryShape) Work {
	return Work{ScanDocs: q.ScanDocs, CPUPerDoc: ScanCPUPerDoc, BufferBytesPerDoc: q.DocBytes,
		StageLimitBytes: p.StageLimit(q.Stage), HoldBytes: q.HoldBytes, Stage: q.Stage, Exhausts: q.OutputBytes <= 0}
}

// Spills reports whether the query's stage input exceeds its limit.
func (p Params) Spills(q QueryShape) bool { return q.ScanDocs*q.DocBytes > p.StageLimit(q.Stage) }

// GetMoreWorks are the getMores that drain the cursor. A spilled stage
// reads its sorted runs back from disk (disk-bound slices); an in-memory
// one produces its output on CPU.
func (p Params) GetMoreWorks(q QueryShape) []Work {
	if q.OutputBytes <= 0 {
		return nil
	}
	batch := q.BatchBytes()
	var out []Work
	for left := q.OutputBytes; left > 0; left -= batch {
		out = append(out, p.GetMoreWork(q, min(left, batch)))
	}
	out[len(out)-1].Exhausts = true
	return out
}

// GetMoreWork is one of GetMoreWorks' getMores: the batch that returns
// bytes of q's output (Exhausts unset; the caller knows whether it is the
// last), for a caller that makes them one at a time.
func (p Params) GetMoreWork(q QueryShape, bytes int64) Work {
	w := Work{HoldBytes: q.HoldBytes, LoadBytes: q.LoadBytes, Stage: q.Stage, BufferBytesPerDoc: q.DocBytes, ReplyBytes: bytes}
	if p.Spills(q) {
		// Merging sorted runs reads every spilled byte back, whatever
		// share of it the pipeline returns: a batch reads its share of
		// the spill.
		w.ReadSpillBytes = SpillReadShare(q.ScanDocs*q.DocBytes, bytes, q.OutputBytes)
	} else {
		w.ScanDocs, w.CPUPerDoc = bytes/max(q.DocBytes, 1), ScanCPUPerDoc
	}
	return w
}

// SpillReadShare is what a batch returning bytes of a cursor's output
// reads of its query's spilled bytes: spilled in proportion, so that the
// batches of a cursor read back exactly what it spilled.
func SpillReadShare(spilled, bytes, output int64) int64 {
	if output <= 0 {
		return 0
	}
	return int64(math.Ceil(float64(spilled) * float64(bytes) / float64(output)))
}

// Combine is one op doing the works one after another: what a getMore
// does when it returns the batches of several modelled getMores.
func Combine(ws []Work) Work {
	if len(ws) == 0 {
		return Work{}
	}
	w := ws[0]
	for _, x := range ws[1:] {
		w.ScanDocs += x.ScanDocs
		w.ReadSpillBytes += x.ReadSpillBytes
		w.ReplyBytes += x.ReplyBytes
		w.Exhausts = x.Exhausts
	}
	return w
}

// PointWork is a canary read or write.
func PointWork() Work { return Work{ScanDocs: 1, CPUPerDoc: PointOpCPU, Exhausts: true} }
