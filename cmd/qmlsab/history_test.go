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

// The nightly pipeline end to end: 16 nights of `qmlsab run` then
// `qmlsab report --history` (virtual clock, a different seed each night);
// from night 9 on the storm is heavier. That is another workload, not a
// regression: `qmlsab history detect` names the redefinition at night 9
// (storm_rate 150 → 350), finds no change point across it and exits 0;
// re-adding a night changes nothing; list shows one line per night.
func TestNightlyPipelineSegmentsAChangedWorkload(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "history.db")
	light, heavy := nightlyWorkload(t, tmp, 150), nightlyWorkload(t, tmp, 350)
	var first string
	for night := 1; night <= 16; night++ {
		wl := light
		if night >= 9 {
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
	if code != 0 || strings.Count(out, "\n") != 1+16 {
		t.Errorf("history list: exit %d, %d lines (want a header and 16 nights):\n%s", code, strings.Count(out, "\n"), out)
	}
	out, code = qmlsab(t, "history", "detect", "--history-db", db, "--metric", "availability", "--arms", "D", "--recent", "8", "--format", "json")
	if code != 0 {
		t.Fatalf("detect: exit %d, want 0 (a changed workload is no regression):\n%s", code, out)
	}
	var res struct {
		Changes []struct {
			Night int `json:"night"`
		} `json:"changes"`
		Redefinitions []struct {
			Night    int      `json:"night"`
			Workload []string `json:"workload"`
		} `json:"redefinitions"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); err != nil {
		t.Fatalf("detect --format json: %v\n%s", err, out)
	}
	if len(res.Redefinitions) != 1 || res.Redefinitions[0].Night != 9 || len(res.Redefinitions[0].Workload) != 1 || res.Redefinitions[0].Workload[0] != "storm_rate 150 → 350" {
		t.Errorf("redefinitions %+v; want night 9's storm_rate 150 → 350", res.Redefinitions)
	}
	for _, c := range res.Changes {
		if c.Night == 9 {
			t.Errorf("a change point at night 9, across the redefinition: %+v", res.Changes)
		}
	}
	// The Markdown block names the redefinition for a pull-request comment.
	out, _ = qmlsab(t, "history", "detect", "--history-db", db, "--metric", "availability", "--arms", "D", "--recent", "8", "--format", "md")
	if !strings.Contains(out, "redefined: night 9") || !strings.Contains(out, "storm\\_rate 150 → 350") {
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
	if code != 0 || json.Unmarshal([]byte(out), &otava) != nil || len(otava) != 16 || otava[0].Attributes["branch"] != "master" {
		t.Errorf("export otava: exit %d, %d entries:\n%.600s", code, len(otava), out)
	}
}
