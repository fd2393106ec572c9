package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The run's first line counts in words ("1 arm × 1 trial") and says the
// trial's length as people write a duration, in model time on the
// virtual clock ("4m of model time", not "4m0s").
func TestRunBannerSaysCountsAndModelTimeInWords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, code := qmlsab(t, "run", "--arms", "D", "-n", "1", "--profile", "quick", "--out", dir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	want := "qmlsab run: spill_to_disk, 1 arm × 1 trial, 24s of model time per trial, seed 1, into " + dir + "\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("run begins\n%q\nwant\n%q", out[:min(len(out), len(want)+40)], want)
	}
	out, _ = qmlsab(t, "run", "--resume", dir)
	if want := "qmlsab run: resuming " + dir + ": spill_to_disk, 1 arm (D) × 1 trial, 24s of model time per trial, virtual clock, profile quick; 0 of 1 trial left\n"; !strings.HasPrefix(out, want) {
		t.Errorf("resume begins\n%q\nwant\n%q", out, want)
	}
}

// A run the run layer refuses is refused in one line, before the run is
// announced: no banner saying it starts, then a refusal.
func TestRunRefusesBeforeItsBanner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms", "D", "-n", "1", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--arms", "D", "-n", "1", "--profile", "quick", "--out", dir},
			"qmlsab run: " + dir + " already holds a run; use --resume " + dir + " or another --out"},
		{[]string{"run", "--resume", dir, "-n", "4"},
			"qmlsab run: -n 4: " + dir + " was started with -n 1; a resumed run keeps its conditions (leave -n out, or start a new run)"},
	} {
		out, code := qmlsab(t, c.args...)
		if code != 1 || strings.TrimSpace(out) != c.want {
			t.Errorf("%s: exit %d,\n%s\nwant exit 1 and only\n%s", strings.Join(c.args, " "), code, out, c.want)
		}
	}
}

// sweep's first line counts in words too.
func TestSweepBannerSaysCountsInWords(t *testing.T) {
	out, code := qmlsab(t, "sweep", "--arms", "D", "--vary", "hw.cpus=4", "-n", "1", "--profile", "quick", "--out", filepath.Join(t.TempDir(), "sweep"))
	want := "qmlsab sweep (SIMULATED: mongosim's model in virtual time): 1 cell × 1 arm × 1 seed = 1 trial of 24s model time each, profile quick\n"
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("sweep: exit %d, begins\n%q\nwant\n%q", code, out[:min(len(out), len(want)+20)], want)
	}
}
