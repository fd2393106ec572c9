package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/store"
)

// The margin's quantiles are χ²'s: 3.841 at 95 % with one degree of
// freedom, 19.675 with eleven (the investigation's unknowns).
func TestChi2Quantile(t *testing.T) {
	for _, tc := range []struct {
		k    int
		want float64
	}{{1, 3.8415}, {2, 5.9915}, {11, 19.6751}, {30, 43.7730}} {
		if got := chi2Quantile(0.95, tc.k); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("χ²(0.95, %d) = %.4f, want %.4f", tc.k, got, tc.want)
		}
	}
}

// ruleConfig is an ensemble of one scored observation (a target of 100
// with a 10 % tolerance) and one constraint, over one unknown.
func ruleConfig() *EnsembleConfig {
	rate, _ := ParseDim("workload.stormRate=100:300")
	return &EnsembleConfig{
		Observations: []Observation{{Arm: "D", Name: "flow", Metric: metric.AdmissionsPerS, Lo: 100, Hi: 100, Tol: 0.1}},
		Constraints:  []Observation{{Arm: "D", Name: "no failover", Metric: metric.Failovers, Reduce: investigation.Max, Absolute: true}},
		Space:        []Dim{rate},
	}
}

func point(c *EnsembleConfig, seq int, rate, flow, failovers float64) EnsemblePoint {
	sim := []float64{flow}
	for len(sim) < len(c.Observations) {
		sim = append(sim, 0)
	}
	p := EnsemblePoint{Values: []Value{Num(rate)}, Seq: seq, Sim: sim, ConstraintSim: []float64{failovers}}
	c.score(&p)
	return p
}

// The acceptable set: the points within every tolerance when there are
// any; otherwise the feasible points within the χ² margin of the best. A
// point that breaks a constraint is never in it, however good its
// objective.
func TestAcceptableSetRule(t *testing.T) {
	c := ruleConfig()
	pts := []EnsemblePoint{point(c, 0, 120, 105, 0), point(c, 1, 140, 91, 0), point(c, 2, 160, 50, 0), point(c, 3, 180, 100, 2)}
	set := c.Acceptable(pts)
	if !set.WithinTolerance || !reflect.DeepEqual(set.Points, []int{0, 1}) || set.Best != 0 {
		t.Errorf("within tolerance: %+v; want points 0 and 1 (105 and 91 are within 10 %% of 100), best 0", set)
	}
	// No point within tolerance: objectives 4, 9 and 25 (residuals 0.2,
	// 0.3 and 0.5 against a tolerance of 0.1). With one unknown the
	// margin is 3.84 times the best's objective per scored observation
	// (4 of 1): the set is every feasible point up to 4 + 15.37, the
	// best and the 9, not the 25.
	pts = []EnsemblePoint{point(c, 0, 120, 120, 0), point(c, 1, 140, 70, 0), point(c, 2, 160, 150, 0), point(c, 3, 180, 100, 1)}
	set = c.Acceptable(pts)
	if set.WithinTolerance || set.Best != 0 || !reflect.DeepEqual(set.Points, []int{0, 1}) || math.Abs(set.Margin-4*3.8415) > 1e-3 {
		t.Errorf("margin: %+v; want the best (objective 4) and the 9 within 4 + 4 × 3.84, and never the perfect point that failed over", set)
	}
	// With two scored observations the scale is 4 ÷ 2: the margin is
	// 2 × 3.84, and the 25 stays out.
	c.Observations = append(c.Observations, Observation{Arm: "D", Name: "other", Metric: metric.KillsPerS, Lo: 0, Hi: 0, Tol: 1, Absolute: true})
	for i := range pts {
		pts[i].Sim = append(pts[i].Sim, 0)
		c.score(&pts[i])
	}
	pts = append(pts, point(c, 4, 150, 125, 0)) // objective 6.25
	set = c.Acceptable(pts)
	if !reflect.DeepEqual(set.Points, []int{0, 4, 1}) {
		t.Errorf("margin: points %v, want [0 4 1] (objectives 4, 6.25 and 9 within 4 + 2 × 3.84, best first)", set.Points)
	}
}

// The flip is the unknown and value that separate met from not met.
func TestFlipFindsTheBoundary(t *testing.T) {
	c := ruleConfig()
	policy, _ := ParseDim("killop.policy=largest-first,queued-largest-first")
	c.Space = append(c.Space, policy)
	var pts []EnsemblePoint
	var outs []pointOutcome
	for i, rate := range []float64{110, 130, 170, 210, 250, 290} {
		pol := policy.Values[i%2]
		pts = append(pts, EnsemblePoint{Values: []Value{Num(rate), pol}})
		met := 0
		if rate > 190 {
			met = 5
		}
		outs = append(outs, pointOutcome{point: i, met: met, of: 5})
	}
	d := builtins(t, "D")[0]
	f := c.flip(d, pts, outs)
	if f == nil || f.Unknown != "workload.stormRate" || f.Value != 190 || !f.MetAbove || f.Agreement != 1 || !f.Decides() {
		t.Fatalf("flip %+v; want met above stormRate 190 (between 170 and 210), agreement 1", f)
	}
	// Met at one policy only: the discrete unknown decides.
	for i := range outs {
		outs[i].met = 0
		if i%2 == 1 {
			outs[i].met = 5
		}
	}
	f = c.flip(d, pts, outs)
	if f == nil || f.Unknown != "killop.policy" || !reflect.DeepEqual(f.MetAt, []string{"queued-largest-first"}) || f.Agreement != 1 {
		t.Fatalf("flip %+v; want met at killop.policy=queued-largest-first", f)
	}
	// F has no actor: the policy cannot decide F's outcome, whatever the
	// set's points happen to show; no other unknown separates them.
	if f := c.flip(builtins(t, "F")[0], pts, outs); f != nil && (f.Unknown == "killop.policy" || f.Decides()) {
		t.Errorf("F's flip %+v; an unknown F does not see named, or a split deciding what only the policy separates", f)
	}
}

// dummyKnob is an unknown no arm's trial sees: it changes nothing.
var dummyKnob = Knob{Name: "test.dummy", Doc: "changes nothing", Min: 0, Max: 1,
	set: func(*Setting, Value) error { return nil }, get: func(*Setting) Value { return Num(0.5) }}

// smallEnsemble is an ensemble on short trials: the storm rate and the
// probing floor, D's and E's observations, F predicted.
func smallEnsemble(t *testing.T, extra ...Dim) EnsembleConfig {
	d, e, f := builtins(t, "D")[0], builtins(t, "E")[0], builtins(t, "F")[0]
	rate, _ := ParseDim("workload.stormRate=100:300")
	floor, _ := ParseDim("param.throughputProbingMinConcurrency=4:16")
	base := short()
	return EnsembleConfig{Base: base, Fitted: []Role{{"D", d}, {"E", e}}, Predicted: []arms.Arm{f}, Observations: investigation.Observations,
		Constraints: InvestigationConstraints, Conditions: investigation.FAcceptance, Space: append([]Dim{rate, floor}, extra...), Seed: 3,
		FitSeeds: 1, PredictSeeds: 2, Samples: 6, Starts: 2, Steps: 2, MinAcceptable: 4, Explore: 4, PredictPoints: 4}
}

func runEnsemble(t *testing.T, c EnsembleConfig) *Ensemble {
	t.Helper()
	pts, ev, err := c.Search(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pts = Canonical(pts)
	pl := c.Plan(pts)
	figs, n, err := c.RunPlan(context.Background(), pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	en, err := c.Finish(pts, pl, figs, ev.Trials+n)
	if err != nil {
		t.Fatal(err)
	}
	return en
}

// An unknown no observation moves is reported free, with no sensitivity
// at all; the storm's rate, which moves D's and E's flows, is not.
func TestUnknownNoObservationMovesIsFree(t *testing.T) {
	dummy := Dim{Knob: dummyKnob, Lo: 0, Hi: 1, Why: "a test's dummy"}
	en := runEnsemble(t, smallEnsemble(t, dummy))
	if en.Plan.Set.Best < 0 || len(en.Plan.Set.Points) == 0 {
		t.Fatalf("no acceptable point: %+v", en.Plan.Set)
	}
	u := len(en.Config.Space) - 1
	if en.Status[u] != StatusFree {
		t.Errorf("the dummy unknown is %s, want free", en.Status[u])
	}
	for o := range en.Config.Observations {
		if en.Sensitivity[o][u] != 0 {
			t.Errorf("%s moves %v tolerances over the dummy unknown, want exactly 0 (its trials are the same trials)", en.Config.Observations[o].Name, en.Sensitivity[o][u])
		}
	}
	if en.Status[0] == StatusFree {
		t.Errorf("the storm rate is free; sensitivity %v", column(en.Sensitivity, 0))
	}
	out := en.Out(EnsembleSpec{Source: "test"}, 0)
	if out.Identifiability["test.dummy"] != StatusFree {
		t.Errorf("JSON identifiability %v", out.Identifiability)
	}
}

func column(m [][]float64, u int) []float64 {
	var out []float64
	for _, row := range m {
		out = append(out, row[u])
	}
	return out
}

// Every share is of acceptable points × seeds, each condition's verdict
// follows the documented thresholds, and the JSON has every part the
// issue asks for.
func TestEnsemblePredictsSharesOverTheSet(t *testing.T) {
	c := smallEnsemble(t)
	en := runEnsemble(t, c)
	if len(en.Predictions) != 1 || len(en.Predictions[0].Conditions) != len(investigation.FAcceptance) {
		t.Fatalf("predictions %+v; want F's four conditions", en.Predictions)
	}
	for _, cs := range en.Predictions[0].Conditions {
		if cs.Of != len(en.Plan.Predict)*c.PredictSeeds {
			t.Errorf("%s: of %d, want %d points × %d seeds", cs.Name, cs.Of, len(en.Plan.Predict), c.PredictSeeds)
		}
		want := VerdictUncertain
		if cs.Share >= PredictedShare {
			want = VerdictMet
		} else if cs.Share <= 1-PredictedShare {
			want = VerdictNotMet
		}
		if cs.Verdict != want || (cs.FlipsAt != nil) != (cs.Met > 0 && cs.Met < cs.Of) {
			t.Errorf("%s: share %.2f verdict %q flip %v", cs.Name, cs.Share, cs.Verdict, cs.FlipsAt)
		}
	}
	// Each share is the conditions' own reading of F's trials at the
	// predicted points, run here again by hand.
	cond := investigation.FAcceptance[0]
	met, of := 0, 0
	for _, i := range en.Plan.Predict {
		s, err := c.settingFor(c.Predicted[0], en.Points[i].Values)
		if err != nil {
			t.Fatal(err)
		}
		for k := range c.PredictSeeds {
			cfg := s.Config
			cfg.Seed = c.Seed + uint64(k)
			tr, err := virtual.Run(context.Background(), cfg, s.Arm)
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := cond.Met([]investigation.Trial{virtual.Summarize("F", cfg.Seed, tr).Metrics}); ok {
				met++
			}
			of++
		}
	}
	if got := en.Predictions[0].Conditions[0]; got.Met != met || got.Of != of {
		t.Errorf("%s: %d of %d, by hand %d of %d", cond.Name, got.Met, got.Of, met, of)
	}
	b, err := en.Out(EnsembleSpec{Source: "test"}, 0).JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"acceptable", "ranges", "sensitivity", "predictions", "identifiability", "rule"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("the JSON lacks %q", k)
		}
	}
	var acc []struct {
		Params    map[string]any     `json:"params"`
		Objective float64            `json:"objective"`
		Residuals map[string]float64 `json:"residuals"`
	}
	if err := json.Unmarshal(doc["acceptable"], &acc); err != nil || len(acc) != len(en.Plan.Set.Points) || len(acc[0].Params) != 2 || len(acc[0].Residuals) != len(c.Observations) {
		t.Errorf("acceptable %s (%v)", doc["acceptable"], err)
	}
	var preds map[string]map[string]struct {
		Share   float64 `json:"share"`
		Verdict string  `json:"verdict"`
	}
	if err := json.Unmarshal(doc["predictions"], &preds); err != nil || len(preds["F"]) != 4 {
		t.Errorf("predictions %s (%v)", doc["predictions"], err)
	}
}

// A sharded ensemble — its search in two shards merged, its predictions
// in two shards from the merged search, merged — is the one host's,
// through the files each shard writes.
func TestShardedEnsembleIsTheOneHosts(t *testing.T) {
	c := smallEnsemble(t)
	c.Base = virtual.DefaultConfig(1)
	c.Base.Workload.Phases = short().Workload.Phases
	spec, err := c.Spec("test", "short")
	if err != nil {
		t.Fatal(err)
	}
	one, err := spec.RunOne(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(v any, into any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	var searches []SearchFile
	for i := 1; i <= 2; i++ {
		s, err := spec.RunSearch(context.Background(), &plan.Shard{Index: i, Count: 2}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var back SearchFile
		roundTrip(s, &back)
		searches = append(searches, back)
	}
	// Given in either order.
	merged, err := MergeSearch([]string{"s2", "s1"}, []SearchFile{searches[1], searches[0]})
	if err != nil {
		t.Fatal(err)
	}
	var preds []PredictFile
	for i := 1; i <= 2; i++ {
		p, err := merged.RunPredict(context.Background(), plan.Shard{Index: i, Count: 2}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var back PredictFile
		roundTrip(p, &back)
		preds = append(preds, back)
	}
	two, _, err := MergePredict([]string{"p1", "p2"}, preds)
	if err != nil {
		t.Fatal(err)
	}
	a, b := one.Out(spec, 0), two.Out(spec, 0)
	a.Trials, b.Trials = 0, 0 // one host shares trials between chains; shards cannot
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("sharded ensemble differs from the one host's:\none host %s\nsharded  %s", ja, jb)
	}
	if len(a.Acceptable) == 0 {
		t.Error("no acceptable point; the comparison compared nothing")
	}
	// A missing shard, a shard twice and a shard of another ensemble are
	// refused by name.
	if _, err := MergeSearch([]string{"s1"}, searches[:1]); err == nil || !strings.Contains(err.Error(), "shard 2/2 is missing") {
		t.Errorf("merge of one of two shards: %v", err)
	}
	if _, err := MergeSearch([]string{"s1", "again"}, []SearchFile{searches[0], searches[0]}); err == nil || !strings.Contains(err.Error(), "again: shard 1/2 is given twice") {
		t.Errorf("merge of a shard twice: %v", err)
	}
	other := searches[1]
	other.Spec.Seed++
	other.Digest = other.Spec.Digest()
	if _, err := MergeSearch([]string{"s1", "other"}, []SearchFile{searches[0], other}); err == nil || !strings.Contains(err.Error(), "other: a shard of another ensemble") {
		t.Errorf("merge across ensembles: %v", err)
	}
	if _, _, err := MergePredict([]string{"p1"}, preds[:1]); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("merge of one of two prediction shards: %v", err)
	}
}

// A file whose setting was edited after it was written is refused.
func TestEditedFitFileIsRefused(t *testing.T) {
	c := smallEnsemble(t)
	spec, err := c.Spec("test", "short")
	if err != nil {
		t.Fatal(err)
	}
	f := SearchFile{Schema: SearchSchema, Digest: spec.Digest(), Spec: spec}
	b, _ := json.Marshal(f)
	if _, err := DecodeSearch(b); err != nil {
		t.Fatalf("an intact file: %v", err)
	}
	edited := strings.Replace(string(b), `"seed":3`, `"seed":4`, 1)
	if edited == string(b) {
		t.Fatal("the test's edit changed nothing")
	}
	if _, err := DecodeSearch([]byte(edited)); err == nil || !strings.Contains(err.Error(), "the file was changed") {
		t.Errorf("an edited file: %v", err)
	}
	if _, err := DecodeSearch(b[:len(b)/2]); err == nil || !strings.Contains(err.Error(), "corrupt or truncated") {
		t.Errorf("a truncated file: %v", err)
	}
}

// The hazard form is a build variant: it applies to arms that name one (E,
// F, G), never to master's M, and a discrete unknown is searched under
// every value at every sample.
func TestEnsembleSearchesEveryVariant(t *testing.T) {
	m, e := builtins(t, "M")[0], builtins(t, "E")[0]
	hazard, _ := ParseDim("param.simShedHazard=odds,linear")
	if applies(hazard, m) || !applies(hazard, e) {
		t.Errorf("hazard applies to M %v, E %v; want only E", applies(hazard, m), applies(hazard, e))
	}
	c := smallEnsemble(t, hazard)
	reqs := c.samples()
	if len(reqs) != c.Starts+c.Samples*2 {
		t.Fatalf("%d first points, want the base in each of %d chains and %d samples × 2 variants", len(reqs), c.Starts, c.Samples)
	}
	for j := 0; j < c.Samples; j++ {
		a, b := reqs[c.Starts+2*j], reqs[c.Starts+1+2*j]
		if key(a.vals[:2]) != key(b.vals[:2]) || a.vals[2].Equal(b.vals[2]) || a.chain != b.chain {
			t.Errorf("sample %d: %v and %v are not one sample under both variants in one chain", j, a.vals, b.vals)
		}
	}
	if got := fmt.Sprint(slices.Collect(func(yield func(int) bool) {
		for _, r := range reqs {
			if !yield(r.chain) {
				return
			}
		}
	})); !strings.HasPrefix(got, "[0 1 0 0 1 1 0 0 1 1") {
		t.Errorf("chains %s; want the base in chains 0 and 1, then samples dealt in turn", got)
	}
}

// The best point's settings are what ParseSet takes back: integers and
// bytes rounded, the host model's background ratio held at half the dirty
// one.
func TestBestSettingsParseBack(t *testing.T) {
	space := []Dim{{Knob: mustKnob("param.throughputProbingMinConcurrency")}, {Knob: mustKnob("host.dirtyRatio")}, {Knob: mustKnob("killop.policy")}}
	en := &Ensemble{Config: &EnsembleConfig{Space: space}, Points: []EnsemblePoint{{Values: []Value{Num(6.6), Num(20), Str(killop.PolicyLargestFirst)}}},
		Plan: Plan{Set: AcceptableSet{Best: 0}}}
	got := en.BestSettings()
	want := []string{"param.throughputProbingMinConcurrency=7", "host.dirtyRatio=20", "host.dirtyBackgroundRatio=10", "killop.policy=" + killop.PolicyLargestFirst}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("BestSettings = %q, want %q", got, want)
	}
	for _, s := range got {
		if _, err := ParseSet(s); err != nil {
			t.Errorf("ParseSet(%q): %v", s, err)
		}
	}
}

// A run folder the model cannot stand in for is refused, naming its
// manifest: no workload, a workload of another kind, an arm the run does
// not have, an arm that runs an outside program. A figure none of an
// arm's trials has is left out and named, and the tolerance of one that
// all agree on is the figure's floor.
func TestFromRunRefusesWhatTheModelCannotRun(t *testing.T) {
	armsDoc := func(extra string) json.RawMessage {
		b, _ := json.Marshal("arms:\n  - name: D\n    setParameters: {executionControlDeprioritizationGate: \"true\"}\n" + extra)
		return b
	}
	storm, _ := json.Marshal(map[string]any{"name": "s", "kind": "spill_to_disk", "spill_to_disk": map[string]any{"storm_rate": 200}})
	merge, _ := json.Marshal(map[string]any{"name": "m", "kind": "merge_partial_write"})
	trials := map[string][]store.Trial{"D": {{Arm: "D", Index: 1, Metrics: map[string]float64{metric.Availability: 0.9, metric.Failovers: 0}},
		{Arm: "D", Index: 2, Metrics: map[string]float64{metric.Availability: 0.8, metric.Failovers: 0}}}}
	status := []store.TrialStatus{{Arm: "D", Index: 1, Status: store.Valid}, {Arm: "D", Index: 2, Status: store.Valid}}
	run := func(w, a json.RawMessage) *store.Run {
		return &store.Run{Dir: "r", Manifest: store.Manifest{Workload: w, Arms: a, Trials: status, Simulated: true}, Trials: trials}
	}
	for _, tc := range []struct {
		r     *store.Run
		names []string
		want  string
	}{
		{run(nil, armsDoc("")), []string{"D"}, "r/manifest.json records no workload"},
		{run(merge, armsDoc("")), []string{"D"}, "the run's workload is merge_partial_write"},
		{run(storm, nil), []string{"D"}, "r/manifest.json records no arm definitions"},
		{run(storm, armsDoc("")), []string{"E"}, `arm "E" is not an arm of the run in r`},
		{run(storm, armsDoc("    actors:\n      - exec: {command: [mongotune]}\n")), []string{"D"}, "arm D runs an outside program"},
	} {
		if _, err := FromRun(tc.r, tc.names); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	obs, err := FromRun(run(storm, armsDoc("")), []string{"D"})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Observations) != 2 || !slices.Contains(obs.Absent, "D low-pri admissions/s") {
		t.Fatalf("observations %+v, absent %v; want availability and failovers only", obs.Observations, obs.Absent)
	}
	if a := obs.Observations[0]; math.Abs(a.Lo-0.85) > 1e-12 || math.Abs(a.Tol-0.1) > 1e-12 || !a.Absolute {
		t.Errorf("availability %+v: want the median 0.85, the spread 0.1 as its tolerance", a)
	}
	if f := obs.Observations[1]; f.Lo != 0 || f.Tol != 0.5 {
		t.Errorf("failovers %+v: want 0 with the floor 0.5", f)
	}
}

// When every point breaks a constraint the set is empty, nothing is probed
// or predicted, and the rule says why.
func TestNoFeasiblePointPredictsNothing(t *testing.T) {
	c := ruleConfig()
	c.Fitted = []Role{{"D", builtins(t, "D")[0]}}
	c.Predicted = builtins(t, "F")
	c.Conditions, c.PredictPoints, c.PredictSeeds, c.FitSeeds = investigation.FAcceptance, 4, 2, 1
	pts := []EnsemblePoint{point(c, 0, 120, 100, 1), point(c, 1, 140, 90, 2)}
	pl := c.Plan(pts)
	if len(pl.Jobs) != 0 || len(pl.Set.Points) != 0 {
		t.Fatalf("plan %+v; want no trial and no acceptable point", pl)
	}
	en, err := c.Finish(pts, pl, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := en.Out(EnsembleSpec{}, 0)
	if len(out.Acceptable) != 0 || len(out.Identifiability) != 0 || !strings.Contains(out.Rule.Text, "no point meets the constraints (no failover") {
		t.Errorf("out: %d acceptable, identifiability %v, rule %q", len(out.Acceptable), out.Identifiability, out.Rule.Text)
	}
	for _, cs := range en.Predictions[0].Conditions {
		if cs.Of != 0 || cs.Verdict != VerdictUncertain {
			t.Errorf("%s: %d trials, verdict %q; want none, uncertain", cs.Name, cs.Of, cs.Verdict)
		}
	}
}
