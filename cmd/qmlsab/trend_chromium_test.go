package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/nightly"
)

// trendChromiumHistory writes a history of 24 simulated nights of arms A
// (baseline) and B, 5 trials each, into dir/history.db: B's availability
// steps down at night 12, B skipped night 5, peak RSS is in bytes and
// failovers are all zero. Nights 3 and 16 have a report in dir/results.
func trendChromiumHistory(t *testing.T, dir string) (history.Store, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rng := rand.New(rand.NewPCG(7, 11))
	var ids []string
	for n := range 24 {
		id := fmt.Sprintf("2025-04-%02d-nightly", n+1)
		if n == 9 {
			id = "night-<b>9</b>"
		}
		ids = append(ids, id)
		r := history.Run{ID: id, Started: time.Date(2025, 4, n+1, 2, 30, 0, 0, time.UTC), Workload: "spill-to-disk", Baseline: "A",
			Arms: []history.Arm{{Name: "A"}, {Name: "B"}}, Simulated: true, Labels: map[string]string{"branch": "<script>alert(1)</script>"}}
		level := 0.99
		if n >= 12 {
			level = 0.93
		}
		for _, arm := range []string{"A", "B"} {
			if arm == "B" && n == 5 {
				continue
			}
			for i := range 5 {
				av := 0.99 + 0.006*(rng.Float64()-0.5)
				if arm == "B" {
					av = level + 0.006*(rng.Float64()-0.5)
				}
				r.Trials = append(r.Trials, history.Trial{Arm: arm, Index: i, Metrics: map[string]float64{
					"availability": av, "canary_p99_ms": 180 + 40*rng.Float64(), "rss_peak_bytes": (5 + rng.Float64()) * (1 << 30), "failovers": 0}})
			}
		}
		if n != 5 {
			r.Effects = []history.Effect{{Arm: "B", Metric: "availability", Shift: level - 0.99 + 0.003*(rng.Float64()-0.5), P: 0.008},
				{Arm: "B", Metric: "canary_p99_ms", Shift: 10 * (rng.Float64() - 0.5), P: 0.5},
				{Arm: "B", Metric: "rss_peak_bytes", Shift: (rng.Float64() - 0.5) * (1 << 28), P: 0.4}}
		}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{3, 16} {
		d := filepath.Join(dir, "results", ids[n])
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "report.html"), []byte(`<!DOCTYPE html><html><body><p id="landed">report of night `+fmt.Sprint(n)+`</p></body></html>`), 0o644)
	}
	return st, ids
}

// clickProbe clicks two nights' median points in the first chart, as a
// person would: first night %d (no report: nothing may happen), then
// night %d (its report must open).
const clickProbe = `<script>
window.addEventListener("load", function () { setTimeout(function () {
  var el = document.querySelector("[data-chart]"), chart = echarts.getInstanceByDom(el);
  function click(i) {
    var med = chart.getOption().series[2].data[i];
    var px = chart.convertToPixel({seriesIndex: 2}, [i, med]), r = el.getBoundingClientRect();
    var x = r.left + px[0], y = r.top + px[1], target = document.elementFromPoint(x, y);
    ["pointerdown", "mousedown", "pointerup", "mouseup", "click"].forEach(function (type) {
      var E = type.indexOf("pointer") === 0 ? PointerEvent : MouseEvent;
      target.dispatchEvent(new E(type, {clientX: x, clientY: y, bubbles: true, cancelable: true, view: window, button: 0, pointerType: "mouse", isPrimary: true}));
    });
  }
  click(%d);
  setTimeout(function () { click(%d); }, 300);
}, 500); });
</script>`

// The trend page in a real browser, network unreachable: every chart
// draws, no script or console error, nothing loaded from elsewhere, and
// clicking a night with a report opens it.
func TestTrendDrawsInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	st, _ := trendChromiumHistory(t, dir)
	results := filepath.Join(dir, "results")
	out := filepath.Join(results, "trend.html")
	opts := nightly.TrendOptions{Metrics: []string{"availability", "canary_p99_ms", "rss_peak_bytes", "failovers"}, RunsRoot: results}
	if err := nightly.WriteTrend(context.Background(), st, out, opts); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(page)), "<script src") {
		t.Error("the trend page loads a script from elsewhere; it must be self-contained")
	}
	want := strings.Count(string(page), `data-chart="`)
	// 4 metrics: A's values, B's values and effect each (failovers has no effect).
	if want != 11 {
		t.Errorf("%d chart containers, want 11", want)
	}

	dom := probePage(t, browser, out, 8000, want)
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(dom, "night-&lt;b&gt;9&lt;/b&gt;") {
		t.Error("user strings are not shown as text")
	}

	// Night 2 has no report, night 16 has one.
	clicked := filepath.Join(results, "clicked.html")
	os.WriteFile(clicked, []byte(strings.Replace(string(page), "<head>", "<head>"+fmt.Sprintf(clickProbe, 2, 16), 1)), 0o644)
	landed := runChromium(t, browser, clicked, 8000, "--dump-dom")
	if !strings.Contains(string(landed), `<p id="landed">report of night 16</p>`) {
		t.Errorf("clicking night 16 did not open its report; the browser shows:\n%.1500s", landed)
	}

	screenshot(t, browser, out, filepath.Join(results, "trend.png"), 2600)
}
