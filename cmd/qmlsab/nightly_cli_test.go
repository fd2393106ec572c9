package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
)

// onlyRun is the one run folder under results/.
func onlyRun(t *testing.T, root string) (string, store.Manifest) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 1 {
		t.Fatalf("%s: %v, %v; want one run folder", root, entries, err)
	}
	dir := filepath.Join(root, entries[0].Name())
	m, err := store.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// A run without --out is in results/<its run id>: the folder's name, the
// manifest's run_id and the history's night are one id. Under a stamp
// ($QMLSAB_RUN_ID) and without --seed its seed is drawn from the stamp:
// another night, another seed; the same night again is refused, naming
// --resume.
func TestARunsFolderIsItsRunIDAndAStampGivesItsSeed(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(store.RunIDEnv, "")
	args := []string{"run", "--arms", "D", "--n", "1", "--profile", "quick"}
	if out, code := qmlsab(t, args...); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	dir, m := onlyRun(t, "results")
	if filepath.Base(dir) != m.RunID || m.Seed != 1 {
		t.Errorf("folder %s, run id %s, seed %d; want the folder named after the run, seed 1", dir, m.RunID, m.Seed)
	}
	os.RemoveAll("results")

	t.Setenv(store.RunIDEnv, "night-7")
	out, code := qmlsab(t, args...)
	if code != 0 {
		t.Fatalf("run under a stamp: exit %d\n%s", code, out)
	}
	dir, m = onlyRun(t, "results")
	if filepath.Base(dir) != m.RunID || !store.RunIDOf(m.RunID, "night-7") || m.Seed != run.StampSeed("night-7") || m.Seed == 1 {
		t.Errorf("under night-7: folder %s, run id %s, seed %d; want night-7-<plan>, seed %d", dir, m.RunID, m.Seed, run.StampSeed("night-7"))
	}
	if !strings.Contains(out, fmt.Sprintf("seed %d (from $QMLSAB_RUN_ID)", m.Seed)) {
		t.Errorf("the run does not say where its seed came from:\n%s", out)
	}
	if out, code := qmlsab(t, args...); code != 1 || !strings.Contains(out, "qmlsab run --resume "+dir) {
		t.Errorf("the same night again: exit %d, want 1 naming --resume:\n%s", code, out)
	}
	if run.StampSeed("night-8") == m.Seed {
		t.Error("two nights draw one seed")
	}
	t.Setenv(store.RunIDEnv, "night-9")
	if out, code := qmlsab(t, append(args, "--seed", "5")...); code != 0 || !strings.Contains(out, "seed 5,") {
		t.Errorf("--seed under a stamp: exit %d, want seed 5:\n%s", code, out)
	}
}

// history list never folds a run id (it is what other commands take),
// and still fits 80 columns.
func TestHistoryListKeepsRunIDsWhole(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for n := range 3 {
		id := fmt.Sprintf("nightly-2026010%d-0123456789ab", n+1)
		ids = append(ids, id)
		r := history.Run{ID: id, Started: time.Date(2026, 1, 1+n, 2, 0, 0, 0, time.UTC), Workload: "spill_to_disk",
			Arms: []history.Arm{{Name: "D"}, {Name: "E"}, {Name: "F"}}, Simulated: true, Host: history.Host{Name: "runner-1,runner-2"}}
		for _, a := range []string{"D", "E", "F"} {
			r.Trials = append(r.Trials, history.Trial{Arm: a, Index: 1, Metrics: map[string]float64{"availability": 1}})
		}
		if _, err := st.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, code := qmlsab(t, "history", "list", "--history-db", db)
	if code != 0 {
		t.Fatalf("history list: exit %d\n%s", code, out)
	}
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("run id %s is not whole on one line:\n%s", id, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > texttable.Width {
			t.Errorf("a %d-column line: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.Contains(out, "2026-01-01 ") || strings.Contains(out, "02:00") {
		t.Errorf("nights on their own dates are listed by date:\n%s", out)
	}
	// detect knows tonight's run: another newest night is refused.
	if out, code := qmlsab(t, "history", "detect", "--history-db", db, "--night", "nightly-20260104"); code != 1 || !strings.Contains(out, "not tonight's") {
		t.Errorf("detect --night of a night not in the history: exit %d:\n%s", code, out)
	}
	if out, code := qmlsab(t, "history", "detect", "--history-db", db, "--night", "nightly-20260103"); code != 0 {
		t.Errorf("detect --night of the newest night's stamp: exit %d:\n%s", code, out)
	}
}
