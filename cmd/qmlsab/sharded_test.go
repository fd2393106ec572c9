package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// TestRunMergeShardedTopology is the partial-write investigation's sharded path end
// to end: on the embedded sharded cluster, arms E and F shed the
// shard-side $merge after it wrote in every $merge case (sharded target,
// unsharded target on another shard, same-shard target), and the $out
// after it wrote into its temporary collection, its target untouched (a
// leftover, not a partial write); G never sheds; every shed is a shard
// member's (the router's own operation is never shed); the samples cover
// both shards' primaries and the router; the report's merge section has
// the cases as rows. -n 3, as the acceptance runs it.
func TestRunMergeShardedTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	wl := testFile(t, "merge4.yaml", merge4)
	dir, _, _ := runWhileTheHostKeepsUp(t, "--workload", wl, "--topology", "sharded", "--arms", "E,F,G", "--n", "3")
	checkShardedMergeRun(t, dir, 3)
	if out, code := qmlsab(t, "report", "--format", "html", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range store.MergeCases {
		for _, arm := range []string{"E", "F", "G"} {
			row := "<tr><td>" + c + "</td><td>" + arm + "</td><td>3</td>"
			if !strings.Contains(string(html), row) {
				t.Errorf("report has no row for %s, arm %s (%q)", c, arm, row)
			}
		}
	}
}

// merge4 is a merge_partial_write workload of four operations per case.
const merge4 = "name: merge4\nkind: merge_partial_write\nmerge_partial_write:\n  ops: 4\n"

// checkShardedMergeRun checks every trial of a sharded merge run: each
// case once per trial; under E and F shed by a shard member (after
// writing in at least one trial), under G never shed; samples from every shard and the router.
func checkShardedMergeRun(t *testing.T, dir string, n int) {
	t.Helper()
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	unsafe := map[string]int{} // arm and case: ops shed after writing
	for _, arm := range []string{"E", "F", "G"} {
		if len(r.Valid(arm)) != n {
			t.Fatalf("%s: %d valid trials, want %d (manifest: %+v)", arm, len(r.Valid(arm)), n, r.Manifest.Trials)
		}
		for _, tr := range r.Valid(arm) {
			tdir := store.TrialDir(dir, arm, tr.Index)
			ops, err := store.ReadJSONLinesGz[store.MergeOp](filepath.Join(tdir, store.MergeFile))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, o := range ops {
				seen[o.Case] = true
				switch {
				case arm == "G" && (o.Outcome == store.Shed || o.Unsafe):
					t.Errorf("G#%d %s: %s, written %d; the write-started flag should keep it from being shed", tr.Index, o.Case, o.Outcome, o.Written)
				case arm != "G" && o.Case == store.MergeCaseOut && (o.Outcome != store.Shed || o.Unsafe || o.Written != 0 || o.OutTempDocs == 0):
					t.Errorf("%s#%d %s: %s, written %d, left in its temporary collection %d, unsafe %v; want a shed that left its documents in the temporary collection and its target untouched",
						arm, tr.Index, o.Case, o.Outcome, o.Written, o.OutTempDocs, o.Unsafe)
				case arm != "G" && o.Case != store.MergeCaseOut && (o.Outcome != store.Shed || !o.Unsafe && o.Written != 0):
					t.Errorf("%s#%d %s: %s, written %d; want a shed, after writing or before its first batch", arm, tr.Index, o.Case, o.Outcome, o.Written)
				}
				if o.Unsafe {
					unsafe[arm+" "+o.Case]++
				}
				if o.Outcome == store.Shed && (len(o.ShedBy) == 0 || !strings.HasPrefix(o.ShedBy[0], "sh")) {
					t.Errorf("%s#%d %s: shed by %v, want a shard member (a router sheds nothing)", arm, tr.Index, o.Case, o.ShedBy)
				}
			}
			for _, c := range store.MergeCases {
				if !seen[c] {
					t.Errorf("%s#%d: no op of case %s", arm, tr.Index, c)
				}
			}
			samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(tdir, store.SamplesFile))
			if err != nil {
				t.Fatal(err)
			}
			primaries := map[string]bool{}
			for _, s := range samples {
				if s.Up && (s.Primary || s.Shard == "mongos") {
					primaries[s.Shard] = true
				}
			}
			for _, want := range []string{"sh0", "sh1", "mongos"} {
				if !primaries[want] {
					t.Errorf("%s#%d: no sample of %s's primary (got %v)", arm, tr.Index, want, primaries)
				}
			}
		}
	}
	// The partial write itself: under E and F every case but $out is shed
	// after writing in some trial. One op may be shed before its first
	// batch is written: at the workload's 50 % pressure the probabilistic
	// shedder can draw a shed while batch 0 still builds (the failpoint
	// forces one only from batch 1), as mongod's would; that shed is
	// safe. A longer batch 0 (a busy machine) makes it likelier.
	for _, arm := range []string{"E", "F"} {
		for _, c := range store.MergeCases {
			if c != store.MergeCaseOut && unsafe[arm+" "+c] == 0 {
				t.Errorf("%s %s: no op of %d trials was shed after writing", arm, c, n)
			}
		}
	}
}

// shardedArms are E, F and G on the given target, sharded.
func shardedArms(t *testing.T, set func(a *arms.Arm)) []arms.Arm {
	t.Helper()
	var sel []arms.Arm
	for _, n := range []string{"E", "F", "G"} {
		a, ok := arms.Lookup(n)
		if !ok {
			t.Fatalf("no arm %s", n)
		}
		set(&a)
		sel = append(sel, a)
	}
	return sel
}

// runShardedMerge runs a sharded merge_partial_write trial of each arm
// into dir: two ops of each case, so the one trial shows a shed after
// writing even when one op's shed lands before its first batch.
func runShardedMerge(t *testing.T, dir string, sel []arms.Arm) {
	t.Helper()
	spec, _ := workload.Builtin(workload.KindMergePartialWrite)
	w := *spec.Merge
	w.Ops = 2 * len(store.MergeCases)
	spec.Merge = &w
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: 1, Workload: spec, Clock: store.ClockWall, Topology: arms.TopologySharded, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, dir, run.Exec{}); err != nil {
		t.Fatal(err)
	}
}

// TestRunMergeShardedLocalAndURI: the same through a target local whose
// mongod and mongos are cmd/mongosim (a symlink named mongos makes it a
// router), each process's log kept in the trial folder; and through a uri
// target naming a mongosim router, whose members the run discovers with
// listShards.
func TestRunMergeShardedLocalAndURI(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials on local processes")
	}
	bin, err := stormtest.BuildMongosim(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mongos := filepath.Join(filepath.Dir(bin), "mongos")
	if err := os.Symlink(bin, mongos); err != nil {
		t.Fatal(err)
	}
	t.Run("local", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		sel := shardedArms(t, func(a *arms.Arm) {
			a.Target, a.Mongod, a.Sharded = arms.TargetLocal, bin, arms.Sharded{Mongos: mongos}
		})
		runShardedMerge(t, dir, sel)
		checkShardedMergeRun(t, dir, 1)
		for _, f := range []string{"cfg/member0/mongod.log", "sh0/member0/mongod.log", "sh1/member0/mongod.log", "router0/mongos.log"} {
			if _, err := os.Stat(filepath.Join(store.TrialDir(dir, "E", 1), f)); err != nil {
				t.Errorf("log kept: %v", err)
			}
		}
	})
	t.Run("uri", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := mongosim.StartShardedCluster(ctx, mongosim.ShardedClusterOptions{MembersPerShard: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dir := filepath.Join(t.TempDir(), "run")
		sel := shardedArms(t, func(a *arms.Arm) { a.Target, a.URI = arms.TargetURI, c.URI() })
		runShardedMerge(t, dir, sel)
		checkShardedMergeRun(t, dir, 1)
	})
}

// TestRunShardedKillOpActorNamesTheShard: a sharded merge_partial_write
// run of an arm with the killOp actor (its threshold below any resident
// memory, its scope the merge workload's own application) runs one actor
// per shard: the trial keeps its kills in events.jsonl.gz, each naming
// the shard whose primary it was killed on, and none of another
// application.
func TestRunShardedKillOpActorNamesTheShard(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	wl := testFile(t, "merge4.yaml", merge4)
	armsFile := testFile(t, "arms.yaml", "arms:\n  - name: DK\n    setParameters: {}\n    actors:\n"+
		"      - killop: {rssHighPercent: 1, interval: 20ms, appName: qmlsab-merge, policy: largest-first}\n")
	dir, r, out := runWhileTheHostKeepsUp(t, "--workload", wl, "--topology", "sharded", "--arms", "DK", "--arms-file", armsFile, "--n", "1")
	if len(r.Valid("DK")) != 1 {
		t.Fatalf("DK: %d valid trials, want 1\n%s", len(r.Valid("DK")), out)
	}
	events, err := store.ReadJSONLinesGz[store.Event](filepath.Join(store.TrialDir(dir, "DK", r.Valid("DK")[0].Index), store.EventsFile))
	if err != nil {
		t.Fatalf("the actor's kills: %v", err)
	}
	kills, shards := 0, map[string]int{}
	for _, e := range events {
		if e.Kind != "kill" || e.Kill == nil {
			continue
		}
		kills++
		shards[e.Kill.Shard]++
		if !strings.HasPrefix(e.Kill.Shard, "sh") {
			t.Errorf("kill of op %d names shard %q, want the shard it was killed on", e.Kill.OpID, e.Kill.Shard)
		}
		if e.Kill.AppName != "qmlsab-merge" {
			t.Errorf("the actor killed op %d of app %q", e.Kill.OpID, e.Kill.AppName)
		}
	}
	if kills == 0 {
		t.Fatalf("no kill recorded (%d events)\n%s", len(events), out)
	}
	t.Logf("%d kills by shard %v", kills, shards)
}
