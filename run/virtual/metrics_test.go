package virtual

import (
	"context"
	"math"
	"testing"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// The metrics named for what they count, on real virtual trials of the
// default profile (make run's): D, the killOp actor on a base build, sheds
// nothing of its own — its server sheds are 0 and its actor's kills,
// counted apart, add up by queue to all of them; E, the inline shedder
// alone, dies of OOM, and each of its primaries' lives that ended so
// names the queue that held the most tracked memory at its last sample.
func TestVirtualTrialsCountServerShedsAndActorKillsApart(t *testing.T) {
	if testing.Short() {
		t.Skip("two default-profile trials")
	}
	d, err := Run(context.Background(), DefaultConfig(1), builtins(t, "D")[0])
	if err != nil {
		t.Fatal(err)
	}
	dm := metric.Evaluate(d.Records)
	if v, ok := dm.Values[metric.ServerShedsPerS]; !ok || v != 0 {
		t.Errorf("D: server sheds/s = %v (present %v, %q); its server has no shedder", v, ok, dm.Absent[metric.ServerShedsPerS])
	}
	all, ok := dm.Values[metric.ActorKillsPerS]
	if !ok || all <= 0 {
		t.Fatalf("D: actor kills/s = %v (present %v, %q); its actor kills", all, ok, dm.Absent[metric.ActorKillsPerS])
	}
	byQueue := 0.0
	for _, m := range []string{metric.ActorKillsLowQueuePerS, metric.ActorKillsNormalQueuePerS, metric.ActorKillsRunningPerS} {
		v, ok := dm.Values[m]
		if !ok {
			t.Errorf("D: %s absent (%q)", m, dm.Absent[m])
		}
		byQueue += v
	}
	if math.Abs(byQueue-all) > 1e-9*all {
		t.Errorf("D: actor kills by queue add up to %v/s, all of them are %v/s", byQueue, all)
	}
	for _, k := range d.Records.Kills {
		if k.Queue == "" || (k.Queue == store.QueueRunning) == k.Queued {
			t.Fatalf("D: kill %+v names no queue, or one its Queued contradicts", k)
		}
	}
	if gap := dm.Values[metric.ServerShedsMinusAdmissions]; gap >= 0 {
		t.Errorf("D: server sheds/s − admissions/s = %v; a server that sheds nothing shows no sweeper's signature", gap)
	}

	e, err := Run(context.Background(), crashLoops(1), builtins(t, "E")[0])
	if err != nil {
		t.Fatal(err)
	}
	em := metric.Evaluate(e.Records)
	if em.Values[metric.ActorKillsPerS] != 0 || em.Values[metric.ServerShedsPerS] <= 0 {
		t.Errorf("E: actor kills/s %v, server sheds/s %v; want none and some", em.Values[metric.ActorKillsPerS], em.Values[metric.ServerShedsPerS])
	}
	if em.Values[metric.AdmissionsPerStormS] >= em.Values[metric.AdmissionsPerS] {
		t.Errorf("E: admissions/s of storm %v not below admissions/s with a primary %v, though its storm had seconds without one",
			em.Values[metric.AdmissionsPerStormS], em.Values[metric.AdmissionsPerS])
	}
	crashed := 0
	for _, l := range metric.PrimaryLives(e.Records) {
		if l.Cause != store.LifeCrashed {
			continue
		}
		crashed++
		if l.HeaviestQueue == "" || l.TrackedAtEnd[l.HeaviestQueue] <= 0 {
			t.Errorf("E: %s's life ending %v by OOM names no queue holding its memory (%v)", l.Member, l.End, l.TrackedAtEnd)
		}
		t.Logf("E: %s %v–%v %s, admissions/s %v, heaviest %s (%d MiB of %v)", l.Member, l.Start.Sub(e.Start), l.End.Sub(e.Start), l.Cause,
			l.AdmissionsPerS, l.HeaviestQueue, l.TrackedAtEnd[l.HeaviestQueue]>>20, l.TrackedAtEnd)
	}
	if crashed == 0 {
		t.Errorf("E: no primary life ended in a crash, though E crash-loops (%v restarts)", em.Values[metric.Restarts])
	}
}
