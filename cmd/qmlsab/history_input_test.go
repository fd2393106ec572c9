package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/store"
)

// quickRun runs a small virtual-clock experiment into dir (more args,
// such as --shard, appended).
func quickRun(t *testing.T, wl, dir string, seed int, more ...string) {
	t.Helper()
	args := append([]string{"run", "--arms", "D,E", "--n", "3", "--workload", wl, "--seed", fmt.Sprint(seed), "--out", dir}, more...)
	if out, code := qmlsab(t, args...); code != 0 {
		t.Fatalf("qmlsab %s: exit %d:\n%s", strings.Join(args, " "), code, out)
	}
}

// addedNight is the N an output's "added … as night N (…" line names, as
// the second element of a two-element slice (the line's whole match
// first), or nil when no line says so.
func addedNight(out string) []string {
	for _, l := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(l, "added ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(rest, " as night "); i >= 0 {
			night, tail, _ := strings.Cut(rest[i+len(" as night "):], " ")
			if night != "" && strings.HasPrefix(tail, "(") {
				return []string{l, night}
			}
		}
	}
	return nil
}

// Nothing unknown passes: a label, arm, metric or workload that matches
// nothing, or a history that does not exist, is exit 1 naming the value
// and what exists; readers create no file, even in a folder they may not
// write (as root the permissions do not bite, so what is asserted is that
// the folder's files are the same before and after).
func TestHistoryReadersRefuseWhatMatchesNothing(t *testing.T) {
	tmp := t.TempDir()
	wl := nightlyWorkload(t, tmp, 150)
	run := filepath.Join(tmp, "results", "night")
	quickRun(t, wl, run, 11)
	hist := filepath.Join(tmp, "hist")
	db := filepath.Join(hist, "history.db")
	if out, code := qmlsab(t, "history", "add", "--history-db", db, "--label", "branch=master", run); code != 0 {
		t.Fatalf("history add: exit %d:\n%s", code, out)
	}
	if err := os.Chmod(hist, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(hist, 0o755) })
	before := stormtest.DirEntries(t, hist)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"history", "list", "--label", "branch=mster"}, []string{"branch=mster", "branch=master"}},
		{[]string{"history", "list", "--workload", "nightlyy"}, []string{`"nightlyy"`, "nightly"}},
		{[]string{"history", "detect", "--arms", "Q"}, []string{`"Q"`, "D, E"}},
		{[]string{"history", "detect", "--metric", "foo"}, []string{`"foo"`, "availability"}},
		{[]string{"history", "detect", "--label", "branch=mster"}, []string{"branch=mster", "branch=master"}},
		{[]string{"history", "export", "--arms", "Q"}, []string{`"Q"`, "D, E"}},
		{[]string{"history", "export", "--metric", "foo"}, []string{`"foo"`}},
		{[]string{"history", "export", "--workload", "x"}, []string{`"x"`, "nightly"}},
		{[]string{"trend", "--metric", "foo", "--out", filepath.Join(tmp, "trend.html")}, []string{`"foo"`}},
		{[]string{"trend", "--arms", "Q", "--out", filepath.Join(tmp, "trend.html")}, []string{`"Q"`}},
		{[]string{"trend", "--last", "-1", "--out", filepath.Join(tmp, "trend.html")}, []string{"--last -1"}},
		{[]string{"history", "list", "--last", "-2"}, []string{"--last -2"}},
	} {
		out, code := qmlsab(t, append(c.args, "--history-db", db)...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1:\n%s", strings.Join(c.args, " "), code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the error does not say %s:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	// What exists passes, in the read-only folder.
	out, code := qmlsab(t, "history", "list", "--wide", "--history-db", db, "--label", "branch=master", "--workload", "nightly")
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("history list of what exists: exit %d:\n%s", code, out)
	}
	if out, code := qmlsab(t, "history", "detect", "--history-db", db, "--arms", "D", "--metric", "availability"); code != 0 {
		t.Errorf("history detect of what exists: exit %d:\n%s", code, out)
	}
	if after := stormtest.DirEntries(t, hist); !slices.Equal(after, before) {
		t.Errorf("readers changed the history's folder: %v, then %v", before, after)
	}
	// A history that does not exist is an error, and nothing is created.
	nowhere := filepath.Join(tmp, "nowhere", "h.db")
	for _, cmd := range [][]string{{"history", "list"}, {"history", "detect"}, {"history", "export"}, {"trend", "--out", filepath.Join(tmp, "t2.html")}} {
		out, code := qmlsab(t, append(cmd, "--history-db", nowhere)...)
		if code != 1 || !strings.Contains(out, nowhere) {
			t.Errorf("%s --db %s: exit %d, want 1 naming the file:\n%s", strings.Join(cmd, " "), nowhere, code, out)
		}
	}
	if _, err := os.Stat(filepath.Dir(nowhere)); !os.IsNotExist(err) {
		t.Errorf("a reader created %s: %v", filepath.Dir(nowhere), err)
	}
}

// A night is a plan, not a folder name: the same folder name on another
// night is another night, re-adding a run changes nothing, the shards of
// one plan are one night whether added as shards or merged, hosts and
// start come from the trials, and a locked or unfinished run is refused
// unless --allow-partial.
func TestHistoryNightIsAPlan(t *testing.T) {
	tmp := t.TempDir()
	wl := nightlyWorkload(t, tmp, 150)
	db := filepath.Join(tmp, "history.db")
	add := func(args ...string) (string, int) {
		return qmlsab(t, append([]string{"history", "add", "--history-db", db}, args...)...)
	}

	// One folder name, two nights.
	dir := filepath.Join(tmp, "results", "nightly")
	quickRun(t, wl, dir, 5)
	out, code := add(dir)
	first := addedNight(out)
	if code != 0 || first == nil {
		t.Fatalf("history add: exit %d:\n%s", code, out)
	}
	if out, code := add(dir); code != 0 || !strings.Contains(out, "already in") {
		t.Errorf("re-adding the run: exit %d, want a no-op:\n%s", code, out)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	quickRun(t, wl, dir, 5) // the same experiment again, tomorrow
	out, code = add(dir)
	second := addedNight(out)
	if code != 0 || second == nil || second[1] == first[1] {
		t.Fatalf("the same folder name on another night: exit %d (first night %v):\n%s", code, first, out)
	}

	// Three shards on three hosts, sharing the pipeline's stamp.
	t.Setenv(store.RunIDEnv, "ci-77")
	shards := []string{}
	for i := 1; i <= 3; i++ {
		t.Setenv("QMLSAB_HOST_FINGERPRINT", fmt.Sprintf(`{"hostname":"runner-%d","cpuModel":"test CPU","cores":2}`, i))
		d := filepath.Join(tmp, "shards", fmt.Sprintf("shard-%d", i))
		quickRun(t, wl, d, 9, "--shard", fmt.Sprintf("%d/3", i))
		shards = append(shards, d)
	}
	os.Unsetenv("QMLSAB_HOST_FINGERPRINT")
	out, code = qmlsab(t, append([]string{"report", "--format", "json", "--history", "--history-db", db}, shards...)...)
	if code != 0 || strings.Count(out, "history: added") != 1 {
		t.Fatalf("report --history of three shards: exit %d, want one night added:\n%s", code, out)
	}
	night := addedNight(out)
	m, err := store.ReadManifest(shards[0])
	if err != nil {
		t.Fatal(err)
	}
	if night == nil || night[1] != m.RunID || !strings.HasPrefix(m.RunID, "ci-77-") {
		t.Fatalf("the shards' night is %v; want their manifest run id %q (stamp ci-77)", night, m.RunID)
	}
	merged := filepath.Join(tmp, "merged")
	if out, code := qmlsab(t, append([]string{"merge", "--expect", "3", "--out", merged}, shards...)...); code != 0 {
		t.Fatalf("merge: exit %d:\n%s", code, out)
	}
	if mm, err := store.ReadManifest(merged); err != nil || mm.RunID != m.RunID {
		t.Fatalf("the merged run's id is %q (%v); want the shards' %q", mm.RunID, err, m.RunID)
	}
	if out, code := add(merged); code != 0 || !strings.Contains(out, "already in") {
		t.Errorf("adding the merge of stored shards: exit %d, want a no-op:\n%s", code, out)
	}
	out, code = qmlsab(t, "history", "list", "--wide", "--history-db", db)
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(out, "runner-1,runner-2,runner-3") {
		t.Errorf("history list: exit %d, want three nights, the shards' one on runner-1,runner-2,runner-3:\n%s", code, out)
	}
	// The night starts with its earliest trial, not at the merge.
	r, err := store.Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	var earliest time.Time
	for _, ts := range r.Trials {
		for _, tr := range ts {
			if earliest.IsZero() || tr.Started.Before(earliest) {
				earliest = tr.Started
			}
		}
	}
	if !strings.Contains(out, earliest.UTC().Format("2006-01-02 15:04")+"  "+m.RunID) {
		t.Errorf("the shards' night does not start at its earliest trial %s:\n%s", earliest.UTC(), out)
	}

	// Shards without a stamp are still one night, added as shards or merged.
	os.Unsetenv(store.RunIDEnv)
	var own []string
	for i := 1; i <= 3; i++ {
		d := filepath.Join(tmp, "own", fmt.Sprintf("shard-%d", i))
		quickRun(t, wl, d, 9, "--shard", fmt.Sprintf("%d/3", i))
		own = append(own, d)
	}
	if out, code := add(own...); code != 0 || strings.Count(out, "history: added") != 1 {
		t.Fatalf("history add of three unstamped shards: exit %d, want one night:\n%s", code, out)
	}
	ownMerged := filepath.Join(tmp, "own-merged")
	if out, code := qmlsab(t, append([]string{"merge", "--expect", "3", "--out", ownMerged}, own...)...); code != 0 {
		t.Fatalf("merge: exit %d:\n%s", code, out)
	}
	if out, code := add(ownMerged); code != 0 || !strings.Contains(out, "already in") {
		t.Errorf("adding the merge of stored unstamped shards: exit %d, want a no-op:\n%s", code, out)
	}

	// Incomplete: two of three shards merged with --allow-partial.
	partial := filepath.Join(tmp, "partial")
	if out, code := qmlsab(t, "merge", "--expect", "3", "--allow-partial", "--out", partial, own[0], own[1]); code != 0 {
		t.Fatalf("merge --allow-partial: exit %d:\n%s", code, out)
	}
	if out, code := add(partial); code != 1 || !strings.Contains(out, "4 of 6 planned trials") || !strings.Contains(out, "--allow-partial") {
		t.Errorf("history add of an unfinished run: exit %d, want 1 saying 4 of 6 trials:\n%s", code, out)
	}
	if out, code := add(own[0]); code != 1 || !strings.Contains(out, "2 of 6 planned trials") {
		t.Errorf("history add of one shard of three: exit %d, want 1 saying 2 of 6 trials:\n%s", code, out)
	}
	if out, code := add("--allow-partial", partial); code != 0 || !strings.Contains(out, "partial)") {
		t.Errorf("history add --allow-partial: exit %d, want it stored as partial:\n%s", code, out)
	}
	if out, _ := qmlsab(t, "history", "list", "--history-db", db); !strings.Contains(out, "(PARTIAL)") {
		t.Errorf("history list does not mark the partial night:\n%s", out)
	}

	// Locked: a live writer (this process) holds the run's lock.
	locked := filepath.Join(tmp, "results", "locked")
	quickRun(t, wl, locked, 21)
	lock, err := store.Acquire(locked)
	if err != nil {
		t.Fatal(err)
	}
	out, code = add(locked)
	lock.Release()
	if code != 1 || !strings.Contains(out, "still being written") || !strings.Contains(out, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("history add of a locked run: exit %d, want 1 naming the writer:\n%s", code, out)
	}
	if out, code := qmlsab(t, "report", "--format", "json", "--history", "--history-db", db, locked); code != 0 || !strings.Contains(out, "history: added") {
		t.Errorf("report --history once the lock is gone: exit %d:\n%s", code, out)
	}
}

// The newest run is the one whose manifest was created last, whatever
// the folders are called.
func TestNewestRunIsByCreationTime(t *testing.T) {
	root := t.TempDir()
	day := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for name, created := range map[string]time.Time{"my-baseline": day, "20260302T020000Z-a": day.AddDate(0, 0, 1), "20260301T020000Z-b": day.AddDate(0, 0, 2)} {
		if err := store.WriteJSON(filepath.Join(root, name, store.ManifestFile), store.Manifest{Schema: store.ManifestSchema, Created: created}); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "zzz-not-a-run"), 0o755)
	got, err := report.Newest(root)
	if err != nil || got != filepath.Join(root, "20260301T020000Z-b") {
		t.Fatalf("report.Newest = %q, %v; want the one created last, 20260301T020000Z-b", got, err)
	}
	if _, err := report.Newest(filepath.Join(root, "zzz-not-a-run")); err == nil {
		t.Error("report.Newest of a folder without runs: no error")
	}
}
