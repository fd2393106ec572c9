package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/history"
)

// night is one night of a test history: its workload (name and storm
// rate), D's actor threshold, and D's values of rss_peak_bytes (none:
// D ran, with no valid trial).
type night struct {
	workload  string
	rate      float64
	threshold int
	rss       []float64
	skipD     bool // D did not run at all
}

// historyOf writes the nights into a fresh SQLite history, each with the
// definitions a run records: the workload's resolved JSON and D's entry.
func historyOf(t *testing.T, nights []night) history.Store {
	t.Helper()
	ctx := context.Background()
	st, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for n, x := range nights {
		wl := fmt.Sprintf(`{"name":%q,"kind":"spill_to_disk","description":"night %d","spill_to_disk":{"storm_rate":%g,"phases":{"storm_s":150}}}`, x.workload, n, x.rate)
		r := history.Run{ID: fmt.Sprintf("night-%02d", n+1), Started: time.Date(2026, 1, 1+n, 2, 0, 0, 0, time.UTC), Workload: x.workload,
			WorkloadDigest: fmt.Sprintf("%s-%g", x.workload, x.rate), WorkloadDefinition: json.RawMessage(wl), Baseline: "E",
			Arms: []history.Arm{{Name: "E", Definition: json.RawMessage(`{"build":"e"}`)}}}
		for i := range 3 {
			r.Trials = append(r.Trials, history.Trial{Arm: "E", Index: i, Metrics: map[string]float64{"rss_peak_bytes": 2e9 + float64(i)*1e7}})
		}
		if !x.skipD {
			def := fmt.Sprintf(`{"build":"d%d","actors":[{"killop":{"rssHighPercent":%d,"interval":"100ms"}}]}`, n, x.threshold)
			r.Arms = append(r.Arms, history.Arm{Name: "D", Build: fmt.Sprint("d", n), Definition: json.RawMessage(def)})
			for i, v := range x.rss {
				r.Trials = append(r.Trials, history.Trial{Arm: "D", Index: i, Metrics: map[string]float64{"rss_peak_bytes": v}})
			}
		}
		if _, err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// steadyNights are n nights of one workload and threshold around level
// (steady's spread), followed by more.
func steadyNights(n int, wl string, rate float64, threshold int, level float64) []night {
	var out []night
	for _, v := range steady(n, level) {
		out = append(out, night{workload: wl, rate: rate, threshold: threshold, rss: v})
	}
	return out
}

func detectUpTo(t *testing.T, nights []night, opts DetectOptions) Result {
	t.Helper()
	res, err := Detect(context.Background(), historyOf(t, nights), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func textOf(t *testing.T, res Result) string {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, res, 1, false); err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// A heavier storm is another yardstick, not a regression: on the night it
// changes there is no baseline, no change point is found across it (it is
// one by construction, named key by key), and later nights are compared
// with the new storm's nights only.
func TestAChangedWorkloadIsAChangePointByConstructionNeverARegression(t *testing.T) {
	nights := steadyNights(8, "nightly", 150, 70, 1e9)
	for _, v := range steady(4, 1.3e9) { // 30 % worse under the heavier storm
		nights = append(nights, night{workload: "nightly", rate: 320, threshold: 70, rss: v})
	}
	// The night the storm changed.
	res := detectUpTo(t, nights[:9], DetectOptions{})
	if res.Regressed() || res.Tonight.Tested != 0 || res.Tonight.Untested == 0 {
		t.Fatalf("the night the workload changed: regressed %v, tested %d, untested %d; want no comparison: %+v",
			res.Regressed(), res.Tonight.Tested, res.Tonight.Untested, res.Tonight)
	}
	if len(res.Redefinitions) != 1 || res.Redefinitions[0].Night != 9 || !slices.Equal(res.Redefinitions[0].Workload, []string{"storm_rate 150 → 320"}) {
		t.Fatalf("redefinitions %+v; want night 9's storm_rate 150 → 320 (the description is no change)", res.Redefinitions)
	}
	if out := textOf(t, res); !strings.Contains(out, "no baseline yet (the workload changed tonight: storm_rate 150 → 320)") ||
		!strings.Contains(out, "never a regression") {
		t.Errorf("text does not say the night has no baseline and why:\n%s", out)
	}
	// Twelve nights: E-Divisive finds nothing across the change, and the
	// newest night is compared with the heavier storm's nights.
	res = detectUpTo(t, nights, DetectOptions{Recent: 4})
	if res.Regressed() || len(res.Changes) != 0 {
		t.Fatalf("12 nights: regressed %v, changes %+v; want none across a redefinition", res.Regressed(), res.Changes)
	}
	if res.Tonight.Tested == 0 {
		t.Fatalf("12 nights: nothing tested tonight: %+v", res.Tonight)
	}
	res = detectUpTo(t, nights, DetectOptions{Tonight: TonightOptions{MinShift: -1, Alpha: 0.5}})
	for _, f := range res.Tonight.Findings {
		if slices.ContainsFunc(f.BaselineNights, func(id string) bool { return id < "night-09" }) {
			t.Errorf("tonight's baseline holds nights of the old storm: %v", f.BaselineNights)
		}
	}
}

// A changed arm definition is what the night tests: tonight's check
// compares it with the previous definition's nights and says which change
// the finding is; the next night's baseline holds the new definition only.
func TestAChangedArmIsJudgedTheNightItChanges(t *testing.T) {
	nights := steadyNights(8, "nightly", 271.5, 70, 1e9)
	nights = append(nights, night{workload: "nightly", rate: 271.5, threshold: 80, rss: []float64{1.30e9, 1.31e9, 1.29e9}})
	res := detectUpTo(t, nights, DetectOptions{})
	if !res.Regressed() || len(res.Tonight.Findings) != 1 {
		t.Fatalf("D at 80 %%: regressed %v, findings %+v; want tonight's check to fail the night", res.Regressed(), res.Tonight.Findings)
	}
	f := res.Tonight.Findings[0]
	if f.Arm != "D" || f.Redefined != "arm D actors[0].killop.rssHighPercent 70 → 80" || f.BaselineNights[0] != "night-02" {
		t.Errorf("finding %+v; want D's, naming the threshold change, against the old definition's last 7 nights", f)
	}
	if len(res.Redefinitions) != 1 || res.Redefinitions[0].Describe() != "arm D actors[0].killop.rssHighPercent 70 → 80" {
		t.Errorf("redefinitions %+v (the build changes every night and is no part of a definition)", res.Redefinitions)
	}
	if out := textOf(t, res); !strings.Contains(out, "redefined (arm D actors[0].killop.rssHighPercent 70 → 80)") {
		t.Errorf("text does not name the redefinition:\n%s", out)
	}
	// The next night at the new level: its baseline is night 9 alone.
	nights = append(nights, night{workload: "nightly", rate: 271.5, threshold: 80, rss: []float64{1.31e9, 1.30e9, 1.32e9}})
	res = detectUpTo(t, nights, DetectOptions{Tonight: TonightOptions{Alpha: 0.9, MinShift: -1}})
	for _, f := range res.Tonight.Findings {
		if !slices.Equal(f.BaselineNights, []string{"night-09"}) {
			t.Errorf("night 10's baseline %v, want night-09 alone", f.BaselineNights)
		}
	}
	if len(res.Tonight.Findings) == 0 {
		t.Error("night 10 was not compared (at alpha 0.9 with no minimum shift, a finding shows its baseline)")
	}
	if res = detectUpTo(t, nights, DetectOptions{}); res.Regressed() {
		t.Errorf("night 10 at the new definition's level regressed: %+v", res.Tonight.Findings)
	}
}

// Nights of two workloads in one history are two lines: neither is
// compared with the other's nights, and the first night of each has no
// baseline.
func TestWorkloadsOfOneHistoryAreComparedApart(t *testing.T) {
	var nights []night
	for i, v := range steady(12, 1e9) {
		if i%2 == 1 {
			nights = append(nights, night{workload: "heavy", rate: 400, threshold: 70, rss: []float64{v[0] * 2, v[1] * 2, v[2] * 2}})
		} else {
			nights = append(nights, night{workload: "light", rate: 150, threshold: 70, rss: v})
		}
	}
	res := detectUpTo(t, nights, DetectOptions{})
	if res.Regressed() || len(res.Changes) != 0 || len(res.Redefinitions) != 0 || res.Tonight.Tested == 0 {
		t.Fatalf("two workloads: regressed %v, changes %+v, redefinitions %+v, tested %d; want each compared with its own nights",
			res.Regressed(), res.Changes, res.Redefinitions, res.Tonight.Tested)
	}
	res = detectUpTo(t, nights[:2], DetectOptions{})
	if res.Tonight.Tested != 0 || !slices.Contains(res.Tonight.Unbased, "the first night of its workload") {
		t.Errorf("the first heavy night: %+v; want no baseline", res.Tonight)
	}
}

// One night is not "0 of 0 pairs regressed": it has no baseline yet, says
// so, and passes.
func TestTheFirstNightHasNoBaselineYet(t *testing.T) {
	res := detectUpTo(t, steadyNights(1, "nightly", 271.5, 70, 1e9), DetectOptions{})
	if res.Regressed() || res.NoData() || res.Tonight.Tested != 0 || !slices.Equal(res.Tonight.Unbased, []string{"the first night"}) {
		t.Fatalf("one night: %+v", res.Tonight)
	}
	out := textOf(t, res)
	if !strings.Contains(out, "tonight: night 1 (night-01): no baseline yet (the first night): nothing to compare, so the night passes") ||
		strings.Contains(out, "0 of 0") {
		t.Errorf("one night's text:\n%s", out)
	}
}

// A night an arm ran without a valid trial (a run that died, trials all
// invalid) cannot be judged and never passes; a night that did not run the
// arm at all is not missing it.
func TestANightWithoutDataNeverPasses(t *testing.T) {
	nights := steadyNights(5, "nightly", 271.5, 70, 1e9)
	res := detectUpTo(t, append(nights, night{workload: "nightly", rate: 271.5, threshold: 70}), DetectOptions{})
	if !res.NoData() || !slices.Equal(res.Tonight.NoData, []string{"D"}) {
		t.Fatalf("D without trials tonight: no data %v %v; want D named", res.NoData(), res.Tonight.NoData)
	}
	if out := textOf(t, res); !strings.Contains(out, "NO DATA for D") {
		t.Errorf("text:\n%s", out)
	}
	var b strings.Builder
	if err := WriteJSON(&b, res); err != nil || !strings.Contains(b.String(), `"noData": true`) {
		t.Errorf("JSON (%v):\n%s", err, b.String())
	}
	res = detectUpTo(t, append(nights, night{workload: "nightly", rate: 271.5, skipD: true}), DetectOptions{})
	if res.NoData() {
		t.Errorf("a night that did not run D: no data %v", res.Tonight.NoData)
	}
}

// Nights are numbered as the history lists them, in every output: a
// change of an arm that skipped a night is at the night's own number.
func TestNightsAreNumberedAsListed(t *testing.T) {
	nights := steadyNights(6, "nightly", 271.5, 70, 1e9)
	nights[2].skipD = true
	nights = append(nights, steadyNights(6, "nightly", 271.5, 70, 2e9)...)
	res := detectUpTo(t, nights, DetectOptions{Recent: 6})
	i := slices.IndexFunc(res.Changes, func(c Change) bool { return c.Arm == "D" })
	if i < 0 || res.Changes[i].Night != 7 || res.Changes[i].RunID != "night-07" {
		t.Fatalf("changes %+v; want D's at night 7", res.Changes)
	}
	var b strings.Builder
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Changes []struct {
			Night int    `json:"night"`
			RunID string `json:"runId"`
		} `json:"changes"`
		Tonight struct {
			Night int `json:"night"`
		} `json:"tonight"`
	}
	if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
		t.Fatal(err)
	}
	if out.Changes[0].Night != 7 || out.Tonight.Night != 12 {
		t.Errorf("JSON numbers night-07 %d and the newest night %d; want 7 and 12, as the text does", out.Changes[0].Night, out.Tonight.Night)
	}
}
