package workload

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/store"
)

// TestTrialBytesRefusesWhatDoesNotFit checks the memory model at the
// corners of the accepted box: each bound alone accepts its maximum, but
// maxima together that a virtual trial could not hold in its budget are
// refused, naming the key whose term is the largest and the figure.
func TestTrialBytesRefusesWhatDoesNotFit(t *testing.T) {
	spec := func(edit func(*SpillToDisk)) Spec {
		w := DefaultSpillToDisk()
		edit(&w)
		return Spec{Name: "x", Kind: KindSpillToDisk, SpillToDisk: &w}
	}
	for _, tc := range []struct {
		name string
		edit func(*SpillToDisk)
		want string // "" accepted
	}{
		{"defaults", func(*SpillToDisk) {}, ""},
		{"batchDocs 1, scanDocs at its maximum", func(w *SpillToDisk) { w.BatchDocs, w.ScanDocs, w.OutputShare = 1, MaxScanDocs, 1 }, ""},
		{"the largest storm", func(w *SpillToDisk) { w.StormRate, w.Phases.Storm = MaxStormRate, 300*time.Second }, ""},
		{"the longest trial", func(w *SpillToDisk) {
			w.Phases = Phases{Warmup: time.Hour, Storm: 10 * time.Minute, Recovery: 50 * time.Minute}
		}, ""},
		{"the most canaries over the default phases", func(w *SpillToDisk) { w.CanaryRate = MaxCanaryRate }, ""},
		{"the most canaries over the longest trial", func(w *SpillToDisk) {
			w.CanaryRate, w.Phases = MaxCanaryRate, Phases{Warmup: time.Hour, Storm: 10 * time.Minute, Recovery: 50 * time.Minute}
		}, "spill_to_disk.canaryRate: canaryRate 1000 over a 2h0m0s trial (7200000 canaries): a virtual trial needs ~2.42 GiB, the budget is 1 GiB a trial"},
		{"the largest storm over the longest trial with many canaries", func(w *SpillToDisk) {
			w.StormRate, w.CanaryRate, w.Phases = MaxStormRate/6, 300, Phases{Warmup: 50 * time.Minute, Storm: 30 * time.Minute, Recovery: 40 * time.Minute}
		}, "spill_to_disk.canaryRate"},
	} {
		s := spec(tc.edit)
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want == "" && s.SpillToDisk.TrialBytes() > MaxTrialHeapBytes:
			t.Errorf("%s: accepted, but needs %s", tc.name, units.HumanBytes(float64(s.SpillToDisk.TrialBytes())))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	// The storm as the largest term names stormRate.
	w := DefaultSpillToDisk()
	w.StormRate, w.Phases.Storm, w.CanaryRate = MaxStormRate, 300*time.Second, 0.001
	if need := w.TrialBytes(); need < 300_000*stormQueryBytes {
		t.Errorf("300,000 storm queries: %d bytes, want at least %d", need, 300_000*stormQueryBytes)
	}
}

// TestTrialBytesGrowsWithEachTerm checks that each term of the formula
// moves the figure, and the keys that are no term do not.
func TestTrialBytesGrowsWithEachTerm(t *testing.T) {
	base := DefaultSpillToDisk()
	b := base.TrialBytes()
	for name, edit := range map[string]func(*SpillToDisk){
		"canaryRate": func(w *SpillToDisk) { w.CanaryRate *= 2 },
		"stormRate":  func(w *SpillToDisk) { w.StormRate *= 2 },
		"recovery":   func(w *SpillToDisk) { w.Phases.Recovery *= 2 },
	} {
		w := base
		edit(&w)
		if w.TrialBytes() <= b {
			t.Errorf("doubling %s left the trial at %d bytes", name, w.TrialBytes())
		}
	}
	w := base
	w.BatchDocs, w.ScanDocs, w.DocBytes, w.HoldBytes = 1, MaxScanDocs, MaxDocBytes, MaxBufferBytes
	if w.TrialBytes() != b {
		t.Errorf("modelled sizes changed the trial's memory: %d, want %d", w.TrialBytes(), b)
	}
}

// TestMergeTrialBytesRefusesWhatDoesNotFit checks the merge model at the
// corners of the accepted box: each bound alone accepts its maximum
// (ops with few documents, sourceDocs with one op... within the budget),
// but together they are refused, naming the key to lower.
func TestMergeTrialBytesRefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ops, source int
		want        string // "" accepted
	}{
		{"defaults", DefaultMergePartialWrite().Ops, DefaultMergePartialWrite().SourceDocs, ""},
		{"the most ops", MaxMergeOps, 40, ""},
		{"the most source documents one op can hold", 1, LargestMergeSource(1), ""},
		{"one more", 1, LargestMergeSource(1) + 1, "merge_partial_write.sourceDocs"},
		{"the most source documents", 1, MaxSourceDocs, "merge_partial_write.sourceDocs: 1000000 source documents: even one op"},
		{"the review's spec", MaxMergeOps, MaxSourceDocs, "merge_partial_write.sourceDocs"},
		{"many ops over a source one op can hold", 100, 100_000, "merge_partial_write.ops: 100 ops over 100000 source documents"},
	} {
		w := DefaultMergePartialWrite()
		w.Ops, w.SourceDocs = tc.ops, tc.source
		err := Spec{Name: "x", Kind: KindMergePartialWrite, Merge: &w}.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want == "" && w.TrialBytes() > MaxTrialHeapBytes:
			t.Errorf("%s: accepted, but needs %s", tc.name, units.HumanBytes(float64(w.TrialBytes())))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// A run folder's reader refuses a file of more records than a trial
// writes (store.RecordLimit); those limits rest on this package's bounds,
// so that no trial the bounds accept writes a file the reader refuses.
func TestStoreRecordLimitsHoldTheWorkloadBounds(t *testing.T) {
	if store.MaxTrialSeconds != MaxTrialLength.Seconds() {
		t.Errorf("store.MaxTrialSeconds %d, MaxTrialLength %v", store.MaxTrialSeconds, MaxTrialLength)
	}
	// Poisson arrivals: the count scatters around rate × storm by its
	// square root; 10 standard deviations above is never met.
	if float64(store.MaxStormRecords) < MaxStormOps+10*math.Sqrt(MaxStormOps) {
		t.Errorf("store.MaxStormRecords %d: want room above MaxStormOps %d for Poisson arrivals", store.MaxStormRecords, MaxStormOps)
	}
	if float64(store.MaxCanaryRecords) < MaxCanaryRate*MaxTrialLength.Seconds() {
		t.Errorf("store.MaxCanaryRecords %d < MaxCanaryRate %v × MaxTrialLength %v", store.MaxCanaryRecords, MaxCanaryRate, MaxTrialLength)
	}
	if store.MaxMergeRecords < MaxMergeOps {
		t.Errorf("store.MaxMergeRecords %d < MaxMergeOps %d", store.MaxMergeRecords, MaxMergeOps)
	}
	if store.MaxSecondRecords < MaxTrialLength.Seconds()+1 {
		t.Errorf("store.MaxSecondRecords %d: fewer than the seconds of the longest trial, %v", store.MaxSecondRecords, MaxTrialLength)
	}
}
