package metric

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// records builds a 30 s storm trial: three members sampled every second,
// member a the primary, each sample holding fields(i) for second i.
func records(fields func(i int) map[string]float64) store.Records {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
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
var serverMetrics = []string{AdmissionsPerS, AdmissionsPerStormS, KillsPerS, DeparturesPerS, ReadTicketsMed, ReadTicketsMin,
	LowQueueP95, LowQueueMax, LowQueueSlope, LowQueueGrowth, RSSPeakBytes}

func TestFieldsReportedAtZeroGiveZero(t *testing.T) {
	values, absent := Explain(records(func(int) map[string]float64 {
		return map[string]float64{"queryMemory.operationsShed": 0, "queryMemory.operationsShedQueued": 0, "read.low.removedFromQueue": 0,
			"read.low.canceled": 0, "read.totalTickets": 0, "read.low.queueLength": 0, "residentMB": 0, "uptimeMillis": 1}
	}))
	for _, m := range append(serverMetrics, ServerShedsPerS, ServerShedsInlinePerS, ServerShedsQueuedPerS, ServerShedsMinusAdmissions) {
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

// A server without a loadShedding section sheds nothing: its server
// sheds are 0 (mongod leaves the section out when its shedder is off),
// and the killOp actor's kills are counted apart, never as the server's.
func TestActorKillsAreNeverServerSheds(t *testing.T) {
	r := records(func(int) map[string]float64 { return map[string]float64{"residentMB": 1} })
	storm := r.PhaseStarts["storm"]
	r.KillOpActor = true
	for i := range 20 {
		q := store.QueueLowPriority
		if i%4 == 0 {
			q = store.QueueNormalPriority
		}
		r.Kills = append(r.Kills, store.Kill{At: storm.Add(time.Duration(i) * 400 * time.Millisecond), OpID: int64(i), Queued: true, Queue: q})
	}
	values, absent := Explain(r)
	for m, want := range map[string]float64{ServerShedsPerS: 0, ServerShedsInlinePerS: 0, ServerShedsQueuedPerS: 0,
		ActorKillsPerS: 2, ActorKillsLowQueuePerS: 1.5, ActorKillsNormalQueuePerS: 0.5, ActorKillsRunningPerS: 0} {
		if v, ok := values[m]; !ok || v != want {
			t.Errorf("%s = %v (present %v, %q), want %v", m, v, ok, absent[m], want)
		}
	}
	// The same with a shedding server: its sheds are its own counter's.
	r.Samples = records(func(i int) map[string]float64 {
		return map[string]float64{"residentMB": 1, "queryMemory.operationsShed": float64(3 * i), "queryMemory.operationsShedQueued": float64(i)}
	}).Samples
	values, _ = Explain(r)
	if values[ServerShedsPerS] != 3 || values[ServerShedsQueuedPerS] != 1 || values[ServerShedsInlinePerS] != 2 || values[ActorKillsPerS] != 2 {
		t.Errorf("server sheds %v (inline %v, sweeper %v), actor kills %v: want 3 (2, 1) and 2, apart", values[ServerShedsPerS],
			values[ServerShedsInlinePerS], values[ServerShedsQueuedPerS], values[ActorKillsPerS])
	}
	// A server that counts its sheds but not the sweeper's: the total
	// stands, the split is absent with why.
	r.Samples = records(func(i int) map[string]float64 {
		return map[string]float64{"queryMemory.operationsShed": float64(3 * i)}
	}).Samples
	values, absent = Explain(r)
	if values[ServerShedsPerS] != 3 || !strings.Contains(absent[ServerShedsQueuedPerS], "operationsShedQueued") || !strings.Contains(absent[ServerShedsInlinePerS], "operationsShedQueued") {
		t.Errorf("without operationsShedQueued: server sheds %v, inline absent %q, sweeper absent %q", values[ServerShedsPerS], absent[ServerShedsInlinePerS], absent[ServerShedsQueuedPerS])
	}
	// Kills recorded before kills named their queue: a queued kill's
	// queue is unknown, so the split is absent, the running count known.
	for i := range r.Kills {
		r.Kills[i].Queue = ""
	}
	values, absent = Explain(r)
	if values[ActorKillsPerS] != 2 || values[ActorKillsRunningPerS] != 0 || absent[ActorKillsLowQueuePerS] == "" || absent[ActorKillsNormalQueuePerS] == "" {
		t.Errorf("kills without a queue: total %v, running %v, low absent %q, normal absent %q", values[ActorKillsPerS], values[ActorKillsRunningPerS],
			absent[ActorKillsLowQueuePerS], absent[ActorKillsNormalQueuePerS])
	}
	// No actor, no kills: 0, not absent.
	r.KillOpActor, r.Kills = false, nil
	if values, absent := Explain(r); values[ActorKillsPerS] != 0 || absent[ActorKillsPerS] != "" {
		t.Errorf("no actor: actor kills/s %v, absent %q; want 0", values[ActorKillsPerS], absent[ActorKillsPerS])
	}
}

// handMadeStorm is a storm trial small enough to work every metric out by
// hand: members a, b and c sampled each second for 30 s, the storm from
// second 10 to 20, a primary until b takes over at 25, c restarted at 15.
// On the primary the counters grow by 5 (removedFromQueue), 1 (canceled)
// and 3 (operationsShed) a second, tickets read the second (10 … 19 in the
// storm) and the low-priority queue grows by exactly 3 a second.
func handMadeStorm() store.Records {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
		store.PhaseWarmup: at(0), store.PhaseStorm: at(10), store.PhaseRecovery: at(20), store.PhaseEnd: at(30)}}}
	for i := range 30 {
		for _, m := range []string{"a", "b", "c"} {
			pid, uptime := "p"+m, float64(1000*(i+1))
			if m == "c" && i >= 15 {
				pid, uptime = "pc2", float64(1000*(i-14))
			}
			resident := 100.0
			if m == "b" && i == 5 {
				resident = 2000
			}
			primary := (m == "a" && i < 25) || (m == "b" && i >= 25)
			r.Samples = append(r.Samples, store.Sample{At: at(float64(i)), Member: m, Up: true, Primary: primary, ProcessID: pid,
				Values: map[string]float64{
					store.FieldUptimeMillis:                    uptime,
					store.FieldResidentMB:                      resident,
					store.FieldReadTotalTickets:                float64(i),
					store.FieldReadLowQueueLength:              float64(3 * max(i-10, 0)),
					store.FieldReadLowRemovedFromQueue:         float64(5 * i),
					store.FieldReadLowCanceled:                 float64(i),
					store.FieldQueryMemoryOperationsShed:       float64(3 * i),
					store.FieldQueryMemoryOperationsShedQueued: float64(i),
				}})
		}
	}
	// Nine answered canaries in the warmup, 1 … 9 ms, one of them failed;
	// one the server does not implement counts in neither. One in the
	// storm (4 ms), and one in the recovery the client gave up on after
	// 5 s: its latency is only a lower bound.
	for i := range 9 {
		r.Canaries = append(r.Canaries, store.CanaryOp{Scheduled: at(float64(i)), Latency: time.Duration(i+1) * time.Millisecond,
			OK: i != 4, Code: map[bool]string{true: "", false: "NetworkError"}[i != 4]})
	}
	r.Canaries = append(r.Canaries, store.CanaryOp{Scheduled: at(9), Latency: 50 * time.Millisecond, Code: "CommandNotFound"},
		store.CanaryOp{Scheduled: at(12), Latency: 4 * time.Millisecond, OK: true},
		store.CanaryOp{Scheduled: at(25), Latency: 5 * time.Second, Code: store.ClientTimeout, Censored: true})
	op := func(s float64, o store.Outcome, code string, bytes int64) store.StormOp {
		return store.StormOp{Scheduled: at(s), Latency: time.Second, Stage: "$sort", Outcome: o, Code: code, TrackedBytes: bytes}
	}
	for i := range 6 {
		r.Storm = append(r.Storm, op(10+float64(i), store.Completed, "", 0))
	}
	r.Storm = append(r.Storm,
		op(11, store.Shed, "QueryMemoryLimitExceeded", 100), op(12, store.Shed, "QueryMemoryLimitExceeded", 200),
		op(13, store.Shed, "QueryMemoryLimitExceeded", 300), op(14, store.Killed, "Interrupted", 400),
		op(15, store.Killed, "Interrupted", 500), op(16, store.Failed, "Timeout", 0),
		op(17, store.Unsupported, "NotImplemented", 0), op(18, store.Unfinished, store.TrialEnded, 0),
		// A victim scheduled after the storm is not the storm's.
		op(21, store.Shed, "QueryMemoryLimitExceeded", 9000))
	// Two actor kills in the storm (a queued op of the low-priority queue
	// and a running op), one outside it, one that failed.
	r.KillOpActor = true
	r.Kills = []store.Kill{{At: at(12), Queued: true, Queue: store.QueueLowPriority}, {At: at(18), Queue: store.QueueRunning},
		{At: at(22), Queued: true, Queue: store.QueueNormalPriority}, {At: at(13), Err: "not found"}}
	return r
}

// handMadeMerge is a merge_partial_write trial of seven $merge ops.
func handMadeMerge() store.Records {
	r := handMadeStorm()
	r.Storm, r.Canaries, r.Kills, r.KillOpActor = nil, nil, nil, false
	r.Merge = &store.MergeRun{Ops: []store.MergeOp{
		{Op: 0, ReadPreference: ReadPrefPrimary, Outcome: store.Shed, Unsafe: true},
		{Op: 1, ReadPreference: ReadPrefPrimary, Outcome: store.Shed, Unsafe: true},
		{Op: 2, ReadPreference: ReadPrefSecondary, Outcome: store.Killed, Unsafe: true},
		{Op: 3, ReadPreference: ReadPrefSecondary, Outcome: store.Shed},
		{Op: 4, ReadPreference: ReadPrefPrimary, Outcome: store.Completed},
		{Op: 5, ReadPreference: ReadPrefSecondary, Outcome: store.Completed},
		{Op: 6, ReadPreference: ReadPrefPrimary, Outcome: store.Failed, Code: "Timeout"},
		// A shed $out: its documents are in $out's temporary collection,
		// not its target — a leftover, not an unsafe shed.
		{Op: 7, ReadPreference: ReadPrefPrimary, Case: store.MergeCaseOut, Outcome: store.Shed, OutTempDocs: 100},
	}}
	return r
}

// Every registry entry's value on the hand-made trials, worked out by hand
// (the comments show the working). An entry without a case fails.
func TestEveryRegistryMetricOnHandMadeRecords(t *testing.T) {
	stormWant := map[string]float64{
		Availability:               9.0 / 11,         // 9 of the 11 answered canaries succeeded
		AvailabilityWarmup:         8.0 / 9,          // 8 of the warmup's 9
		AvailabilityStorm:          1,                // the storm's one
		AvailabilityRecovery:       0,                // the recovery's one timed out
		Failovers:                  1,                // a → b at 25
		Restarts:                   1,                // c's new process at 15
		ServerShedsPerS:            3,                // Δ operationsShed, a primary throughout the storm
		ServerShedsInlinePerS:      2,                // 3 − 1
		ServerShedsQueuedPerS:      1,                // Δ operationsShedQueued
		ActorKillsPerS:             2.0 / 10,         // 2 actor kills in the 10 s of storm with a primary
		ActorKillsLowQueuePerS:     1.0 / 10,         // the one at 12 s
		ActorKillsNormalQueuePerS:  0,                // the one at 22 s is after the storm
		ActorKillsRunningPerS:      1.0 / 10,         // the one at 18 s
		AdmissionsPerS:             5 - 1,            // Δremoved − Δcanceled
		AdmissionsPerStormS:        5 - 1,            // a primary the whole storm: the same
		KillsPerS:                  1,                // Δcanceled
		DeparturesPerS:             5,                // Δremoved
		ServerShedsMinusAdmissions: 3 - 4,            // server sheds/s − admissions/s; the actor's kills never count
		ReadTicketsMed:             14.5,             // median of 10 … 19
		ReadTicketsMin:             10,               //
		LowQueueP95:                24 + 0.55*3,      // 0, 3 … 27: position 0.95·9 = 8.55
		LowQueueMax:                27,               //
		LowQueueSlope:              3,                // exactly 3 a second after the fill (0 … 12: below the median, 13.5)
		LowQueueGrowth:             1,                // a perfect fit (p = 0), 3/s over seconds 15 … 19 = 12 ≥ 10 ops
		RSSPeakBytes:               2000 * (1 << 20), // b's 2000 MB at second 5
		StormCompleted:             6,                //
		StormShed:                  4,                // three in the storm, one after it (still a storm op)
		StormKilled:                2,                //
		StormFailed:                1,                //
		StormUnsupported:           1,                //
		StormUnfinished:            1,                //
		CanaryP50Ms:                5,                // 1 … 9, 4 ms and one ≥ 5000 ms: the bound cannot move the median
		VictimTrackedP50:           300,              // 100, 200, 300, 400, 500 in the storm
	}
	// The p99 falls between 9 ms and the canary cut short at 5000 ms
	// (position 0.99·10 = 9.9): at least 9 + 0.9·(5000 − 9) ms.
	stormAtLeast := map[string]float64{CanaryP99Ms: 9 + 0.9*(5000-9)}
	mergeWant := map[string]float64{
		Failovers:            1,
		Restarts:             1,
		UnsafeSheds:          3,
		UnsafeShedsPrimary:   2,
		UnsafeShedsSecondary: 1,
		MergeOps:             8,
		MergeCompleted:       2,
		MergeShed:            4,
		MergeKilled:          1,
		MergeFailed:          1,
		OutTempLeftovers:     1,
	}
	check := func(kind string, r store.Records, want, wantAtLeast map[string]float64) {
		e := Evaluate(r)
		values, absent := e.Values, e.Absent
		for name, w := range wantAtLeast {
			if got, ok := e.AtLeast[name]; !ok || math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("%s trial: %s at least %v (a bound: %v), want at least %v", kind, name, got, ok, w)
			}
		}
		for name := range e.AtLeast {
			if _, ok := wantAtLeast[name]; !ok {
				t.Errorf("%s trial: %s is a lower bound, want a measurement", kind, name)
			}
		}
		for name, w := range want {
			got, ok := values[name]
			switch {
			case !ok:
				t.Errorf("%s trial: %s absent (%q), want %v", kind, name, absent[name], w)
			case math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)):
				t.Errorf("%s trial: %s = %v, want %v", kind, name, got, w)
			}
		}
		for name, v := range values {
			if _, ok := want[name]; !ok {
				t.Errorf("%s trial: %s = %v has no expected value here", kind, name, v)
			}
		}
		if len(absent) != 0 {
			t.Errorf("%s trial: absent %v, want every metric present", kind, absent)
		}
	}
	check("storm", handMadeStorm(), stormWant, stormAtLeast)
	check("merge", handMadeMerge(), mergeWant, nil)
	for _, m := range Registry {
		_, inStorm := stormWant[m.Name]
		_, inMerge := mergeWant[m.Name]
		_, bound := stormAtLeast[m.Name]
		if !inStorm && !inMerge && !bound {
			t.Errorf("registry metric %s has no hand-computed case", m.Name)
		}
	}
}

// Each entry is written with its fields named; a metric that cannot say
// what it is, or that two entries claim, would be a hole in the contract.
func TestRegistryEntriesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Registry {
		if m.Name == "" || m.Title == "" || m.Definition == "" || (m.compute == nil) == (m.bound == nil) {
			t.Errorf("registry entry %+v lacks a name, title, definition or compute", m)
		}
		if seen[m.Name] {
			t.Errorf("registry metric %s twice", m.Name)
		}
		seen[m.Name] = true
		if m.Better < -1 || m.Better > 1 {
			t.Errorf("%s: Better %d, want −1, 0 or +1", m.Name, m.Better)
		}
	}
	for _, rp := range []string{ReadPrefPrimary, ReadPrefSecondary} {
		if name, ok := UnsafeShedsOn(rp); !ok || !seen[name] {
			t.Errorf("UnsafeShedsOn(%q) = %q, %v: want a registry metric", rp, name, ok)
		}
	}
}
