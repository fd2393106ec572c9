package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// TestRunStormShardedTopology is the spill_to_disk storm through mongos
// end to end: on the embedded sharded cluster (wall clock), arms D and E
// each run a valid trial; the samples cover both shards' primaries and
// the router; the storm's aggregations reached both shards (each shard
// primary's spill counters rose: its blocking stages ran there); every
// storm op has an outcome; the report has a panel per shard and one for
// the router, whose tickets are "–" with the reason.
func TestRunStormShardedTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time trials")
	}
	wl := testFile(t, "short.yaml", "name: short\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 30\n  phases: {warmup: 2s, storm: 5s, recovery: 3s}\n")
	// The virtual clock refuses a sharded storm, naming the clock.
	out, code := qmlsab(t, "run", "--workload", wl, "--topology", "sharded", "--arms", "D,E", "--n", "1", "--out", filepath.Join(t.TempDir(), "virtual"))
	if code == 0 || !strings.Contains(out, "--clock") {
		t.Fatalf("a sharded storm on the virtual clock: exit %d, want a refusal naming --clock:\n%s", code, out)
	}
	dir, r, out := runWhileTheHostKeepsUp(t, "--workload", wl, "--topology", "sharded", "--clock", "wall", "--arms", "D,E", "--n", "1")
	for _, arm := range []string{"D", "E"} {
		if len(r.Valid(arm)) != 1 {
			t.Fatalf("%s: %d valid trials, want 1:\n%s", arm, len(r.Valid(arm)), out)
		}
		tdir := store.TrialDir(dir, arm, 1)
		samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(tdir, store.SamplesFile))
		if err != nil {
			t.Fatal(err)
		}
		// Each shard primary's spills over the trial (last − first sample).
		first, last := map[string]float64{}, map[string]float64{}
		sampled := map[string]bool{}
		for _, s := range samples {
			if !s.Up || !(s.Primary || s.Shard == "mongos") {
				continue
			}
			sampled[s.Shard] = true
			if !s.Primary {
				continue
			}
			spills := s.Values[store.FieldSpillsSort] + s.Values[store.FieldSpillsGroup] + s.Values[store.FieldSpillsSetWindowFields]
			if _, ok := first[s.Shard]; !ok {
				first[s.Shard] = spills
			}
			last[s.Shard] = spills
		}
		for _, want := range []string{"sh0", "sh1", "mongos"} {
			if !sampled[want] {
				t.Errorf("%s: no sample of %s (its primary, or the router; got %v)", arm, want, sampled)
			}
		}
		for _, sh := range []string{"sh0", "sh1"} {
			if last[sh] <= first[sh] {
				t.Errorf("%s: shard %s's primary spilled nothing in the trial (%v → %v): the storm did not reach it", arm, sh, first[sh], last[sh])
			}
		}
		storm, err := store.ReadJSONLinesGz[store.StormOp](filepath.Join(tdir, store.StormFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(storm) == 0 {
			t.Fatalf("%s: no storm op recorded", arm)
		}
		for _, o := range storm {
			if o.Outcome == "" {
				t.Fatalf("%s: a storm op without an outcome: %+v", arm, o)
			}
		}
	}
	if out, code := qmlsab(t, "report", "--format", "html", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{`id="shard-sh0"`, `id="shard-sh1"`, `id="shard-mongos"`, `id="shards"`,
		"Shard sh0 (its primary", "Shard sh1 (its primary", "<td>shard sh0</td><td>D</td>", "<td>shard sh1</td><td>E</td>",
		"<td>router mongos</td><td>E</td>", "storage admission is a shard&#39;s"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html has no %q", want)
		}
	}
	if t.Failed() {
		if i := strings.Index(page, `id="shards"`); i >= 0 {
			t.Logf("the per-shard table: %.3000s", page[i:])
		}
	}
	// The per-shard panels draw in a real browser (make test installs
	// chromium before the Go tests run; elsewhere this part is skipped).
	browser := lookChromium()
	if browser == "" {
		t.Log("no chromium: the shard panels were not drawn in a browser")
		return
	}
	// probeReport fails any chart that drew blank or holds no data; each
	// shard's four panels and the router's queries must be among them.
	charts, _, ok := probeLines(probeReport(t, browser, dir))
	if !ok {
		t.Fatal("the probe did not report")
	}
	for _, sh := range []string{"sh0", "sh1"} {
		if n := strings.Count(charts, "shard-"+sh+"-"); n < 4 {
			t.Errorf("the browser drew %d charts of shard %s, want its 4 panels at least: %s", n, sh, charts)
		}
	}
	if !strings.Contains(charts, "shard-mongos-") {
		t.Errorf("the browser drew no chart of the router: %s", charts)
	}
}
