package metric

import (
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// records builds a 30 s storm trial: three members sampled every second,
// member a the primary, each sample holding fields(i) for second i.
func records(fields func(i int) map[string]float64) store.Records {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := store.Records{Results: store.Results{PhaseStarts: map[string]time.Time{
		"warmup": t0, "storm": t0.Add(10 * time.Second), "recovery": t0.Add(20 * time.Second), "end": t0.Add(30 * time.Second)}}}
	for i := range 30 {
		at := t0.Add(time.Duration(i) * time.Second)
		for _, m := range []string{"a", "b", "c"} {
			r.Samples = append(r.Samples, store.Sample{At: at, Member: m, Up: true, Primary: m == "a", ProcessID: "p" + m,
				Values: fields(i)})
		}
		r.Canaries = append(r.Canaries, store.CanaryOp{Scheduled: at, Latency: 3 * time.Millisecond, OK: true})
	}
	for i := range 100 {
		r.Storm = append(r.Storm, store.StormOp{Scheduled: t0.Add(10*time.Second + time.Duration(i)*100*time.Millisecond),
			Latency: time.Second, Stage: "$sort", Outcome: store.Completed})
	}
	return r
}

// serverMetrics are the metrics that rest on serverStatus sections a
// 7.0 mongod or another implementation may not have.
var serverMetrics = []string{ShedsPerS, AdmissionsPerS, KillsPerS, DeparturesPerS, ReadTicketsMed, ReadTicketsMin,
	LowQueueP95, LowQueueMax, LowQueueSlope, LowQueueGrowth, RSSPeakBytes}

func TestFieldsReportedAtZeroGiveZero(t *testing.T) {
	values, absent := Explain(records(func(int) map[string]float64 {
		return map[string]float64{"queryMemory.operationsShed": 0, "read.low.removedFromQueue": 0, "read.low.canceled": 0,
			"read.totalTickets": 0, "read.low.queueLength": 0, "residentMB": 0, "uptimeMillis": 1}
	}))
	for _, m := range serverMetrics {
		v, ok := values[m]
		if !ok {
			t.Errorf("%s absent (%q) though every sample reported its field, at 0", m, absent[m])
			continue
		}
		if v != 0 {
			t.Errorf("%s = %v from fields that were all 0", m, v)
		}
		if _, ok := absent[m]; ok {
			t.Errorf("%s both present and absent", m)
		}
	}
}

func TestFieldsNeverReportedAreAbsentWithTheReason(t *testing.T) {
	values, absent := Explain(records(func(i int) map[string]float64 {
		return map[string]float64{"uptimeMillis": float64(1000 * (i + 1))}
	}))
	want := map[string]string{
		ShedsPerS:      "queryMemory.loadShedding",
		AdmissionsPerS: "queues.execution.read.lowPriority",
		KillsPerS:      "queues.execution.read.lowPriority",
		ReadTicketsMed: "queues.execution.read.totalTickets",
		LowQueueP95:    "queues.execution.read.lowPriority.queueLength",
		LowQueueGrowth: "queues.execution.read.lowPriority.queueLength",
		RSSPeakBytes:   "mem.resident",
	}
	for _, m := range serverMetrics {
		if v, ok := values[m]; ok {
			t.Errorf("%s = %v from samples that never had its field: want absent", m, v)
		}
		if absent[m] == "" {
			t.Errorf("%s absent without a reason", m)
		}
	}
	for m, path := range want {
		if got := absent[m]; got != "the server reported no "+path {
			t.Errorf("%s: reason %q, want it to name %s", m, got, path)
		}
	}
	// What the client measured is still there.
	for _, m := range []string{Availability, CanaryP99Ms, StormCompleted, Failovers, Restarts} {
		if _, ok := values[m]; !ok {
			t.Errorf("%s absent (%q): it rests on client outcomes, which the trial has", m, absent[m])
		}
	}
	if _, ok := absent["merge_ops"]; ok {
		t.Error("a storm trial lists the merge workload's metrics as absent; they do not apply")
	}
}

func TestNoCanariesIsAbsentNotZero(t *testing.T) {
	r := records(func(int) map[string]float64 { return map[string]float64{"residentMB": 1} })
	r.Canaries = nil
	values, absent := Explain(r)
	for _, m := range []string{Availability, CanaryP50Ms, CanaryP99Ms} {
		if v, ok := values[m]; ok {
			t.Errorf("%s = %v with no canaries: want absent", m, v)
		}
		if absent[m] != "no canary ran" {
			t.Errorf("%s: reason %q", m, absent[m])
		}
	}
}

func TestUnsupportedAndUnfinishedAreNeitherCompletedNorFailed(t *testing.T) {
	r := records(func(int) map[string]float64 { return map[string]float64{"residentMB": 1} })
	for i := range r.Storm {
		switch {
		case i < 5:
			r.Storm[i].Outcome, r.Storm[i].Code, r.Storm[i].Stage = store.ClassifyCode("NotImplemented"), "NotImplemented", "$setWindowFields"
		case i < 12:
			r.Storm[i].Outcome, r.Storm[i].Code = store.ClassifyCode(store.TrialEnded), store.TrialEnded
		case i < 15:
			r.Storm[i].Outcome, r.Storm[i].Code = store.ClassifyCode("Timeout"), "Timeout"
		}
	}
	// Canaries the server does not implement, or that the trial's end cut
	// off, count against nothing.
	r.Canaries[0].OK, r.Canaries[0].Code = false, "CommandNotFound"
	r.Canaries[1].OK, r.Canaries[1].Code = false, store.TrialEnded
	r.Canaries[2].OK, r.Canaries[2].Code = false, "NetworkError"
	values, _ := Explain(r)
	for m, want := range map[string]float64{StormUnsupported: 5, StormUnfinished: 7, StormFailed: 3, StormCompleted: 85,
		Availability: 27.0 / 28} {
		if values[m] != want {
			t.Errorf("%s = %v, want %v", m, values[m], want)
		}
	}
	if why := Validity(r); why != "" {
		t.Errorf("5 %% of the storm unsupported made the trial invalid: %s", why)
	}
}

func TestValidityNamesTheUnsupportedStageAndError(t *testing.T) {
	r := records(func(int) map[string]float64 { return map[string]float64{"residentMB": 1} })
	for i := range 70 {
		r.Storm[i].Outcome, r.Storm[i].Code, r.Storm[i].Stage = store.Unsupported, "NotImplemented", "$setWindowFields"
	}
	for i := 70; i < 80; i++ {
		r.Storm[i].Outcome, r.Storm[i].Code, r.Storm[i].Stage = store.Unsupported, "Location40324", "$group"
	}
	why := Validity(r)
	for _, want := range []string{"does not implement", "$setWindowFields: 70 of 100 storm queries failed NotImplemented",
		"$group: 10 of 100 storm queries failed Location40324"} {
		if !strings.Contains(why, want) {
			t.Errorf("reason %q lacks %q", why, want)
		}
	}
	if strings.Index(why, "$setWindowFields") > strings.Index(why, "$group") {
		t.Errorf("reason %q: the commonest error should come first", why)
	}
	// Exactly the documented share is still valid; one more is not.
	r = records(func(int) map[string]float64 { return nil })
	for i := range 10 {
		r.Storm[i].Outcome, r.Storm[i].Code = store.Unsupported, "NotImplemented"
	}
	if why := Validity(r); why != "" {
		t.Errorf("10 of 100 unsupported (the documented share) is invalid: %s", why)
	}
	r.Storm[10].Outcome, r.Storm[10].Code = store.Unsupported, "NotImplemented"
	if Validity(r) == "" {
		t.Error("11 of 100 unsupported is valid; want invalid")
	}
}

// A merge_partial_write trial whose $merge ops all failed NotImplemented
// measured a server without $merge: invalid, naming it, not "unsafe sheds 0".
func TestValidityCountsMergeOpsTheServerDoesNotImplement(t *testing.T) {
	var r store.Records
	r.Merge = &store.MergeRun{}
	for i := range 10 {
		r.Merge.Ops = append(r.Merge.Ops, store.MergeOp{Op: i, Outcome: store.Unsupported, Code: "NotImplemented"})
	}
	why := Validity(r)
	if !strings.Contains(why, "$merge: 10 of 10 merge ops failed NotImplemented") {
		t.Fatalf("reason %q: want the $merge ops named", why)
	}
	for i := range r.Merge.Ops {
		r.Merge.Ops[i].Outcome, r.Merge.Ops[i].Code = store.Shed, "QueryMemoryLimitExceeded"
	}
	if why := Validity(r); why != "" {
		t.Fatalf("shed $merge ops are outcomes, not an invalid trial: %s", why)
	}
}

// The unsafe-shed counts of a merge trial whose $merge ops the server
// could not run are absent with why (the trial table's "–[n]"), not 0;
// once the ops ran, the same counts are measurements again, 0 included.
func TestUnsafeShedsOfMergeOpsThatNeverRanAreAbsent(t *testing.T) {
	unsafe := []string{UnsafeSheds, "unsafe_sheds_primary", "unsafe_sheds_secondary"}
	var r store.Records
	r.Merge = &store.MergeRun{}
	for i := range 3 {
		r.Merge.Ops = append(r.Merge.Ops, store.MergeOp{Op: i, Outcome: store.Unsupported, Code: "NotImplemented", ReadPreference: "primary"})
	}
	values, absent := Explain(r)
	for _, m := range unsafe {
		if v, ok := values[m]; ok {
			t.Errorf("%s = %v from $merge ops that all failed NotImplemented; want absent", m, v)
		}
		if want := "not measured: the server could not run the $merge ops (3 of 3 failed: 3 NotImplemented)"; absent[m] != want {
			t.Errorf("%s absent because %q, want %q", m, absent[m], want)
		}
	}
	if v, ok := values["merge_ops"]; !ok || v != 3 {
		t.Errorf("merge_ops = %v (present %v): the ops were sent, that is a measurement", v, ok)
	}

	// One unsupported op of ten is within MaxUnsupportedShare: the others
	// ran, and their unsafe sheds are counted.
	r.Merge.Ops = nil
	for i := range 10 {
		o := store.MergeOp{Op: i, Outcome: store.Completed, ReadPreference: "secondary"}
		switch i {
		case 0:
			o.Outcome, o.Code = store.Unsupported, "NotImplemented"
		case 1, 2:
			o.Outcome, o.Code, o.Unsafe = store.Shed, "QueryMemoryLimitExceeded", true
		}
		r.Merge.Ops = append(r.Merge.Ops, o)
	}
	values, absent = Explain(r)
	for m, want := range map[string]float64{UnsafeSheds: 2, "unsafe_sheds_primary": 0, "unsafe_sheds_secondary": 2} {
		if v, ok := values[m]; !ok || v != want {
			t.Errorf("%s = %v (present %v, absent %q), want %v", m, v, ok, absent[m], want)
		}
	}
}

func TestClassifyCodeOutcomes(t *testing.T) {
	for code, want := range map[string]store.Outcome{
		"": store.Completed, "QueryMemoryLimitExceeded": store.Shed, "Interrupted": store.Killed,
		"NotImplemented": store.Unsupported, "CommandNotFound": store.Unsupported, "InvalidPipelineOperator": store.Unsupported,
		"Location40324": store.Unsupported, store.TrialEnded: store.Unfinished,
		"Timeout": store.Failed, "NetworkError": store.Failed, "NotWritablePrimary": store.Failed,
	} {
		if got := store.ClassifyCode(code); got != want {
			t.Errorf("ClassifyCode(%q) = %s, want %s", code, got, want)
		}
	}
}

func TestActorKillsAreShedsOnAServerWithoutShedding(t *testing.T) {
	r := records(func(int) map[string]float64 { return map[string]float64{"residentMB": 1} })
	storm := r.PhaseStarts["storm"]
	r.KillOpActor = true
	for i := range 20 {
		r.Kills = append(r.Kills, store.Kill{At: storm.Add(time.Duration(i) * 400 * time.Millisecond), OpID: int64(i)})
	}
	values, absent := Explain(r)
	if v, ok := values[ShedsPerS]; !ok || v != 2 {
		t.Errorf("sheds/s = %v (present %v, %q): want the actor's 20 kills over the 10 s storm, 2/s", v, ok, absent[ShedsPerS])
	}
	r.KillOpActor, r.Kills = false, nil
	if _, absent := Explain(r); absent[ShedsPerS] != "the server reported no queryMemory.loadShedding" {
		t.Errorf("no actor, no server counter: sheds/s reason %q", absent[ShedsPerS])
	}
}
