package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepDrawsInChromium opens a 2×2 sweep's page in headless Chromium
// with the network unreachable: it must be self-contained, raise no script
// or console error, and draw every heatmap (one per arm and metric).
func TestSweepDrawsInChromium(t *testing.T) {
	browser := chromium(t)
	dir := filepath.Join(t.TempDir(), "sweep")
	if out, code := qmlsab(t, "sweep", "--arms", "D,E,F", "--vary", "host.otherBytes=512MiB,2GiB", "--vary", "workload.stormRate=120,200",
		"--n", "1", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	page := filepath.Join(dir, "sweep.html")
	dom := probePage(t, browser, page, 4000, 3*4) // 3 arms × 4 metrics
	if !strings.Contains(dom, "SIMULATED") {
		t.Error("the drawn page does not say it is simulated")
	}
	screenshot(t, browser, page, filepath.Join(dir, "sweep.png"), 4000)
}
