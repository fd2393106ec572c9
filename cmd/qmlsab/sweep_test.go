package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad sweep input: exit 1, a message naming the flag, nothing written.
func TestSweepBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--out", out}, "qmlsab sweep: --vary: give one or two"},
		{[]string{"sweep", "--vary", "host.nope=1:2:1", "--out", out}, `qmlsab sweep: --vary "host.nope=1:2:1": unknown name host.nope (want host.*, hw.*, workload.*, param.* or killop.*); qmlsab sweep --list shows them`},
		{[]string{"sweep", "--vary", "workload.stormRate=300:100:50", "--out", out}, `qmlsab sweep: --vary "workload.stormRate=300:100:50": TO is below FROM`},
		{[]string{"sweep", "--vary", "workload.stormRate=100:300:0", "--out", out}, `qmlsab sweep: --vary "workload.stormRate=100:300:0": STEP must be above 0`},
		{[]string{"sweep", "--vary", "hw.cpus=4,8", "--vary", "hw.allocOverhead=1,2", "--vary", "workload.stormRate=1,2", "--out", out}, "qmlsab sweep: --vary: 3 given; at most 2"},
		{[]string{"sweep", "--vary", "hw.cpus=4,8", "-n", "0", "--out", out}, "qmlsab sweep: -n 0: at least one trial per cell"},
		{[]string{"sweep", "--vary", "hw.cpus=4,8", "--profile", "fast", "--out", out}, `qmlsab sweep: --profile "fast": want quick, default or long`},
		{[]string{"sweep", "--vary", "hw.cpus=4,8", "--arms", "D,Q", "--out", out}, `qmlsab sweep: --arms: unknown arm "Q"`},
		{[]string{"sweep", "--arms", "E", "--vary", "param.queryMemoryLoadSheddingHighMarkPercent=20,80", "--out", out}, "qmlsab sweep: --vary [param.queryMemoryLoadSheddingHighMarkPercent=20,80]: arm E at [param.queryMemoryLoadSheddingHighMarkPercent=20 %]: queryMemoryLoadSheddingHighMarkPercent (20) must be above the low mark (30)"},
		{[]string{"sweep", "--vary", "hw.cpus=4,8", "stray", "--out", out}, `qmlsab sweep: unexpected argument "stray" (flags only)`},
		{[]string{"calibrate", "--fit", "--space", "host.nope=1:2"}, `qmlsab calibrate: --space "host.nope=1:2": unknown name host.nope; qmlsab sweep --list shows them`},
		{[]string{"calibrate", "--fit", "--space", "workload.stormRate=300:100"}, `qmlsab calibrate: --space "workload.stormRate=300:100": want LO < HI`},
		{[]string{"calibrate", "--fit", "--arms", "D"}, "qmlsab calibrate: --arms: table mode, or with --fit --observed the run's arms to fit"},
		{[]string{"calibrate", "--fit", "--fit-seeds", "0"}, "qmlsab calibrate: --fit-seeds 0: at least 1"},
		{[]string{"calibrate", "--samples", "4"}, "qmlsab calibrate: --samples: with --fit only"},
	} {
		got, code := qmlsab(t, tc.args...)
		if code != 1 || !strings.HasPrefix(strings.TrimSpace(got), tc.want) {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s…", tc.args, code, strings.TrimSpace(got), tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("bad input still made the output folder")
	}
}

func TestSweepWritesJSONAndHTML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	out, code := qmlsab(t, "sweep", "--arms", "D,E", "--vary", "host.otherBytes=512MiB,2GiB", "--vary", "workload.stormRate=120,200",
		"--n", "1", "--profile", "quick", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "SIMULATED") || !strings.Contains(out, "trials/s") {
		t.Errorf("the output does not say it is simulated or how fast it ran:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Schema    string `json:"schema"`
		Simulated bool   `json:"simulated"`
		Profile   string `json:"profile"`
		Axes      []struct {
			Name   string   `json:"name"`
			Labels []string `json:"labels"`
		} `json:"axes"`
		Cells []struct {
			Arm    string             `json:"arm"`
			Index  []int              `json:"index"`
			Median map[string]float64 `json:"median"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Schema != "qmlsab/sweep/v1" || !r.Simulated || r.Profile != "quick" || len(r.Axes) != 2 || len(r.Cells) != 8 {
		t.Errorf("sweep.json: schema %q simulated %v profile %q, %d axes, %d cells; want v1, simulated, quick, 2 axes, 8 cells", r.Schema, r.Simulated, r.Profile, len(r.Axes), len(r.Cells))
	}
	if got := strings.Join(r.Axes[0].Labels, ","); got != "512 MiB,2 GiB" {
		t.Errorf("axis labels %q", got)
	}
	page, err := os.ReadFile(filepath.Join(dir, "sweep.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "data-chart="); n != 2*4 {
		t.Errorf("%d chart containers, want 8 (2 arms × 4 metrics)", n)
	}
}

// The ensemble on a tiny space: its method, the acceptable set and its
// rule, each unknown's range and status, each observation's fit (E's
// queue kills shown, not scored), the sensitivity table, and F's and G's
// conditions as shares with their verdicts.
func TestCalibrateFitPrintsTheEnsemble(t *testing.T) {
	out, code := qmlsab(t, "calibrate", "--fit", "--space", "workload.stormRate=120:240", "--space", "param.simShedHazard=odds,linear",
		"--profile", "quick", "-n", "2", "--fit-seeds", "1", "--samples", "4", "--starts", "2", "--refine", "1", "--acceptable", "4", "--predict-points", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"SIMULATED", "Latin hypercube of 4 samples", "each under all 2 variants (param.simShedHazard)", "Acceptable set:",
		"Unknowns over the acceptable set", "workload.stormRate", "param.simShedHazard", "D low-pri queue kills/s", "142", "D availability", "0.97",
		"not scored: true by construction", "Sensitivity at the best point", "Predictions at", "availability > 0.9", "sheds/s above low-priority admissions/s",
		"To sweep around the best point", "Verdict:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the ensemble's output lacks %q:\n%s", want, out)
		}
	}
	for _, arm := range []string{"\n  F ", "\n  G "} {
		if !strings.Contains(out, arm) {
			t.Errorf("no prediction rows for%s\n%s", strings.TrimSpace(arm), out)
		}
	}
}
