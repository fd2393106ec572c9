package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// unfinish marks trials of a finished run pending again and removes their
// folders, as a run killed before them leaves it.
func unfinish(t *testing.T, dir string, trials ...string) {
	t.Helper()
	m, err := store.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range m.Trials {
		for _, name := range trials {
			if plan.Key(ts.Arm, ts.Index) == name {
				m.Trials[i].Status, m.Trials[i].Reason, m.Trials[i].Host = store.Interrupted, "", ""
				if err := os.RemoveAll(store.TrialDir(dir, ts.Arm, ts.Index)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// A run started with an arms file that redefines D (no killOp actor) and
// resumed without it runs the D its manifest records, not the built-in
// D: every D trial kills nothing. The built-in D given by name on resume
// is refused, naming the arm and the field, before anything is written.
func TestResumeRunsTheArmsItsManifestRecords(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	custom, _ := arms.Lookup("D")
	custom.Actors, custom.Description = nil, "D without its actor"
	e, _ := arms.Lookup("E")
	dir := filepath.Join(t.TempDir(), "run")
	cfg := trialRun{Spec: Spec{Arms: []arms.Arm{custom, e}, N: 2, Workload: spec, Profile: "quick", Seed: 3, Clock: store.ClockVirtual},
		Exec: Exec{Parallel: 1, ToolVersion: "test", Host: &store.Host{ID: "h1", Hostname: "one"}}, Dir: dir}
	if _, err := cfg.run(t, context.Background()); err != nil {
		t.Fatal(err)
	}
	unfinish(t, dir, "D#2", "E#2")
	before, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile))

	// As the CLI resumed before: the arms by name, D the built-in.
	x := Exec{ToolVersion: "test", Host: cfg.Host}
	_, err := Resume(context.Background(), dir, x, Given{Arms: planArms(t, "D", "E"), AllArms: true})
	if !isField(err, FieldArms) || !strings.Contains(err.Error(), FieldArms+": arm D is not the arm") || !strings.Contains(err.Error(), "actors: recorded (none), given killop{") {
		t.Fatalf("resume with the built-in D: %v, want a refusal naming arm D and its actors", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile)); string(after) != string(before) {
		t.Error("the refused resume changed the manifest")
	}
	// An arm the run does not have is refused too; named as all the
	// run's arms, a list without one of them is.
	if _, err := Resume(context.Background(), dir, x, Given{Arms: planArms(t, "F")}); !isField(err, FieldArms) || !strings.Contains(err.Error(), "arm F is not one of the arms of the run") {
		t.Errorf("resume with arm F: %v", err)
	}
	if _, err := Resume(context.Background(), dir, x, Given{Arms: []arms.Arm{custom}, AllArms: true}); !isField(err, FieldArms) || !strings.Contains(err.Error(), "has the arms D,E") {
		t.Errorf("resume naming D alone as the run's arms: %v", err)
	}
	// Definitions offered for arms the run does not have are left out.
	if _, err := Resume(context.Background(), dir, x, Given{Defined: planArms(t, "F", "G")}); err != nil {
		t.Fatalf("resume offered F and G: %v", err)
	}
	out, err := Resume(context.Background(), dir, x, Given{})
	if err != nil {
		t.Fatalf("resume with the recorded arms: %v", err)
	}
	r := out.Run
	for _, arm := range []string{"D", "E"} {
		if len(r.Valid(arm)) != 2 {
			t.Fatalf("%s: %d valid trials after the resume, want 2", arm, len(r.Valid(arm)))
		}
	}
	for _, tr := range r.Trials["D"] {
		killed, ok := tr.Metrics[metric.StormKilled]
		if !ok || killed != 0 {
			t.Errorf("D#%d killed %v (recorded: %t): the resumed D is not the D without an actor the run started with", tr.Index, killed, ok)
		}
	}
}

// A uri arm's credentials are not in the manifest: resumed from the record
// alone it is refused, naming the arm and the arms file; given again, the
// file's arm (with its password) runs; another host is refused by field.
func TestResumedURIArmTakesItsCredentialsFromTheArmsFile(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	u := arms.Arm{Name: "U", Target: arms.TargetURI, URI: "mongodb://bob:s3cret@127.0.0.1:1/?replicaSet=rs0", SetParameters: map[string]string{}}
	e, _ := arms.Lookup("E")
	cfg := trialRun{Spec: Spec{Arms: []arms.Arm{u, e}, N: 1, Workload: spec, Profile: "quick", Seed: 9, Clock: store.ClockWall},
		Exec: Exec{ToolVersion: "test"}, Dir: t.TempDir()}
	m, err := newManifest(cfg.experiment(t), cfg.Exec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m.Arms), "s3cret") {
		t.Fatal("the manifest holds the password")
	}
	r := &store.Run{Dir: cfg.Dir, Manifest: m}
	_, err = resumeArms(nil, r)
	if !isField(err, FieldDefined) || !strings.Contains(err.Error(), "arm U: ") || strings.Contains(err.Error(), "s3cret") ||
		!strings.Contains(field.Text(err, func(f string) string { return map[string]string{FieldDefined: "--arms-file"}[f] }), "(--arms-file FILE)") {
		t.Fatalf("resuming U from the record alone: %v", err)
	}
	got, err := resumeArms([]arms.Arm{u}, r)
	if err != nil || len(got) != 2 || got[0].URI != u.URI || got[1].Name != "E" {
		t.Fatalf("resuming with U's file: %+v %v", got, err)
	}
	moved := u
	moved.URI = "mongodb://bob:s3cret@127.0.0.2:1/?replicaSet=rs0"
	if _, err := resumeArms([]arms.Arm{moved}, r); err == nil || !strings.Contains(err.Error(), "uri: recorded mongodb://bob:<redacted>@127.0.0.1:1") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("resuming U pointed at another host: %v", err)
	}
}

// A manifest written before qmlsab recorded an arm's topology holds an
// arms file's sharded arm as a replica set: the finished trials, which
// ran on a sharded cluster, say so, and the resume is refused rather than
// finishing the arm on a replica set.
func TestResumeRefusesAnArmWhoseTrialsRanOnAnotherTopology(t *testing.T) {
	s, _ := arms.Lookup("E")
	r := &store.Run{Dir: "r", Trials: map[string][]store.Trial{"E": {{Arm: "E", Index: 1, Metadata: []byte(`{"topology":"sharded"}`)}}}}
	if err := ranAs(s, r); err == nil || !strings.Contains(err.Error(), "arm E: its trial 1 ran on a sharded cluster") {
		t.Errorf("a replica-set E whose trial ran sharded: %v", err)
	}
	s.Topology, s.Sharded = arms.TopologySharded, arms.Sharded{}.WithDefaults()
	if err := ranAs(s, r); err != nil {
		t.Errorf("a sharded E whose trial ran sharded: %v", err)
	}
}
