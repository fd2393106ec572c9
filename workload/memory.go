package workload

import (
	"fmt"
	"math"
	"time"

	"github.com/qmlsab/qmlsab/internal/units"
)

// A virtual trial's memory. The virtual engine keeps a trial's records in
// memory until the trial ends and writes them then, so a trial's peak heap
// is a fixed part plus one term per kind of record. Each constant is the
// peak heap per record measured on one virtual trial (runtime.MemStats
// HeapInuse sampled every 20 ms, default GOGC, records written to a run
// folder), rounded up by about a third: the safety factor. The measured
// figures are beside each.
const (
	// trialBaseBytes is a trial with almost nothing in it: the model's
	// three members, the extractor table, the writers' buffers (measured:
	// 16 MiB for the default workload, records included).
	trialBaseBytes = 32 << 20
	// canaryBytes is one canary: its record (56 bytes) while the trial
	// runs, the slice's growth, its JSON line and gzip output when written
	// (measured: 231–240 bytes, 1.2 M and 7.2 M canaries).
	canaryBytes = 320
	// stormQueryBytes is one storm query: its operation and cursor while
	// it is queued or running, its record, and the killOp actor's kill
	// record (measured: 760 bytes for arm D, which queues and kills all
	// 300,000 queries of the largest storm; 340 for E, which crashes
	// instead). A cursor's getMores are made one at a time, so the batch
	// size is no term.
	stormQueryBytes = 1024
	// sampleBytes is one member's sample: its serverStatus values and
	// census, and its share of the per-second series (measured: 4.5 KiB).
	sampleBytes = 6 << 10
	// sampledMembers are the members sampled each interval.
	sampledMembers = 3
	// trialSampleInterval is how often a virtual trial samples its members
	// (the run's default).
	trialSampleInterval = time.Second
)

// TrialBytes is the heap one virtual trial of this workload needs at its
// peak, from the model above:
//
//	32 MiB                                   the engine and writers
//	+ canaryRate × trial length × 320 B      canaries
//	+ stormRate × storm length × 1 KiB       storm queries (and kills)
//	+ 3 × (trial length / 1 s + 2) × 6 KiB   members' samples
//
// Nothing else a workload sets is a term: scanDocs, docBytes, holdBytes
// and loadBytes are modelled sizes, not allocations, and getMores are made
// one at a time. Validate refuses a workload whose trial needs more than
// MaxTrialHeapBytes.
func (w SpillToDisk) TrialBytes() int64 {
	t := w.Phases.Total().Seconds()
	canaries := w.CanaryRate * t * canaryBytes
	storm := w.StormRate * w.Phases.Storm.Seconds() * stormQueryBytes
	samples := sampledMembers * (t/trialSampleInterval.Seconds() + 2) * sampleBytes
	total := trialBaseBytes + canaries + storm + samples
	if !(total < math.MaxInt64) { // NaN or beyond: Validate's ranges refuse these first
		return math.MaxInt64
	}
	return int64(total)
}

// checkTrialBytes refuses a workload whose virtual trial would not fit
// its memory budget, naming the key whose term is the largest.
func (w SpillToDisk) checkTrialBytes() error {
	need := w.TrialBytes()
	if need <= MaxTrialHeapBytes {
		return nil
	}
	t := w.Phases.Total()
	canaries := w.CanaryRate * t.Seconds()
	queries := w.StormRate * w.Phases.Storm.Seconds()
	key, what := "canaryRate", fmt.Sprintf("canaryRate %v over a %v trial (%.0f canaries)", w.CanaryRate, t, canaries)
	if queries*stormQueryBytes > canaries*canaryBytes {
		key, what = "stormRate", fmt.Sprintf("stormRate %v over a %v storm (%.0f queries)", w.StormRate, w.Phases.Storm, queries)
	}
	return fieldErr(fmt.Sprintf("%s: a virtual trial needs ~%s, the budget is %s a trial; lower canaryRate, stormRate or the phases",
		what, units.HumanBytes(float64(need)), units.HumanBytes(float64(MaxTrialHeapBytes))), KindSpillToDisk, key)
}

// A merge_partial_write trial's memory. It runs on a deployment over the
// wire, in this process for the embedded target, whose members keep
// every document the trial writes (in the collections, the oplog and the
// journal of each of the three) until the trial ends. Its peak is a
// fixed part, the source, and what the ops write: an op the shedder does
// not stop writes its whole source, and the worst case is what Validate
// bounds. The constants are the peak heap (runtime.MemStats HeapAlloc
// sampled every 20 ms) of MergeDriver runs on a 3-member mongosim set in
// one process with nothing shed, fitted over seven runs from 1 op of
// 208,000 to 200 ops of 1,000 source documents, and rounded up by about
// a third; the measured figures are beside each.
const (
	// mergeBaseBytes is the three members and the driver (measured: 40
	// MiB).
	mergeBaseBytes = 56 << 20
	// mergeSourceDocBytes is one source document: loaded on every member,
	// sent by the driver, and held by an op's $setWindowFields and $merge
	// (measured: 2.2 KiB).
	mergeSourceDocBytes = 3072
	// mergeWrittenDocBytes is one document an op writes, on every member
	// (measured: 1.7 KiB).
	mergeWrittenDocBytes = 2304
)

// TrialBytes is the heap a trial of this workload needs at its peak,
// from the model above, when no op is shed:
//
//	56 MiB                               the members and the driver
//	+ sourceDocs × 3 KiB                 the source and one op's stages
//	+ ops × sourceDocs × 2.25 KiB        what the ops write
//
// Validate refuses a workload whose trial needs more than
// MaxTrialHeapBytes. The ops' time follows the same terms (each op reads
// its source once and writes at most all of it), so the budget bounds it
// too.
func (w MergePartialWrite) TrialBytes() int64 {
	total := mergeBaseBytes + float64(w.SourceDocs)*mergeSourceDocBytes + float64(w.Ops)*float64(w.SourceDocs)*mergeWrittenDocBytes
	if !(total < math.MaxInt64) {
		return math.MaxInt64
	}
	return int64(total)
}

// checkTrialBytes refuses a workload whose trial would not fit its
// memory budget: sourceDocs when one op over it would not fit, else ops.
func (w MergePartialWrite) checkTrialBytes() error {
	need := w.TrialBytes()
	if need <= MaxTrialHeapBytes {
		return nil
	}
	one := w
	one.Ops = 1
	if one.TrialBytes() > MaxTrialHeapBytes {
		return fieldErr(fmt.Sprintf("%d source documents: even one op over them needs ~%s, the budget is %s a trial; lower sourceDocs",
			w.SourceDocs, units.HumanBytes(float64(one.TrialBytes())), units.HumanBytes(float64(MaxTrialHeapBytes))), KindMergePartialWrite, "sourceDocs")
	}
	return fieldErr(fmt.Sprintf("%d ops over %d source documents (an op that is not shed writes them all: %d documents): a trial needs ~%s, the budget is %s a trial; lower ops or sourceDocs",
		w.Ops, w.SourceDocs, int64(w.Ops)*int64(w.SourceDocs), units.HumanBytes(float64(need)), units.HumanBytes(float64(MaxTrialHeapBytes))), KindMergePartialWrite, "ops")
}

// LargestMergeSource is the most source documents a merge_partial_write
// trial of ops ops may have within its budget.
func LargestMergeSource(ops int) int {
	n := (MaxTrialHeapBytes - mergeBaseBytes) / (mergeSourceDocBytes + int64(ops)*mergeWrittenDocBytes)
	return int(min(n, MaxSourceDocs))
}
