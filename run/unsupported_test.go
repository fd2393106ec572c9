package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
)

// A storm the server does not implement measures nothing about shedding:
// every member fails the storm's aggregates NotImplemented (the failCommand
// failpoint, from before the storm starts), and the trial is invalid, its
// reason naming the error and how many storm queries failed so. Those
// queries count neither as completed nor as failed, and the canaries
// (which the server still runs) keep their availability.
func TestAStormTheServerDoesNotImplementMakesTheTrialInvalid(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time trial")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := quickConfig(t, dir, 1)
	e, _ := arms.Lookup("E")
	cfg.Arms, cfg.Parallel = []arms.Arm{e}, 1
	app := cfg.Workload.SpillToDisk.AppName
	cfg.Faults = []Fault{{Name: "aggregate not implemented", At: 0, Do: func(ctx context.Context, dep target.Deployment) error {
		for i := range dep.Members() {
			if _, err := target.FailCommand(ctx, dep, i, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"aggregate"}},
				{Key: "errorCode", Value: 238}, {Key: "appName", Value: app}}); err != nil {
				return err
			}
		}
		return nil
	}}}
	out, err := cfg.run(t, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := out.Run
	if len(r.Manifest.Trials) != 1 {
		t.Fatalf("trials %+v", r.Manifest.Trials)
	}
	ts := r.Manifest.Trials[0]
	if ts.Status != store.Invalid || !strings.Contains(ts.Reason, "the server does not implement") ||
		!strings.Contains(ts.Reason, "storm queries failed NotImplemented") {
		t.Fatalf("trial %s %q: want invalid, naming NotImplemented and the count", ts.Status, ts.Reason)
	}
	t.Logf("reason: %s", ts.Reason)
	// The trial's files are still written, for a reader who wants to see.
	b, err := os.ReadFile(filepath.Join(store.TrialDir(dir, "E", 1), store.TrialFile))
	if err != nil {
		t.Fatal(err)
	}
	var tr store.Trial
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Metrics["storm_unsupported"] == 0 || tr.Metrics["storm_completed"] != 0 || tr.Metrics["storm_failed"] != 0 {
		t.Errorf("storm: unsupported %v completed %v failed %v; want every aggregate unsupported, none completed or failed",
			tr.Metrics["storm_unsupported"], tr.Metrics["storm_completed"], tr.Metrics["storm_failed"])
	}
	if tr.Metrics["availability"] < 0.5 {
		t.Errorf("availability %v: the canaries are not the storm's aggregates and should mostly succeed", tr.Metrics["availability"])
	}
}
