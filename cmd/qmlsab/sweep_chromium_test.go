package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
	page, err := os.ReadFile(filepath.Join(dir, "sweep.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(page)), "<script src") {
		t.Error("the sweep page loads a script from elsewhere; it must be self-contained")
	}
	probed := filepath.Join(dir, "probed.html")
	os.WriteFile(probed, []byte(strings.Replace(string(page), "<head>", "<head>"+probe, 1)), 0o644)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--window-size=1300,4000", "--virtual-time-budget=5000"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", "file://"+probed)...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`CHARTS ([^\n]*)\nERRORS (.*)</pre>`).FindStringSubmatch(string(dom))
	if m == nil {
		t.Fatalf("the probe did not report; the page's scripts did not run:\n%.2000s", dom)
	}
	if m[2] != "[]" {
		t.Errorf("script or console errors: %s", m[2])
	}
	charts := strings.Fields(m[1])
	t.Logf("charts drawn (id=canvas:painted pixels): %v", charts)
	if len(charts) != 3*4 {
		t.Errorf("%d chart containers, want 12 (3 arms × 4 metrics)", len(charts))
	}
	for _, c := range charts {
		if strings.Contains(c, "=none") || strings.HasSuffix(c, ":0") {
			t.Errorf("chart %s did not draw (canvas missing or blank)", c)
		}
	}
	if !strings.Contains(string(dom), "SIMULATED") {
		t.Error("the drawn page does not say it is simulated")
	}
	if keep := os.Getenv("QMLSAB_ARTIFACTS"); keep != "" {
		shot := filepath.Join(keep, t.Name()+".png")
		os.MkdirAll(keep, 0o755)
		if out, err := exec.CommandContext(ctx, browser, append(args, "--screenshot="+shot, "file://"+filepath.Join(dir, "sweep.html"))...).CombinedOutput(); err != nil {
			t.Errorf("screenshot: %v\n%s", err, out)
		}
	}
}
