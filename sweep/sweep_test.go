package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/run/virtual"
)

func builtins(t *testing.T, names ...string) []arms.Arm {
	t.Helper()
	var out []arms.Arm
	for _, n := range names {
		a, ok := arms.Lookup(n)
		if !ok {
			t.Fatalf("no built-in arm %s", n)
		}
		out = append(out, a)
	}
	return out
}

// short is a small trial on the host model: a few seconds of storm.
func short() virtual.Config {
	c := virtual.DefaultConfig(1)
	c.Hardware = model.DefaultHardware()
	c.Workload.Phases.Warmup, c.Workload.Phases.Storm, c.Workload.Phases.Recovery = 2*time.Second, 8*time.Second, 2*time.Second
	c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return c
}

func mustVary(t *testing.T, s string) Axis {
	t.Helper()
	ax, err := ParseVary(s)
	if err != nil {
		t.Fatalf("ParseVary(%q): %v", s, err)
	}
	return ax
}

func TestParseVaryGrids(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []any
	}{
		{"host.otherBytes=512MiB:2GiB:512MiB", []any{512.0 * (1 << 20), 1024.0 * (1 << 20), 1536.0 * (1 << 20), 2048.0 * (1 << 20)}},
		{"host.otherBytes=0.5Gi:1Gi:0.5Gi", []any{512.0 * (1 << 20), 1024.0 * (1 << 20)}},
		{"workload.stormRate=100:300:50", []any{100.0, 150.0, 200.0, 250.0, 300.0}},
		{"workload.stormRate=100:290:50", []any{100.0, 150.0, 200.0, 250.0}},
		{"workload.stormRate=120,200", []any{120.0, 200.0}},
		{"param.queryMemoryLoadSheddingHighMarkPercent=60:90:10", []any{60.0, 70.0, 80.0, 90.0}},
		{"param.simShedClockScope=query,operation", []any{"query", "operation"}},
		{"killop.rssHighPercent=50:70:20", []any{50.0, 70.0}},
		{"host.releaseBytesPerSec=0:1GiB/s:512MiB/s", []any{0.0, 512.0 * (1 << 20), 1024.0 * (1 << 20)}},
		{"workload.stormRate=1:1:1", []any{1.0}},
		{"workload.stormRate=1:1:0.5", []any{1.0}},
		// 0.1·3 is 0.30000000000000004 in float64: the last point is TO.
		{"workload.outputShare=0:0.3:0.1", []any{0.0, 0.1, 0.2, 0.3}},
	} {
		ax := mustVary(t, tc.in)
		var got []any
		for _, v := range ax.Values {
			got = append(got, v.Any())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseVaryRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"host.nope=1:2:1", "unknown name host.nope"},
		{"stormRate=1:2:1", "unknown name stormRate"},
		{"workload.stormRate", "want NAME=FROM:TO:STEP"},
		{"workload.stormRate=300:100:50", "TO is below FROM"},
		{"workload.stormRate=100:300:0", "STEP must be above 0"},
		{"workload.stormRate=100:300:-5", "STEP must be above 0"},
		{"workload.stormRate=100:300", "want FROM:TO:STEP"},
		{"workload.stormRate=a:300:50", `"a" is not a number`},
		{"workload.stormRate=1:1000:1", "at most 101 per axis"},
		{"workload.stormRate=100,,200", "empty value"},
		{"workload.stormRate=100,100", "listed twice"},
		{"hw.cpus=1.5,2", "whole numbers"},
		{"killop.rssHighPercent=50:120:10", "outside [0 %, 100 %]"},
		{"param.queryMemoryLoadSheddingHighMarkPercent=90:110:10", "outside"},
		{"param.simShedClockScope=query:operation:1", "takes a list of values"},
		{"param.simShedClockScope=query,ticket", "ticket is not one of query, operation"},
		{"param.logLevel=0:2:1", "unknown name param.logLevel"}, // the model does not read it
		// FROM + i·STEP never passes TO: the grid grew until memory ran out.
		{"workload.stormRate=1:1:1e-300", `"workload.stormRate=1:1:1e-300": STEP 1e-300 is below the precision of float64 at 1 (2.22e-16): FROM+STEP would be FROM, or points would coincide`},
		{"workload.stormRate=100:100:5e-15", "below the precision of float64 at 100"},
		// FROM+STEP is not FROM here, but 0.5+7e-17 and 0.5+1.4e-16 round
		// to the same float64.
		{"workload.outputShare=0.5:0.5000000000000002:7e-17", "below the precision of float64 at 0.5000000000000002"},
		{"workload.stormRate=-1e308:1e308:1e300", "+Inf points; at most 101 per axis"},
		{"workload.stormRate=NaN:300:50", `"NaN" is not a number`},
		{"workload.stormRate=100:Inf:50", `"Inf" is not a number`},
		{"workload.stormRate=100:300:+Inf", `"+Inf" is not a number`},
		{"workload.stormRate=100:300:NaN", `"NaN" is not a number`},
		{"workload.stormRate=100,-inf", `"-inf" is not a number`},
		{"host.otherBytes=0:1e308TiB:1e307TiB", `"1e308": too large`},
	} {
		_, err := ParseVary(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseVary(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// A range grid has exactly ⌊(TO−FROM)/STEP⌋+1 points (within float64's
// rounding of the quotient), each within [FROM, TO], increasing.
func TestParseVaryCountsItsPoints(t *testing.T) {
	for _, tc := range []struct {
		from, to, step float64
		want           int
	}{{0, 1, 0.1, 11}, {0, 1, 0.3, 4}, {1, 1, 1, 1}, {0.001, 0.002, 0.001, 2}, {0, 100, 1, 101}, {10, 20, 3, 4}, {0, 0.7, 0.07, 11}} {
		ax := mustVary(t, fmt.Sprintf("workload.outputShare=%v:%v:%v", tc.from/100, tc.to/100, tc.step/100))
		if len(ax.Values) != tc.want {
			t.Errorf("%v:%v:%v (÷100): %d points, want %d", tc.from, tc.to, tc.step, len(ax.Values), tc.want)
		}
		for i, v := range ax.Values {
			if v.Num < tc.from/100 || v.Num > tc.to/100 || (i > 0 && !(v.Num > ax.Values[i-1].Num)) {
				t.Errorf("%v:%v:%v (÷100): point %d is %v", tc.from, tc.to, tc.step, i, v.Num)
			}
		}
	}
}

func TestValidateRefusesWhatATrialWould(t *testing.T) {
	base := short()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"three axes", Config{Arms: builtins(t, "D"), Base: base, Seeds: 1, Axes: []Axis{mustVary(t, "hw.cpus=4,8"), mustVary(t, "workload.stormRate=100,200"), mustVary(t, "host.otherBytes=0,1GiB")}}, "at most 2"},
		{"no axis", Config{Arms: builtins(t, "D"), Base: base, Seeds: 1}, "Config.Axes"},
		{"twice", Config{Arms: builtins(t, "D"), Base: base, Seeds: 1, Axes: []Axis{mustVary(t, "hw.cpus=4,8"), mustVary(t, "hw.cpus=2,3")}}, "varied twice"},
		{"no seeds", Config{Arms: builtins(t, "D"), Base: base, Axes: []Axis{mustVary(t, "hw.cpus=4,8")}}, "Config.Seeds 0"},
		{"high mark under E's low mark", Config{Arms: builtins(t, "D", "E"), Base: base, Seeds: 1, Axes: []Axis{mustVary(t, "param.queryMemoryLoadSheddingHighMarkPercent=20,80")}}, "must be above the low mark"},
		{"workload bound", Config{Arms: builtins(t, "D"), Base: base, Seeds: 1, Axes: []Axis{mustVary(t, "workload.stormRate=100,5000")}}, "stormRate"},
		{"host full", Config{Arms: builtins(t, "D"), Base: base, Seeds: 1, Axes: []Axis{mustVary(t, "host.otherBytes=1GiB,40GiB")}}, "fill the machine"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestKnobsNameEveryParameterTheModelReads(t *testing.T) {
	for _, p := range model.ParamSpecs {
		_, ok := LookupKnob("param." + p.Name)
		if want := modelReads(p); ok != want {
			t.Errorf("param.%s: in the namespace %v, model reads it %v", p.Name, ok, want)
		}
	}
	for _, name := range []string{"param.queryMemoryLoadSheddingHighMarkPercent", "param.queryMemoryRssMonitorIntervalMillis", "param.simShedClockScope", "killop.rssHighPercent", "host.otherBytes", "workload.stormRate"} {
		if _, ok := LookupKnob(name); !ok {
			t.Errorf("%s is not in the namespace", name)
		}
	}
}

func TestKnobsApplyWhereTheyShould(t *testing.T) {
	d, e := builtins(t, "D")[0], builtins(t, "E")[0]
	high, _ := LookupKnob("param.queryMemoryLoadSheddingHighMarkPercent")
	rss, _ := LookupKnob("killop.rssHighPercent")
	if high.AppliesTo(d) || !high.AppliesTo(e) {
		t.Error("a shedding parameter must apply to the arms that shed only")
	}
	if !rss.AppliesTo(d) || rss.AppliesTo(e) {
		t.Error("killop.* must apply to arms with an actor only")
	}
	s := Setting{Config: short(), Arm: d}.clone()
	if err := rss.set(&s, Num(55)); err != nil {
		t.Fatal(err)
	}
	if s.Arm.KillOp().RSSHighPercent != 55 || d.KillOp().RSSHighPercent != 70 {
		t.Errorf("killop.rssHighPercent: set %v, original %v; want 55 on the copy only", s.Arm.KillOp().RSSHighPercent, d.KillOp().RSSHighPercent)
	}
	other, _ := LookupKnob("host.otherBytes")
	base := short()
	s = Setting{Config: base, Arm: d}.clone()
	other.set(&s, Num(3<<30))
	if s.Config.Hardware.Host.OtherProcessBytes != 3<<30 || base.Hardware.Host.OtherProcessBytes == 3<<30 {
		t.Error("host.otherBytes must change the cell's copy of the host only")
	}
	if got := KnobValue(high, Setting{Config: base, Arm: e}); got.Num != 70 {
		t.Errorf("E's high mark reads %v, want 70", got)
	}
}

// runSmall runs a 2×2 sweep of D and E.
func runSmall(t *testing.T) *Result {
	t.Helper()
	cfg := Config{Arms: builtins(t, "D", "E"), Base: short(), Seed: 3, Seeds: 2,
		Axes: []Axis{mustVary(t, "host.otherBytes=512MiB,2GiB"), mustVary(t, "param.queryMemoryLoadSheddingHighMarkPercent=70,85")}}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTwoByTwoSweep(t *testing.T) {
	r := runSmall(t)
	if len(r.Cells) != 2*4 || r.Trials != 2*4*2 {
		t.Fatalf("%d cells, %d trials; want 8 cells (2 arms × 2×2) and 16 trials", len(r.Cells), r.Trials)
	}
	seen := map[string]bool{}
	for _, c := range r.Cells {
		seen[fmt.Sprint(c.Arm, c.Index)] = true
		if len(c.Trials) != 2 || c.Trials[0].Seed != 3 || c.Trials[1].Seed != 4 {
			t.Errorf("cell %s %v: trials %v; want seeds 3 and 4", c.Arm, c.Index, c.Trials)
		}
		for _, m := range MapMetrics {
			if _, ok := c.Median[m]; !ok {
				t.Errorf("cell %s %v has no %s", c.Arm, c.Index, m)
			}
		}
		gap := func(m map[string]float64) float64 { return m[metric.ServerShedsPerS] - m[metric.AdmissionsPerS] }
		g0, g1 := gap(c.Trials[0].Metrics), gap(c.Trials[1].Metrics)
		if got, want := c.Median[metric.ServerShedsMinusAdmissions], metric.Median([]float64{g0, g1}); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Errorf("cell %s %v: %s = %v is not the median of server sheds/s − admissions/s (%v)", c.Arm, c.Index, metric.ServerShedsMinusAdmissions, got, want)
		}
		if !c.Applied { // otherBytes applies to every arm
			t.Errorf("cell %s %v: not applied", c.Arm, c.Index)
		}
	}
	if len(seen) != 8 {
		t.Errorf("cells are not distinct: %v", seen)
	}
	// D ignores the high mark: its cells along that axis ran the same setting and seeds.
	byKey := map[string]Cell{}
	for _, c := range r.Cells {
		byKey[fmt.Sprint(c.Arm, c.Index)] = c
	}
	for i := range 2 {
		a, b := byKey[fmt.Sprint("D", []int{i, 0})], byKey[fmt.Sprint("D", []int{i, 1})]
		if !reflect.DeepEqual(a.Median, b.Median) {
			t.Errorf("D at otherBytes index %d differs along the high mark it ignores: %v vs %v", i, a.Median, b.Median)
		}
	}
	// E's default (high mark 70) and D's (other 768 MiB is not on the grid's points but within it) are marked.
	if got := r.Axes[1].DefaultIndex["E"]; got != 0 {
		t.Errorf("E's default high mark index %d, want 0 (70)", got)
	}
	if _, ok := r.Axes[1].DefaultIndex["D"]; ok {
		t.Error("the high mark has a default for D, which does not shed")
	}
	if got := r.Axes[0].DefaultIndex["D"]; got != 0 {
		t.Errorf("D's default otherBytes (768 MiB) maps to index %d, want the nearer grid point 0 (512 MiB)", got)
	}

	// sweep.json round-trips, with the schema and the simulation note.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(b, &back)
	if back["schema"] != Schema || back["simulated"] != true || !strings.Contains(back["note"].(string), "SIMULATED") {
		t.Errorf("sweep.json head: schema %v simulated %v note %v", back["schema"], back["simulated"], back["note"])
	}
	if cells := back["cells"].([]any); len(cells) != 8 {
		t.Errorf("sweep.json has %d cells", len(cells))
	}

	// The page: one heatmap per arm and metric, each with its options.
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	ids := r.ChartIDs()
	if len(ids) != 2*len(MapMetrics) {
		t.Fatalf("%d charts, want %d (arms × metrics)", len(ids), 2*len(MapMetrics))
	}
	for _, id := range ids {
		if !strings.Contains(html, `data-chart="`+id+`"`) || !strings.Contains(html, `"`+id+`":{`) {
			t.Errorf("chart %s has no container or no options", id)
		}
	}
	if n := strings.Count(html, `"type":"heatmap"`); n != len(ids) {
		t.Errorf("%d heatmaps in the options, want %d", n, len(ids))
	}
	if !strings.Contains(html, "SIMULATED") || strings.Contains(strings.ToLower(html), "<script src") {
		t.Error("the page must say it is simulated and inline its scripts")
	}
	if !strings.Contains(html, "E's default setting") {
		t.Error("E's default cell is not marked")
	}
}

func TestOneAxisDrawsLines(t *testing.T) {
	cfg := Config{Arms: builtins(t, "D", "E"), Base: short(), Seed: 1, Seeds: 1, Axes: []Axis{mustVary(t, "workload.stormRate=150,207,300")}}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := HTML(r)
	if ids := r.ChartIDs(); len(ids) != len(MapMetrics) {
		t.Fatalf("%d charts, want one line chart per metric", len(ids))
	}
	if n := strings.Count(string(page), `"type":"line"`); n != 2*len(MapMetrics) {
		t.Errorf("%d line series, want one per arm and metric", n)
	}
	// 207/s is both arms' default (the joint fit's storm).
	if r.Axes[0].DefaultIndex["D"] != 1 || r.Axes[0].DefaultIndex["E"] != 1 {
		t.Errorf("default index %v, want 1 for both", r.Axes[0].DefaultIndex)
	}
}

func TestSweepIsDeterministic(t *testing.T) {
	a, b := runSmall(t), runSmall(t)
	if !reflect.DeepEqual(a.Cells, b.Cells) {
		t.Fatal("the same sweep gave different cells")
	}
	cfg := Config{Arms: builtins(t, "D"), Base: short(), Seed: 3, Seeds: 2, Parallel: 1,
		Axes: []Axis{mustVary(t, "host.otherBytes=512MiB,2GiB"), mustVary(t, "param.queryMemoryLoadSheddingHighMarkPercent=70,85")}}
	serial, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range serial.Cells {
		if !reflect.DeepEqual(c, a.Cells[i]) {
			t.Fatalf("one worker and many disagree at cell %d", i)
		}
	}
}

func TestSweepStopsWhenCancelled(t *testing.T) {
	base := virtual.DefaultConfig(1)
	base.Hardware = model.DefaultHardware()
	cfg := Config{Arms: builtins(t, "D", "E", "F"), Base: base, Seed: 1, Seeds: 3, Axes: []Axis{mustVary(t, "workload.stormRate=100:300:20")}}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled atomic.Int64
	time.AfterFunc(200*time.Millisecond, func() { cancelled.Store(time.Now().UnixNano()); cancel() })
	_, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled sweep returned %v, want context.Canceled", err)
	}
	// Generous, for a busy machine: the workers stop at their trial's next
	// cancellation check, not after the sweep's 99 trials.
	if took := time.Since(time.Unix(0, cancelled.Load())); took > 20*time.Second {
		t.Errorf("stopped %v after the cancel", took)
	}
}

func TestObservationResiduals(t *testing.T) {
	byName := func(name string) Observation {
		i := slices.IndexFunc(Observations, func(o Observation) bool { return o.Name == name })
		if i < 0 {
			t.Fatalf("no observation %q", name)
		}
		return Observations[i]
	}
	avail, adm, tickets := byName("D availability"), byName("D low-pri admissions/s"), byName("D read tickets (median)")
	eAvail, eKills, eFailovers := byName("E availability"), byName("E low-pri queue kills/s"), byName("E failovers, fewest in a trial")
	for _, tc := range []struct {
		o    Observation
		sim  float64
		want float64
	}{
		{avail, 0.97, 0}, {avail, 1, 0}, {avail, 0.94, 0}, {avail, 0.88, 1}, {adm, 160, 0}, {adm, 80, -0.5}, {adm, 200, 0.25},
		{tickets, 12, 0}, {tickets, 10, 0}, {tickets, 5, -0.5}, {tickets, 28, 1},
		{eAvail, 0.41, 0}, {eAvail, 0.9, 0.5}, {eKills, 0, 0}, {eKills, 3, 3}, {eFailovers, 13, 0}, {eFailovers, 0, -1},
		{adm, math.NaN(), -1},
	} {
		if got := tc.o.Residual(tc.sim); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s at %v: residual %v, want %v", tc.o.Name, tc.sim, got, tc.want)
		}
	}
}

// TestFitReturnsTheBestPointOfATinySpace checks the joint search against
// an independent evaluation of every point of a 2×2 space: the storm rate
// (seen by D and E) and the hazard form (seen by E only, so D's trials are
// shared between the two variants).
func TestFitReturnsTheBestPointOfATinySpace(t *testing.T) {
	arm := func(n string) arms.Arm { return builtins(t, n)[0] }
	d, e, f, m := arm("D"), arm("E"), arm("F"), arm("M")
	rate, _ := ParseDim("workload.stormRate=120,240")
	hazard, _ := ParseDim("param.simShedHazard=odds,linear")
	base := short()
	base.Hardware = model.Hardware{}
	cfg := FitConfig{Base: base, D: d, E: e, F: f, M: m, Space: []Dim{rate, hazard}, Seed: 5, FitSeeds: 2, PredictSeeds: 1,
		Samples: 8, Refine: 3}
	r, err := Fit(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Start != "grid" || len(r.Points) != 4 {
		t.Fatalf("start %s with %d points; want every point of the 2×2 space, once", r.Start, len(r.Points))
	}
	if want := 2*2 + 4*2 + 4; r.Evaluated != want || r.Reused != 2*2 {
		t.Errorf("%d trials run (%d reused), want %d: D once per rate, E once per point, 4 predictions; D's trials shared across the variants", r.Evaluated, r.Reused, want)
	}
	// Evaluate each point by hand: D and E on seeds 5 and 6.
	var best Point
	first := true
	for _, rv := range rate.Values {
		for _, hv := range hazard.Values {
			c := base
			c.Workload.StormRate = rv.Num
			run := func(a arms.Arm) []virtual.Summary {
				var trials []virtual.Summary
				for _, seed := range []uint64{5, 6} {
					c.Seed = seed
					tr, err := virtual.Run(context.Background(), c, a)
					if err != nil {
						t.Fatal(err)
					}
					trials = append(trials, virtual.Summarize(a.Name, seed, tr))
				}
				return trials
			}
			ev := e
			ev.SetParameters = maps.Clone(e.SetParameters)
			ev.SetParameters["simShedHazard"] = hv.Str
			p := Score(run(d), run(ev))
			p.Values = []Value{rv, hv}
			if first || better(p, best) {
				best, first = p, false
			}
		}
	}
	if !reflect.DeepEqual(r.Best.Values, best.Values) || r.Best.Objective != best.Objective {
		t.Errorf("fit's best %v (objective %v), an exhaustive evaluation's %v (objective %v)", r.Best.Values, r.Best.Objective, best.Values, best.Objective)
	}
	for _, p := range r.Points {
		if better(p, r.Best) {
			t.Errorf("point %v beats the returned best", p.Values)
		}
	}
	// The evidence per variant: each variant's best point, the selected one
	// the overall best.
	if len(r.Variants) != 2 {
		t.Fatalf("%d variants' evidence, want 2", len(r.Variants))
	}
	for _, v := range r.Variants {
		if !v.Found || v.Best.Objective < r.Best.Objective {
			t.Errorf("variant %s: found %v, objective %v below the best's %v", v.Variant, v.Found, v.Best.Objective, r.Best.Objective)
		}
	}
	roles := map[string]int{}
	for _, p := range r.Predictions {
		roles[p.Role]++
		if len(p.Trials) != 1 {
			t.Errorf("%s %s: %d trials, want 1", p.Role, p.Variant, len(p.Trials))
		}
	}
	if roles["D"] != 1 || roles["E"] != 1 || roles["M"] != 1 || roles["F"] != 1 {
		t.Errorf("predictions %v; want D, E, M and F once each", roles)
	}
}

func TestFitSearchesAContinuousSpaceDeterministically(t *testing.T) {
	d, e, f := builtins(t, "D", "E", "F")[0], builtins(t, "E")[0], builtins(t, "F")[0]
	rate, _ := ParseDim("workload.stormRate=100:250")
	base := short()
	base.Hardware = model.Hardware{}
	cfg := FitConfig{Base: base, D: d, E: e, F: f, Space: []Dim{rate}, Seed: 1, FitSeeds: 1, PredictSeeds: 1, Samples: 4, Refine: 3}
	a, err := Fit(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Fit(context.Background(), cfg)
	if a.Start != "hypercube" || len(a.Points) <= 4 {
		t.Errorf("start %s, %d points; want a hypercube of 4 and refinement points", a.Start, len(a.Points))
	}
	// Printed, not DeepEqual: an absent figure is NaN, never equal to itself.
	if fmt.Sprintf("%v", a.Points) != fmt.Sprintf("%v", b.Points) {
		t.Error("the same fit searched different points")
	}
	// A hypercube puts one point in each quarter of the range.
	quarters := map[int]bool{}
	for _, p := range a.Points[:4] {
		quarters[int((p.Values[0].Num-100)/150*4)] = true
	}
	if len(quarters) != 4 {
		t.Errorf("hypercube points %v do not cover the quarters", a.Points[:4])
	}
}

// The reduced joint fit that `make test` runs (the full one is `make
// calibrate`): every combination of the discrete unknowns — E's hazard
// form and D's actor policy — with the storm and admission settings at the
// embedded default. Under conserved spill I/O no point reproduces the
// sweeper investigation (docs/investigations.md), so this holds the fit
// to its own account: every combination is evaluated, the best is the
// lowest objective among points where D did not fail over, each build
// variant's evidence is its best point, and "reproduced" is said exactly
// when every residual is within tolerance, D holds and E falls.
func TestReducedJointFitSearchesEveryBuildAndActorRule(t *testing.T) {
	if testing.Short() {
		t.Skip("the reduced joint fit: about 20 default-profile trials")
	}
	var dims []Dim
	for _, d := range DefaultSpace() {
		if d.Values != nil {
			dims = append(dims, d)
		}
	}
	arm := func(n string) arms.Arm { return builtins(t, n)[0] }
	cfg := FitConfig{Base: virtual.DefaultConfig(1), D: arm("D"), E: arm("E"), F: arm("F"), M: arm("M"), Space: dims, Seed: 1,
		FitSeeds: 2, PredictSeeds: 2, Samples: 12, Refine: 2}
	start := time.Now()
	r, err := Fit(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Start != "grid" || len(r.Points) != 6 {
		t.Fatalf("start %s, %d points; want the 2 hazards × 3 policies grid", r.Start, len(r.Points))
	}
	for _, p := range r.Points {
		if better(p, r.Best) {
			t.Errorf("point %v (objective %.2f, feasible %v) beats the best %v (%.2f)", p.Values, p.Objective, p.Feasible(), r.Best.Values, r.Best.Objective)
		}
	}
	if len(r.Variants) != 2 {
		t.Fatalf("%d build variants' evidence, want odds and linear", len(r.Variants))
	}
	for _, v := range r.Variants {
		if !v.Found || v.Best.Objective < r.Best.Objective && v.Best.Feasible() == r.Best.Feasible() {
			t.Errorf("variant %s: found %v, best %.2f against the fit's %.2f", v.Variant, v.Found, v.Best.Objective, r.Best.Objective)
		}
	}
	d, _ := r.Prediction("D")
	e, _ := r.Prediction("E")
	want := r.Best.Matches("") && Holds(d.Trials) && Falls(e.Trials)
	if r.Reproduced() != want {
		t.Errorf("reproduced %v; every residual within tolerance %v, D holds %v, E falls %v", r.Reproduced(), r.Best.Matches(""), Holds(d.Trials), Falls(e.Trials))
	}
	t.Logf("best %v, objective %.2f, reproduced %v; %d trials in %v", r.Best.Values, r.Best.Objective, r.Reproduced(), r.Evaluated, time.Since(start).Round(time.Second))
}

// A byte knob's value reads as every size in qmlsab's text does
// (units.HumanBytes: three figures in the largest binary unit), not to
// two decimals of its own (21.68 GiB beside the report's 21.7 GiB).
func TestByteKnobsLabelSizesAsEveryPageDoes(t *testing.T) {
	k, ok := LookupKnob("host.otherBytes")
	if !ok {
		t.Fatal("no knob host.otherBytes")
	}
	for v, want := range map[float64]string{21.68 * (1 << 30): "21.7 GiB", 512 << 20: "512 MiB", 1.5 * (1 << 30): "1.5 GiB", 100.25 * (1 << 20): "100 MiB"} {
		if got := k.Label(Value{Num: v}); got != want {
			t.Errorf("Label(%g) = %q, want %q", v, got, want)
		}
	}
	r, ok := LookupKnob("host.releaseBytesPerSec")
	if !ok {
		t.Fatal("no knob host.releaseBytesPerSec")
	}
	if got := r.Label(Value{Num: 1 << 30}); got != "1 GiB/s" {
		t.Errorf("Label(1 GiB/s) = %q", got)
	}
}

// A fit's space is exactly the unknowns given, each with the reason the
// package documents for it, a host unknown's included; a name given
// twice is refused.
func TestParseSpaceKeepsEachUnknownsReason(t *testing.T) {
	dims, err := ParseSpace([]string{"workload.stormRate=150:330", "host.dirtyRatio=10:60"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dims) != 2 || dims[0].Knob.Name != "workload.stormRate" || dims[1].Knob.Name != "host.dirtyRatio" {
		t.Fatalf("space %+v, want the two unknowns given, in order", dims)
	}
	for _, d := range dims {
		if d.Why == "" {
			t.Errorf("%s: no reason, though the package documents one", d.Knob.Name)
		}
	}
	if dims[1].Lo != 10 || dims[1].Hi != 60 {
		t.Errorf("host.dirtyRatio range %v–%v, want the given 10–60", dims[1].Lo, dims[1].Hi)
	}
	if _, err := ParseSpace([]string{"host.dirtyRatio=10:60", "host.dirtyRatio=20:30"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a name given twice: %v, want refused", err)
	}
}
