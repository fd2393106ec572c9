package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nightlyWorkload is the storm of the pipeline tests: the quick profile's
// phases at a given storm rate, under one workload name.
func nightlyWorkload(t *testing.T, dir string, rate int) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("nightly-%d.yaml", rate))
	doc := fmt.Sprintf("name: nightly\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: %d\n  phases: {warmup: 3s, storm: 15s, recovery: 6s}\n", rate)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The nightly pipeline end to end: 24 nights of `qmlsab run` then
// `qmlsab report --history` (virtual clock, a different seed each night);
// from night 13 on the storm is heavier, which costs arm D availability.
// `qmlsab history detect` finds the change at night 13 (± 1) and exits 4;
// re-adding a night changes nothing; list shows one line per night.
func TestNightlyPipelineFindsTheRegression(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "history.db")
	light, heavy := nightlyWorkload(t, tmp, 150), nightlyWorkload(t, tmp, 350)
	var first string
	for night := 1; night <= 24; night++ {
		wl := light
		if night >= 13 {
			wl = heavy
		}
		dir := filepath.Join(tmp, "results", fmt.Sprintf("night-%02d", night))
		if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "3", "--workload", wl, "--seed", fmt.Sprint(100+night), "--out", dir); code != 0 {
			t.Fatalf("night %d: run exit %d:\n%s", night, code, out)
		}
		out, code := qmlsab(t, "report", dir, "--format", "json", "--history", "--history-db", db, "--label", "branch=master")
		if code != 0 || !strings.Contains(out, "history: added "+dir+" as night ") {
			t.Fatalf("night %d: report --history exit %d:\n%s", night, code, out)
		}
		if first == "" {
			first = dir
		}
	}
	if out, code := qmlsab(t, "history", "add", "--history-db", db, "--label", "branch=master", first); code != 0 || !strings.Contains(out, "already in") {
		t.Errorf("re-adding a night: exit %d, %q; want it to change nothing and say so", code, out)
	}
	out, code := qmlsab(t, "history", "list", "--wide", "--history-db", db)
	if code != 0 || strings.Count(out, "\n") != 1+24 {
		t.Errorf("history list: exit %d, %d lines (want a header and 24 nights):\n%s", code, strings.Count(out, "\n"), out)
	}
	out, code = qmlsab(t, "history", "detect", "--history-db", db, "--metric", "availability", "--arms", "D", "--recent", "12", "--format", "json")
	if code != exitRegression {
		t.Fatalf("detect: exit %d, want %d (a regression):\n%s", code, exitRegression, out)
	}
	var res struct {
		Changes []struct {
			Night     int     `json:"night"`
			Direction string  `json:"direction"`
			P         float64 `json:"p"`
			Before    float64 `json:"before"`
			After     float64 `json:"after"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); err != nil {
		t.Fatalf("detect --format json: %v\n%s", err, out)
	}
	found := false
	for _, c := range res.Changes {
		if c.Night+1 >= 12 && c.Night+1 <= 14 && c.Direction == "regression" {
			found = true
			t.Logf("change at night %d: availability %.3f → %.3f, p %.3f", c.Night+1, c.Before, c.After, c.P)
		}
	}
	if !found {
		t.Errorf("no regression found at night 13 ± 1: %+v", res.Changes)
	}
	// With only the newest night as "now", the old change is not news.
	if out, code := qmlsab(t, "history", "detect", "--history-db", db, "--metric", "availability", "--arms", "D"); code != 0 {
		t.Errorf("detect --recent 1: exit %d, want 0 (the change is 12 nights old):\n%s", code, out)
	}
	// The Markdown block names the regression for a pull-request comment.
	out, _ = qmlsab(t, "history", "detect", "--history-db", db, "--metric", "availability", "--arms", "D", "--recent", "12", "--format", "md")
	if !strings.Contains(out, "regression") || !strings.Contains(out, "| night |") {
		t.Errorf("detect --format md:\n%s", out)
	}
	// Bad input is exit 1, distinct from a regression.
	if _, code := qmlsab(t, "history", "detect", "--history-db", db, "--recent", "0"); code != 1 {
		t.Errorf("--recent 0: exit %d, want 1", code)
	}
	// Otava's import format: one entry per night for one arm.
	out, code = qmlsab(t, "history", "export", "--history-db", db, "--arms", "D", "--metric", "availability")
	var otava []struct {
		Timestamp int64 `json:"timestamp"`
		Metrics   []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"metrics"`
		Attributes map[string]string `json:"attributes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &otava) != nil || len(otava) != 24 || otava[0].Attributes["branch"] != "master" {
		t.Errorf("export otava: exit %d, %d entries:\n%.600s", code, len(otava), out)
	}
}

// The nightly job as the README runs it — `run`, `report --history`,
// `history detect` with its defaults — exits 0 every unchanged night and
// 4 on the night a regression lands: 23 unchanged nights, then night 24
// either unchanged too (exit 0 on 24 unchanged nights) or with the
// heavier storm that costs arm D availability (exit 4 that night, found
// by tonight's check).
func TestNightlyJobFailsTheNightOfARegression(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "history.db")
	light, heavy := nightlyWorkload(t, tmp, 150), nightlyWorkload(t, tmp, 350)
	night := func(n int, wl, db string) (string, int) {
		t.Helper()
		dir := filepath.Join(tmp, "results", fmt.Sprintf("job-%02d-%s", n, filepath.Base(db)))
		if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "3", "--workload", wl, "--seed", fmt.Sprint(300+n), "--out", dir); code != 0 {
			t.Fatalf("night %d: run exit %d:\n%s", n, code, out)
		}
		if out, code := qmlsab(t, "report", dir, "--format", "json", "--history", "--history-db", db, "--label", "branch=master"); code != 0 {
			t.Fatalf("night %d: report --history exit %d:\n%s", n, code, out)
		}
		return qmlsab(t, "history", "detect", "--history-db", db, "--label", "branch=master")
	}
	for n := 1; n <= 23; n++ {
		if out, code := night(n, light, db); code != 0 {
			t.Fatalf("unchanged night %d: detect exit %d, want 0:\n%s", n, code, out)
		}
	}
	// Night 24 two ways, each on its own copy of the history.
	copyDB := func(name string) string {
		t.Helper()
		to := filepath.Join(tmp, name)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			b, err := os.ReadFile(db + suffix)
			if err != nil {
				if suffix == "" {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(to+suffix, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return to
	}
	unchanged, regressed := copyDB("unchanged.db"), copyDB("regressed.db")
	if out, code := night(24, light, unchanged); code != 0 {
		t.Errorf("unchanged night 24: detect exit %d, want 0:\n%s", code, out)
	}
	out, code := night(24, heavy, regressed)
	if code != exitRegression {
		t.Fatalf("regressed night 24: detect exit %d, want %d:\n%s", code, exitRegression, out)
	}
	// The default table names tonight's check in its heading (the CHECK
	// column is --wide's) and the regressed metric in its rows.
	if !strings.Contains(out, "tonight: night 24") || !strings.Contains(out, "regressed") || !strings.Contains(out, "\navailability ") {
		t.Errorf("detect does not name tonight's check and the metric:\n%s", out)
	}
	t.Logf("night 24 with the heavier storm:\n%s", out)
}
