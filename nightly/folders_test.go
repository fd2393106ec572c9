package nightly

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
)

// writeRun writes a run folder whose manifest lists trials for arm D, the
// first finished of them finished (valid), the others pending; shard is
// its shard of plan digest (nil: a whole run).
func writeRun(t *testing.T, dir, digest string, shard *plan.Shard, trials, finished int) {
	t.Helper()
	m := store.Manifest{Schema: store.ManifestSchema, Plan: &store.Plan{Digest: digest, Units: trials, Arms: []string{"D"}}, Shard: shard}
	for i := range trials {
		ts := store.TrialStatus{Arm: "D", Index: i + 1, Status: store.Pending}
		if i < finished {
			ts.Status = store.Valid
			tr := store.Trial{Schema: store.TrialSchema, Arm: "D", Index: i + 1}
			if err := store.WriteJSON(filepath.Join(store.TrialDir(dir, "D", i+1), store.TrialFile), tr); err != nil {
				t.Fatal(err)
			}
		}
		m.Trials = append(m.Trials, ts)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// The shard folders of one plan are one night, wherever they stand in the
// list; a whole run, a shard of another plan and a folder that is no run
// are each their own, in the order given.
func TestNightsGroupTheShardsOfOnePlan(t *testing.T) {
	tmp := t.TempDir()
	dir := func(name string) string { return filepath.Join(tmp, name) }
	writeRun(t, dir("s1"), "plan-a", &plan.Shard{Index: 1, Count: 2}, 1, 1)
	writeRun(t, dir("whole"), "plan-a", nil, 1, 1)
	writeRun(t, dir("other"), "plan-b", &plan.Shard{Index: 1, Count: 2}, 1, 1)
	writeRun(t, dir("s2"), "plan-a", &plan.Shard{Index: 2, Count: 2}, 1, 1)
	got := Nights([]string{dir("s1"), dir("whole"), dir("other"), dir("nothing"), dir("s2")})
	want := [][]string{{dir("s1"), dir("s2")}, {dir("whole")}, {dir("other")}, {dir("nothing")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Nights = %q\nwant %q", got, want)
	}
}

// A finished night is ready; an unfinished one is refused with its
// counts (an *UnfinishedError, which names no flag of any command)
// unless partial nights are allowed, and then it is partial; a night
// still being written is refused, naming its folder.
func TestReadyRefusesUnfinishedAndLiveNights(t *testing.T) {
	tmp := t.TempDir()
	done, half := filepath.Join(tmp, "done"), filepath.Join(tmp, "half")
	writeRun(t, done, "p", nil, 2, 2)
	writeRun(t, half, "q", nil, 4, 1)
	if partial, err := Ready([]string{done}, false); err != nil || partial {
		t.Errorf("a finished night: partial %v, %v", partial, err)
	}
	_, err := Ready([]string{half}, false)
	var u *UnfinishedError
	if !errors.As(err, &u) || u.Finished != 1 || u.Planned != 4 || err.Error() != half+": 1 of 4 planned trials finished" {
		t.Errorf("an unfinished night: %v, want 1 of 4 planned trials finished", err)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the refusal %q names a flag: the command adds that", err)
	}
	if partial, err := Ready([]string{half}, true); err != nil || !partial {
		t.Errorf("an unfinished night allowed: partial %v, %v", partial, err)
	}
	lock, err := store.Acquire(done)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := Ready([]string{done}, true); err == nil || !strings.Contains(err.Error(), done) || !strings.Contains(err.Error(), "still being written") {
		t.Errorf("a night being written: %v", err)
	}
}

// history list's table: dates alone while no two nights share one, the
// flags (simulated, partial) beside the host, labels sorted, and for
// machines arms and labels as [] and {} rather than null.
func TestListTable(t *testing.T) {
	day := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	runs := []history.RunSummary{
		{ID: "n1", Started: day, Workload: "spill_to_disk", Arms: []string{"D", "E"}, Host: history.Host{Name: "ci"}, Trials: 10,
			Labels: map[string]string{"commit": "abc", "branch": "master"}, Simulated: true},
		{ID: "n2", Started: day.Add(24 * time.Hour), Workload: "spill_to_disk", Host: history.Host{Name: "ci"}, Trials: 3, Partial: true},
	}
	var b bytes.Buffer
	if err := ListTable(runs).Write(&b, texttable.Format{Wide: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-12-01", "ci (SIMULATED)", "ci (PARTIAL)", "branch=master commit=abc"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "02:00") {
		t.Errorf("nights on different days shown with times:\n%s", b.String())
	}
	runs[1].Started = day.Add(time.Hour)
	b.Reset()
	ListTable(runs).Write(&b, texttable.Format{Machine: texttable.JSON})
	if !strings.Contains(b.String(), `"arms": []`) || !strings.Contains(b.String(), `"labels": {}`) {
		t.Errorf("JSON of a night without arms or labels:\n%s", b.String())
	}
	b.Reset()
	ListTable(runs).Write(&b, texttable.Format{})
	if !strings.Contains(b.String(), "2026-12-01 03:00") {
		t.Errorf("two nights on one day shown without their times:\n%s", b.String())
	}
}
