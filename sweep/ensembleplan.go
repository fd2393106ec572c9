package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
)

// Plan is stage 2's work, deterministic from stage 1's points: the
// sensitivity probes at the best point and the predictions at the
// acceptable points, as one list of trials (Jobs) that shards by index.
type Plan struct {
	Set AcceptableSet
	// Predict are the acceptable points the arms are predicted at (all of
	// them, or a spread subset of PredictPoints), best first.
	Predict []int
	// Probes are the sensitivity probes: unknown Dim at Values.
	Probes []Probe
	// Cells are the trials' settings; Jobs one trial each.
	Cells []PlanCell
	Jobs  []PlanJob
}

// Probe is one sensitivity probe: the best point with unknown Dim moved
// to Values[Dim] (at unit coordinate Unit for a continuous unknown).
type Probe struct {
	Dim    int
	Unit   float64
	Values []Value
}

// PlanCell is one arm at one point of stage 2: a predicted arm at an
// acceptable point (Arm indexes Predicted), or a fitted role at a probe
// (Role indexes Fitted).
type PlanCell struct {
	Key    string
	Arm    int // -1 for a probe's cell
	Role   int // -1 for a prediction's cell
	Values []Value
}

// PlanJob is one trial of a cell.
type PlanJob struct {
	Cell int
	Seed uint64
}

// Plan makes stage 2's plan from the canonical points of stage 1.
func (c *EnsembleConfig) Plan(pts []EnsemblePoint) Plan {
	pl := Plan{Set: c.Acceptable(pts)}
	pl.Predict = spread(c, pts, pl.Set.Points, c.PredictPoints)
	cellIndex := map[string]int{}
	addCell := func(cell PlanCell, seeds int) {
		if _, ok := cellIndex[cell.Key]; ok {
			return
		}
		cellIndex[cell.Key] = len(pl.Cells)
		for i := range seeds {
			pl.Jobs = append(pl.Jobs, PlanJob{Cell: len(pl.Cells), Seed: c.Seed + uint64(i)})
		}
		pl.Cells = append(pl.Cells, cell)
	}
	if pl.Set.Best < 0 || !pts[pl.Set.Best].Feasible {
		return pl // no acceptable point: nothing to probe or predict
	}
	best := pts[pl.Set.Best].Values
	for i, d := range c.Space {
		var probes []Probe
		if d.Values != nil {
			for _, v := range d.Values {
				if !v.Equal(best[i]) {
					vals := slices.Clone(best)
					vals[i] = v
					probes = append(probes, Probe{Dim: i, Values: vals})
				}
			}
		} else {
			u := d.unit(best[i])
			for _, w := range []float64{max(u-SensitivityStep, 0), min(u+SensitivityStep, 1)} {
				vals := slices.Clone(best)
				vals[i] = d.at(w)
				if !vals[i].Equal(best[i]) {
					probes = append(probes, Probe{Dim: i, Unit: w, Values: vals})
				}
			}
		}
		for _, p := range probes {
			pl.Probes = append(pl.Probes, p)
			for r, role := range c.Fitted {
				if applies(d, role.Arm) {
					addCell(PlanCell{Key: "probe/" + cellKey(role.Name, role.Arm, p.Values, c.Space), Arm: -1, Role: r, Values: p.Values}, c.FitSeeds)
				}
			}
		}
	}
	for a, arm := range c.Predicted {
		for _, i := range pl.Predict {
			addCell(PlanCell{Key: "predict/" + cellKey(arm.Name, arm, pts[i].Values, c.Space), Arm: a, Role: -1, Values: pts[i].Values}, c.PredictSeeds)
		}
	}
	return pl
}

// spread is at most n of the acceptable points: all of them when there
// are no more, else the best and then, one at a time, the point farthest
// (in unit coordinates) from those already taken.
func spread(c *EnsembleConfig, pts []EnsemblePoint, acc []int, n int) []int {
	if len(acc) <= n {
		return slices.Clone(acc)
	}
	coord := func(i int) []float64 {
		var u []float64
		for k, d := range c.Space {
			u = append(u, d.unit(pts[i].Values[k]))
		}
		return u
	}
	dist := make([]float64, len(acc))
	for k := range dist {
		dist[k] = math.Inf(1)
	}
	taken := []int{acc[0]}
	used := map[int]bool{0: true}
	for len(taken) < n {
		last := coord(taken[len(taken)-1])
		far := -1
		for k, i := range acc {
			if used[k] {
				continue
			}
			var d2 float64
			for j, x := range coord(i) {
				d2 += (x - last[j]) * (x - last[j])
			}
			dist[k] = min(dist[k], d2)
			if far < 0 || dist[k] > dist[far] {
				far = k
			}
		}
		used[far] = true
		taken = append(taken, acc[far])
	}
	return taken
}

// RunPlan runs the plan's jobs that mine selects (every job when nil) and
// returns each one's figures by job index.
func (c *EnsembleConfig) RunPlan(ctx context.Context, pl Plan, mine func(job int) bool) (map[int]map[string]float64, int, error) {
	var jobs []job
	var index []int
	for j, pj := range pl.Jobs {
		if mine != nil && !mine(j) {
			continue
		}
		cell := pl.Cells[pj.Cell]
		a := c.cellArm(cell)
		s, err := c.settingFor(a, cell.Values)
		if err != nil {
			return nil, 0, fmt.Errorf("arm %s at %s: %w", a.Name, c.pointLabel(cell.Values), err)
		}
		jobs = append(jobs, job{cell: pj.Cell, arm: s.Arm, cfg: s.Config, seed: pj.Seed})
		index = append(index, j)
	}
	var progress func(done, total int)
	if c.Progress != nil {
		progress = func(done, total int) { c.Progress("predict", done, total) }
	}
	out, err := runJobs(ctx, jobs, c.Parallel, progress)
	if err != nil {
		return nil, 0, err
	}
	res := map[int]map[string]float64{}
	for k, j := range index {
		res[j] = finite(out[k].Metrics)
	}
	return res, len(jobs), nil
}

func (c *EnsembleConfig) cellArm(cell PlanCell) arms.Arm {
	if cell.Arm >= 0 {
		return c.Predicted[cell.Arm]
	}
	return c.Fitted[cell.Role].Arm
}

// finite is a trial's figures without NaN or infinite values (a figure
// that is not a number is absent).
func finite(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[k] = v
		}
	}
	return out
}

// Ensemble is what the ensemble found: its points, the acceptable set,
// each unknown's range and sensitivity and each predicted arm's
// conditions as shares.
type Ensemble struct {
	Config *EnsembleConfig
	Points []EnsemblePoint
	Plan   Plan
	// Ranges are each unknown's range over the acceptable set: Lo and Hi
	// for a continuous one, Values for a discrete one.
	Ranges []Range
	// Sensitivity[o][u] is how far observation o moves, in tolerances,
	// over unknown u's whole range (linearized from the probes at the best
	// point; for a discrete unknown the largest move to another value).
	Sensitivity [][]float64
	// Status is each unknown's identifiability (StatusPinned, StatusLoose,
	// StatusFree).
	Status []string
	// Fits counts, per observation, the acceptable points within its
	// tolerance.
	Fits        []int
	Predictions []ArmPrediction
	// Trials are the trials run (in this process, or over every shard);
	// WallSeconds the wall time, each stage's longest shard.
	Trials      int
	WallSeconds float64
}

// Range is an unknown's span over the acceptable set.
type Range struct {
	Lo, Hi float64
	Values []Value
	// Span is the share of the plausible range the set covers (for a
	// discrete unknown, the share of its values).
	Span float64
}

// ArmPrediction is a predicted arm's conditions over the acceptable set.
type ArmPrediction struct {
	Arm        string
	Conditions []ConditionShare
}

// ConditionShare is one condition's share of acceptable points × seeds.
type ConditionShare struct {
	Name    string
	Met, Of int
	Share   float64
	Verdict string
	// FlipsAt is where the condition turns over the set (nil when it does
	// not turn: met everywhere or nowhere).
	FlipsAt *Flip
}

// Flip is the unknown that best separates the points where a condition
// is met from those where it is not: met below (or above) Value, or at
// the listed Values of a discrete unknown; Agreement is the share of
// points × seeds the split classifies right, Baseline the share no split
// needs (all met, or all not).
type Flip struct {
	Unknown             string
	Value               float64
	MetAbove            bool
	MetAt               []string
	Agreement, Baseline float64
}

// FlipDecides is the agreement below which no unknown decides a split
// verdict: the seed moves it more than any unknown does.
const FlipDecides = 0.8

// Decides reports whether the unknown decides the verdict: its split is
// right for at least FlipDecides of points × seeds, and for more than
// calling every one alike would be.
func (f Flip) Decides() bool { return f.Agreement >= FlipDecides && f.Agreement > f.Baseline+1e-12 }

// Finish assembles the ensemble from stage 1's canonical points, the plan
// and stage 2's figures by job index.
func (c *EnsembleConfig) Finish(pts []EnsemblePoint, pl Plan, figs map[int]map[string]float64, trials int) (*Ensemble, error) {
	for j := range pl.Jobs {
		if _, ok := figs[j]; !ok {
			return nil, fmt.Errorf("stage 2's trial %d of %d is missing", j+1, len(pl.Jobs))
		}
	}
	en := &Ensemble{Config: c, Points: pts, Plan: pl, Trials: trials}
	byCell := make([][]investigation.Trial, len(pl.Cells))
	for j, pj := range pl.Jobs {
		byCell[pj.Cell] = append(byCell[pj.Cell], figs[j])
	}
	cellOf := map[string]int{}
	for i, cell := range pl.Cells {
		cellOf[cell.Key] = i
	}
	en.ranges()
	en.Fits = make([]int, len(c.Observations))
	for _, i := range pl.Set.Points {
		for o, obs := range c.Observations {
			if obs.Matches(pts[i].Res[o]) {
				en.Fits[o]++
			}
		}
	}
	if pl.Set.Best >= 0 && pts[pl.Set.Best].Feasible {
		en.sensitivity(byCell, cellOf)
	}
	for _, arm := range c.Predicted {
		ap := ArmPrediction{Arm: arm.Name}
		for _, cond := range c.Conditions {
			cs := ConditionShare{Name: cond.Name}
			var outcomes []pointOutcome
			for _, i := range pl.Predict {
				trials := byCell[cellOf["predict/"+cellKey(arm.Name, arm, pts[i].Values, c.Space)]]
				po := pointOutcome{point: i}
				for _, t := range trials {
					met, _ := cond.Met([]investigation.Trial{t})
					if met {
						po.met++
					}
					po.of++
				}
				cs.Met += po.met
				cs.Of += po.of
				outcomes = append(outcomes, po)
			}
			if cs.Of > 0 {
				cs.Share = float64(cs.Met) / float64(cs.Of)
			}
			cs.Verdict = VerdictUncertain
			if cs.Of > 0 {
				cs.Verdict = investigation.Verdict(cs.Share)
			}
			if cs.Met > 0 && cs.Met < cs.Of {
				cs.FlipsAt = c.flip(arm, pts, outcomes)
			}
			ap.Conditions = append(ap.Conditions, cs)
		}
		en.Predictions = append(en.Predictions, ap)
	}
	return en, nil
}

// ranges sets each unknown's range over the acceptable set and the share
// of its plausible range that covers.
func (en *Ensemble) ranges() {
	c, pts := en.Config, en.Points
	en.Ranges = make([]Range, len(c.Space))
	for u, d := range c.Space {
		r := Range{Lo: math.Inf(1), Hi: math.Inf(-1)}
		for _, i := range en.Plan.Set.Points {
			v := pts[i].Values[u]
			if d.Values != nil {
				if !slices.ContainsFunc(r.Values, v.Equal) {
					r.Values = append(r.Values, v)
				}
				continue
			}
			r.Lo, r.Hi = min(r.Lo, v.Num), max(r.Hi, v.Num)
		}
		switch {
		case d.Values != nil:
			// In the dimension's own order.
			slices.SortFunc(r.Values, func(a, b Value) int {
				return slices.IndexFunc(d.Values, a.Equal) - slices.IndexFunc(d.Values, b.Equal)
			})
			if len(d.Values) > 0 {
				r.Span = float64(len(r.Values)) / float64(len(d.Values))
			}
		case r.Lo <= r.Hi:
			r.Span = d.unit(Num(r.Hi)) - d.unit(Num(r.Lo))
		default:
			r.Lo, r.Hi = math.NaN(), math.NaN()
		}
		en.Ranges[u] = r
	}
}

// Unit is how large one tolerance of the observation is in its figure's
// units: the tolerance itself for an absolute observation, else the
// tolerance times the reference its residual is relative to.
func Unit(o Observation) float64 {
	if o.Absolute {
		return o.Tol
	}
	ref := 0.0
	ends := []float64{o.Lo, o.Hi}
	if o.Unavail {
		ends = []float64{1 - o.Hi, 1 - o.Lo}
	}
	for _, e := range ends {
		if !math.IsInf(e, 0) {
			ref = max(ref, math.Abs(e))
		}
	}
	if ref == 0 {
		return o.Tol
	}
	return o.Tol * ref
}

// sensitivity fills the observation × unknown table from the probes'
// trials: each observation's figure at u − step and u + step (an absent
// figure counts as 0: the rate or count that did not occur), in
// tolerances, over the span of the probes, per whole range.
func (en *Ensemble) sensitivity(byCell [][]investigation.Trial, cellOf map[string]int) {
	c, pts, pl := en.Config, en.Points, en.Plan
	best := pts[pl.Set.Best]
	atProbe := func(p Probe) []float64 {
		byRole := map[string][]investigation.Trial{}
		for _, role := range c.Fitted {
			if applies(c.Space[p.Dim], role.Arm) {
				byRole[role.Name] = byCell[cellOf["probe/"+cellKey(role.Name, role.Arm, p.Values, c.Space)]]
			}
		}
		out := make([]float64, len(c.Observations))
		for o, obs := range c.Observations {
			if ts, ok := byRole[obs.Arm]; ok {
				out[o] = obs.Value(ts)
			} else {
				out[o] = best.Sim[o]
			}
		}
		return out
	}
	zero := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	en.Sensitivity = make([][]float64, len(c.Observations))
	for o := range en.Sensitivity {
		en.Sensitivity[o] = make([]float64, len(c.Space))
	}
	for u, d := range c.Space {
		var probes []Probe
		for _, p := range pl.Probes {
			if p.Dim == u {
				probes = append(probes, p)
			}
		}
		if len(probes) == 0 {
			continue
		}
		if d.Values != nil {
			for _, p := range probes {
				sim := atProbe(p)
				for o, obs := range c.Observations {
					s := (zero(sim[o]) - zero(best.Sim[o])) / Unit(obs)
					if math.Abs(s) > math.Abs(en.Sensitivity[o][u]) {
						en.Sensitivity[o][u] = s
					}
				}
			}
			continue
		}
		// The probes' two ends: below and above the best (one of them the
		// best itself at an end of the range).
		lo, hi := d.unit(best.Values[u]), d.unit(best.Values[u])
		simLo, simHi := best.Sim, best.Sim
		for _, p := range probes {
			if p.Unit < lo {
				lo, simLo = p.Unit, atProbe(p)
			} else if p.Unit > hi {
				hi, simHi = p.Unit, atProbe(p)
			}
		}
		if hi <= lo {
			continue
		}
		for o, obs := range c.Observations {
			en.Sensitivity[o][u] = (zero(simHi[o]) - zero(simLo[o])) / Unit(obs) / (hi - lo)
		}
	}
	en.Status = make([]string, len(c.Space))
	for u := range c.Space {
		moved := false
		for o, obs := range c.Observations {
			if obs.Scored() && math.Abs(en.Sensitivity[o][u]) >= FreeBelow {
				moved = true
			}
		}
		switch {
		case !moved:
			en.Status[u] = StatusFree
		case en.Ranges[u].Span <= PinnedSpan || c.Space[u].Values != nil && len(en.Ranges[u].Values) == 1:
			en.Status[u] = StatusPinned
		default:
			en.Status[u] = StatusLoose
		}
	}
}

// pointOutcome is a condition's outcome at one acceptable point: met in
// met of its of trials.
type pointOutcome struct {
	point   int
	met, of int
}

// flip finds the unknown of arm a whose split best separates the trials
// where a condition is met from those where it is not: for a continuous
// unknown a threshold (met above or below it), for a discrete one a set
// of values, with points of the set on both sides. An unknown the arm
// does not see cannot decide its outcome and is never named. Baseline is
// what no split gets right anyway: the larger of the met and the unmet
// share.
func (c *EnsembleConfig) flip(a arms.Arm, pts []EnsemblePoint, outs []pointOutcome) *Flip {
	var total, metAny int
	for _, o := range outs {
		total += o.of
		metAny += o.met
	}
	if total == 0 {
		return nil
	}
	baseline := float64(max(metAny, total-metAny)) / float64(total)
	var best *Flip
	consider := func(f Flip, right int) {
		f.Agreement, f.Baseline = float64(right)/float64(total), baseline
		if best == nil || f.Agreement > best.Agreement+1e-12 {
			best = &f
		}
	}
	for u, d := range c.Space {
		if !applies(d, a) {
			continue
		}
		if d.Values != nil {
			// Every non-empty proper subset of the values met.
			n := len(d.Values)
			if n > 12 {
				continue
			}
			for mask := 1; mask < 1<<n-1; mask++ {
				right, in, out := 0, 0, 0
				for _, o := range outs {
					j := slices.IndexFunc(d.Values, pts[o.point].Values[u].Equal)
					if mask&(1<<j) != 0 {
						right += o.met
						in++
					} else {
						right += o.of - o.met
						out++
					}
				}
				if in == 0 || out == 0 {
					continue // every point on one side: no split
				}
				var at []string
				for j, v := range d.Values {
					if mask&(1<<j) != 0 {
						at = append(at, d.Knob.Label(v))
					}
				}
				consider(Flip{Unknown: d.Knob.Name, MetAt: at}, right)
			}
			continue
		}
		sorted := slices.Clone(outs)
		slices.SortStableFunc(sorted, func(a, b pointOutcome) int {
			return cmpFloat(pts[a.point].Values[u].Num, pts[b.point].Values[u].Num)
		})
		// Split between consecutive distinct values: met above (or below).
		var metBelow, notBelow, metAll, notAll int
		for _, o := range sorted {
			metAll += o.met
			notAll += o.of - o.met
		}
		for k := 0; k+1 < len(sorted); k++ {
			metBelow += sorted[k].met
			notBelow += sorted[k].of - sorted[k].met
			a, b := pts[sorted[k].point].Values[u].Num, pts[sorted[k+1].point].Values[u].Num
			if a == b {
				continue
			}
			at := (a + b) / 2
			consider(Flip{Unknown: d.Knob.Name, Value: at, MetAbove: true}, notBelow+(metAll-metBelow))
			consider(Flip{Unknown: d.Knob.Name, Value: at, MetAbove: false}, metBelow+(notAll-notBelow))
		}
	}
	return best
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
