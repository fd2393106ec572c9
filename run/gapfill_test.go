package run

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
)

// A local trial whose primary is SIGKILLed mid-storm after it stopped
// answering serverStatus for 4 s (as a member thrashing towards an OOM
// kill does; a failCommand failpoint blocks the command 3 s, beyond the
// sampler's 1 s timeout). The sampler is blind from the stall until the
// restart; the member's own diagnostic data, written in-process and
// rewritten to disk every sample, holds the stalled seconds, and gap
// filling takes them. Both counts are measured (the trial's samples say
// which came from the diagnostic data).
func TestGapFillingFromDiagnosticDataAfterASIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time trial of a 3-process set")
	}
	stalled := -1
	cfg := faultConfig(t, localArm(t),
		Fault{Name: "primary stops answering serverStatus", At: 3 * time.Second, Do: func(ctx context.Context, dep target.Deployment) error {
			i, err := target.PrimaryIndex(ctx, dep)
			if err != nil {
				return err
			}
			stalled = i
			_, err = target.FailCommand(ctx, dep, i, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"serverStatus"}},
				{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 3000}})
			return err
		}},
		Fault{Name: "SIGKILL the stalled primary", At: 7 * time.Second, Do: func(ctx context.Context, dep target.Deployment) error {
			return target.KillMember(dep, stalled, 0)
		}})
	tr, _, samples := runFaulted(t, cfg)
	if tr.Metrics["restarts"] < 1 {
		t.Fatalf("restarts %v: the kill must show", tr.Metrics["restarts"])
	}
	var sampler []store.Sample
	members := map[string]bool{}
	filled := 0
	for _, s := range samples {
		members[s.Member] = true
		if s.FromFTDC {
			filled++
			continue
		}
		sampler = append(sampler, s)
	}
	var names []string
	for m := range members {
		names = append(names, m)
	}
	total := cfg.Workload.Duration()
	without := unobservedSeconds(sampler, names, tr.Started, total)
	with := unobservedSeconds(samples, names, tr.Started, total)
	t.Logf("unobserved member-seconds of %d (3 members × %v): %d without gap filling, %d with (%d samples from diagnostic data)",
		3*int(total/time.Second), total, without, with, filled)
	if with >= without {
		t.Errorf("gap filling left %d unobserved member-seconds of %d: want fewer", with, without)
	}
	// Every filled sample is in a second the sampler missed for its member.
	for _, s := range samples {
		if s.FromFTDC && observed(sampler, s.Member, tr.Started)[second(s.At, tr.Started)] {
			t.Errorf("a diagnostic sample of %s at %s fills a second the sampler had", s.Member, s.At.Format("15:04:05.000"))
		}
	}
	series, err := store.ReadJSONLinesGz[store.Second](filepath.Join(store.TrialDir(cfg.Dir, tr.Arm, tr.Index), store.SeriesFile))
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, s := range series {
		if s.FTDC {
			marked++
		}
	}
	t.Logf("%d of %d seconds of the per-second series from diagnostic data", marked, len(series))
}
