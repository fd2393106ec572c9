package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// chromium is the headless browser of a page check (a Test…InChromium):
// QMLSAB_CHROMIUM, which make chromium-check sets after installing
// chromium, running every page check once there; elsewhere the check is
// skipped, so that make test's pass over every package does not draw the
// same pages again.
func chromium(t *testing.T) string {
	if p := os.Getenv("QMLSAB_CHROMIUM"); p != "" {
		return p
	}
	t.Skip("a page check: make chromium-check runs it (or QMLSAB_CHROMIUM=$(command -v chromium) go test -run InChromium ./cmd/qmlsab)")
	return ""
}

// lookChromium is the headless browser the page checks use:
// QMLSAB_CHROMIUM, else chromium on the PATH, else "".
func lookChromium() string {
	if p := os.Getenv("QMLSAB_CHROMIUM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// probe is put at the top of a copy of the report: it records script
// errors and console errors, and once the charts have drawn, whether each
// chart container holds a canvas with painted pixels, and how many series
// and data points its ECharts instance holds.
const probe = `<script>
window.__errors = [];
window.alert = function (m) { window.__errors.push("alert(" + m + ") ran: a user string became script"); };
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
(function () { var ce = console.error; console.error = function () { window.__errors.push(Array.prototype.join.call(arguments, " ")); ce.apply(console, arguments); }; })();
window.addEventListener("load", function () { setTimeout(function () {
  var out = [];
  document.querySelectorAll("[data-chart]").forEach(function (el) {
    var c = el.querySelector("canvas"), painted = 0;
    if (c && c.width > 0 && c.height > 0) {
      var px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (var i = 3; i < px.length; i += 4) { if (px[i] !== 0) { painted++; } }
    }
    // What the browser's ECharts holds: series, and data points over them.
    var inst = window.echarts && window.echarts.getInstanceByDom(el), opt = inst ? inst.getOption() : null, series = 0, points = 0;
    ((opt && opt.series) || []).forEach(function (s) { series++; points += (s.data || []).length; });
    out.push(el.id + "=" + (c ? c.width + "x" + c.height : "none") + ":" + painted + ":" + series + ":" + points);
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "CHARTS " + out.join(" ") + "\nERRORS " + JSON.stringify(window.__errors);
  document.body.appendChild(pre);
}, 500); });
</script>`

func TestReportDrawsInChromium(t *testing.T) {
	browser := chromium(t)
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "2", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if out, code := qmlsab(t, "report", dir, "--format", "html,json"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	probeReport(t, browser, dir)
}

// An arm named like markup is shown as text and never runs.
func TestReportEscapesUserStringsInChromium(t *testing.T) {
	browser := chromium(t)
	const evil = "<script>alert(1)</script>"
	armsFile := filepath.Join(t.TempDir(), "arms.yaml")
	os.WriteFile(armsFile, []byte("arms:\n  - name: "+evil+"\n    description: \"<img src=x onerror=alert(2)>\"\n    build: \"<b>bold</b>\"\n    target: embedded\n"+
		"    setParameters:\n      queryMemoryLoadSheddingHighMarkPercent: \"70\"\n      queryMemoryLoadSheddingLowMarkPercent: \"30\"\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms-file", armsFile, "--arms", "D,"+evil, "--n", "1", "--profile", "quick", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if out, code := qmlsab(t, "report", "--format", "html,md", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	dom := probeReport(t, browser, dir)
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the arm's name is not shown as text")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if strings.Contains(string(md), "<script>") {
		t.Errorf("summary.md carries raw markup:\n%s", md)
	}
}

// probeReport opens a report in Chromium with the network unreachable and
// checks it is self-contained, error-free, and that every chart drew;
// it writes report.png beside it and returns the page's final DOM.
func probeReport(t *testing.T, browser, dir string) string {
	t.Helper()
	page := filepath.Join(dir, "report.html")
	dom := probePage(t, browser, page, 6000, -9)
	screenshot(t, browser, page, filepath.Join(dir, "report.png"), 6000)
	return dom
}

// chromiumArgs are the flags of every page check: headless, a window of
// the given height, and name resolution off, so anything that tried the
// network would fail.
func chromiumArgs(height int) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", fmt.Sprintf("--window-size=1200,%d", height), "--virtual-time-budget=5000"}
}

// chromium runs the browser on a file with extra flags and returns what
// it printed.
func runChromium(t *testing.T, browser, file string, height int, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, append(append(chromiumArgs(height), extra...), "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return out
}

// probePage opens a copy of the page at path carrying the probe script
// and checks the page is self-contained, free of script and console
// errors, and that its charts drew: exactly want of them, or at least
// −want when want is negative. It returns the final DOM.
func probePage(t *testing.T, browser, path string, height, want int) string {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(page)), "<script src") {
		t.Errorf("%s loads a script from elsewhere; it must be self-contained", filepath.Base(path))
	}
	probed := filepath.Join(filepath.Dir(path), "probed.html")
	os.WriteFile(probed, []byte(strings.Replace(string(page), "<head>", "<head>"+probe, 1)), 0o644)
	dom := runChromium(t, browser, probed, height, "--dump-dom")
	drawn, errs, ok := probeLines(string(dom))
	if !ok {
		t.Fatalf("the probe did not report; the page's scripts did not run:\n%.2000s", dom)
	}
	if errs != "[]" {
		t.Errorf("script or console errors: %s", errs)
	}
	charts := strings.Fields(drawn)
	t.Logf("charts drawn (id=canvas:painted pixels:series:points): %v", charts)
	if (want >= 0 && len(charts) != want) || (want < 0 && len(charts) < -want) {
		t.Errorf("%d chart containers, want %d (negative: at least): %v", len(charts), want, charts)
	}
	for _, c := range charts {
		f := strings.Split(c, ":")
		switch {
		case strings.Contains(c, "=none") || len(f) != 4 || f[1] == "0":
			t.Errorf("chart %s did not draw (canvas missing or blank)", c)
		case f[2] == "0" || f[3] == "0":
			// A chart that draws axes but holds no data is as wrong as
			// one that does not draw.
			t.Errorf("chart %s holds no series or no data points in the browser", c)
		}
	}
	return string(dom)
}

// screenshot writes a PNG of the page at path to shot, checks it is not
// empty, and keeps a copy under $QMLSAB_ARTIFACTS when set.
func screenshot(t *testing.T, browser, path, shot string, height int) {
	t.Helper()
	runChromium(t, browser, path, height, "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if keep := os.Getenv("QMLSAB_ARTIFACTS"); keep != "" {
		os.MkdirAll(keep, 0o755)
		b, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(keep, t.Name()+".png"), b, 0o644)
		t.Logf("screenshot kept in %s", filepath.Join(keep, t.Name()+".png"))
	}
}

// firstScreenProbe measures, once the page has drawn, where the verdict
// sentences and the arms legend end (in CSS pixels from the top of the
// page), and lists every shift of the verdict table and every part of the
// verdict sentences with its text.
const firstScreenProbe = `<script>
window.addEventListener("load", function () { setTimeout(function () {
  function bottom(id) { var e = document.getElementById(id); return e ? Math.ceil(e.getBoundingClientRect().bottom + window.scrollY) : -1; }
  var lines = ["FIRSTSCREEN viewport=" + window.innerWidth + "x" + window.innerHeight + " verdicts=" + bottom("verdicts") + " legend=" + bottom("arms-legend") +
    " sentences=" + document.querySelectorAll("#verdicts li").length];
  document.querySelectorAll("#verdict-table .delta, #verdicts .part[title]").forEach(function (e) { lines.push("DELTA " + e.textContent + " | " + (e.title || "")); });
  var pre = document.createElement("pre");
  pre.id = "firstscreen";
  pre.textContent = lines.join("\n") + "\nEND";
  document.body.appendChild(pre);
}, 300); });
</script>`

// The first screen of `make run`'s report (D and E, five trials each, the
// default profile), at 1280×800, holds what a reviewer reads in ten
// seconds: the verdict sentence of each arm against the baseline and the
// arms legend; and every shift, in the sentences and in the verdict
// table, says its direction in a symbol and a word, not by colour alone.
// The screenshot is kept beside the report (report-first-screen.png) and
// under $QMLSAB_ARTIFACTS.
func TestReportFirstScreenInChromium(t *testing.T) {
	browser := chromium(t)
	dir := filepath.Join(t.TempDir(), "run")
	if out, code := qmlsab(t, "run", "--arms", "D,E", "--n", "5", "--profile", "default", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if out, code := qmlsab(t, "report", "--format", "html,json,perf,bench,md", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	page := filepath.Join(dir, "report.html")
	body, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probed := filepath.Join(dir, "first-screen.html")
	os.WriteFile(probed, []byte(strings.Replace(string(body), "<head>", "<head>"+firstScreenProbe, 1)), 0o644)
	const width, height = 1280, 800
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND",
			"--hide-scrollbars", fmt.Sprintf("--window-size=%d,%d", width, height), "--virtual-time-budget=5000"}, extra...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(args("--dump-dom"), "file://"+probed)...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	// The probe's report, not its script's source, where the word stands too.
	var viewW, viewH, verdicts, legend, sentences int
	var shifts string
	reported := false
	for rest := string(dom); !reported; {
		_, after, found := strings.Cut(rest, "FIRSTSCREEN ")
		if !found {
			t.Fatalf("the probe did not report:\n%.2000s", dom)
		}
		rest = after
		report, ok := between(after, "", "\nEND")
		head, body, _ := strings.Cut(report, "\n")
		if _, err := fmt.Sscanf(head, "viewport=%dx%d verdicts=%d legend=%d sentences=%d", &viewW, &viewH, &verdicts, &legend, &sentences); ok && err == nil {
			reported, shifts = true, body
		}
	}
	t.Logf("viewport %dx%d: verdict sentences end at %d px, the arms legend at %d px", viewW, viewH, verdicts, legend)
	if sentences != 1 {
		t.Errorf("%d verdict sentences, want one (E against D)", sentences)
	}
	if verdicts < 0 || legend < 0 || verdicts > viewH || legend > viewH {
		t.Errorf("the first %d px do not hold the verdict sentences (end %d px) and the arms legend (end %d px)", viewH, verdicts, legend)
	}
	deltas := strings.Split(shifts, "\n")
	if len(deltas) == 0 || deltas[0] == "" {
		t.Fatal("the page has no shift to check")
	}
	for _, d := range deltas {
		// A sentence's part carries its word in its title (the sentence's
		// head says better or worse); a table's shift in its text.
		if !hasDirection(strings.Replace(d, " | ", " ", 1)) {
			t.Errorf("a shift without its direction's mark and word: %q", d)
		}
	}
	shot := filepath.Join(dir, "report-first-screen.png")
	if _, err := exec.CommandContext(ctx, browser, append(args("--screenshot="+shot), "file://"+page)...).Output(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if keep := os.Getenv("QMLSAB_ARTIFACTS"); keep != "" {
		os.MkdirAll(keep, 0o755)
		b, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(keep, t.Name()+".png"), b, 0o644)
		t.Logf("screenshot kept in %s", filepath.Join(keep, t.Name()+".png"))
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// probeLines are what the probe script wrote into the page: its CHARTS
// line, and on the line after it the ERRORS up to the end of its <pre>
// (the script's own source, where the words stand too, is passed over).
func probeLines(dom string) (charts, errs string, ok bool) {
	for rest := dom; ; {
		_, after, found := strings.Cut(rest, "CHARTS ")
		if !found {
			return "", "", false
		}
		rest = after
		line, next, found := strings.Cut(after, "\n")
		errLine, _, _ := strings.Cut(next, "\n")
		errs, _, closed := strings.Cut(strings.TrimPrefix(errLine, "ERRORS "), "</pre>")
		if found && strings.HasPrefix(next, "ERRORS ") && closed {
			return line, errs, true
		}
	}
}

// hasDirection reports whether a shift the probe found carries its
// direction's mark after DELTA and, as a word, what the direction says.
func hasDirection(d string) bool {
	rest, ok := strings.CutPrefix(d, "DELTA ")
	if !ok {
		return false
	}
	mark, _ := utf8.DecodeRuneInString(rest)
	if !strings.ContainsRune("▲▼◆◇≈", mark) || !strings.HasPrefix(rest[utf8.RuneLen(mark):], " ") {
		return false
	}
	return slices.ContainsFunc([]string{"better", "worse", "changed", "not judged", "within noise"}, func(w string) bool { return hasWord(rest, w) })
}
