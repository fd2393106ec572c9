package nightly

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/changepoint"
	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/metric"
)

// Series kinds a change can be found in.
const (
	// Values are the nightly trial values of one arm: every trial of a
	// night counts, and the permutation test moves whole nights.
	Values = "values"
	// Effect is the nightly Hodges-Lehmann shift of an arm against the
	// run's baseline arm: drift of the host or of the base build, which
	// moves both arms alike, cancels in it.
	Effect = "effect"
)

// Directions of a change, from the metric's better direction.
const (
	Regression  = "regression"
	Improvement = "improvement"
	Neutral     = "change" // the metric has no better direction
)

// DetectOptions choose what to look at.
type DetectOptions struct {
	// Metrics to examine (default: every metric of the registry with a
	// better direction that the history holds).
	Metrics []string
	// Arms to examine (default: every arm of the selected nights).
	Arms []string
	// Effect adds each arm's effect series against the baseline arm.
	Effect bool
	// Recent is how many of the newest nights count as "now" (default 1):
	// a regression starting there makes the verdict fail.
	Recent int
	Filter history.Filter
	// ChangePoint tunes E-Divisive (defaults as MongoDB's: p 0.05, 100
	// permutations, a fixed seed, segments of at least 2 nights).
	ChangePoint changepoint.Options
	// Tonight tunes the per-night check of the newest night.
	Tonight TonightOptions
}

// Change is one change point of one series.
type Change struct {
	Check    string `json:"check"` // CheckChangePoint
	Kind     string `json:"kind"`  // Values or Effect
	Metric   string `json:"metric"`
	Arm      string `json:"arm"`
	Baseline string `json:"baseline,omitempty"` // the arm an effect is against
	// Night is the first night after the change, numbered as the history
	// lists its nights (1-based); RunID is that night's run.
	Night   int       `json:"night"`
	RunID   string    `json:"runId"`
	Started time.Time `json:"started"`
	// Before and After are the medians of the segments on either side
	// (all trial values of their nights, or their nightly effects).
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	Relative float64 `json:"relative"` // (After − Before) / |Before|; NaN when Before is 0
	P        float64 `json:"p"`
	// Direction is Regression, Improvement or Neutral.
	Direction string `json:"direction"`
	// Recent: the change starts in the newest DetectOptions.Recent nights.
	Recent bool `json:"recent"`
}

// Result is what detection found: E-Divisive's change points over every
// night, the nights whose definitions changed (change points by
// construction, never regressions), and the per-night check's findings on
// the newest night.
type Result struct {
	Nights        int            `json:"nights"`
	Series        int            `json:"series"` // series examined
	Changes       []Change       `json:"changes"`
	Redefinitions []Redefinition `json:"redefinitions"`
	Tonight       Tonight        `json:"tonight"`
}

// Regressed reports whether the newest night fails: tonight's check found
// a regression, or a recent change point is one.
func (r Result) Regressed() bool {
	return len(r.Tonight.Findings) > 0 || r.RecentChangeRegressed()
}

// NoData reports whether the newest night lacks the data to be judged: an
// arm it ran has no valid trial (a run that died, or whose trials were
// all invalid). Such a night never passes.
func (r Result) NoData() bool { return len(r.Tonight.NoData) > 0 }

// RecentChangeRegressed reports whether a recent change point is a
// regression (E-Divisive's part of the verdict).
func (r Result) RecentChangeRegressed() bool {
	return slices.ContainsFunc(r.Changes, func(c Change) bool { return c.Recent && c.Direction == Regression })
}

// Detect finds the change points of the selected series of a history,
// each series cut where what it compares changed (Redefinition), and runs
// tonight's check on the newest night.
func Detect(ctx context.Context, st history.Store, opts DetectOptions) (Result, error) {
	if opts.Recent <= 0 {
		opts.Recent = 1
	}
	runs, err := st.List(ctx, opts.Filter)
	if err != nil {
		return Result{}, err
	}
	res := Result{Nights: len(runs), Redefinitions: redefinitions(runs)}
	defs := newDefinitions(runs)
	byID := map[string]history.RunSummary{}
	number := map[string]int{} // run id → its night's number (1-based)
	for i, r := range runs {
		byID[r.ID], number[r.ID] = r, i+1
	}
	topts := opts.Tonight.withDefaults()
	var cands []Finding
	newestRun := ""
	reasons := map[string]bool{}
	if len(runs) > 0 && !topts.Off {
		newest := runs[len(runs)-1]
		newestRun = newest.ID
		res.Tonight = Tonight{RunID: newestRun, Night: len(runs), Alpha: topts.Alpha, MinShift: topts.MinShift, BaselineNights: topts.BaselineNights}
		if i := slices.IndexFunc(res.Redefinitions, func(r Redefinition) bool { return r.RunID == newestRun }); i >= 0 {
			res.Tonight.Redefined = res.Redefinitions[i].Describe()
		}
		if res.Tonight.NoData, err = missingArms(ctx, st, opts); err != nil {
			return Result{}, err
		}
	}
	arms := opts.Arms
	if len(arms) == 0 {
		for _, r := range runs {
			for _, a := range r.Arms {
				if !slices.Contains(arms, a) {
					arms = append(arms, a)
				}
			}
		}
	}
	metrics := opts.Metrics
	if len(metrics) == 0 {
		for _, m := range metric.Registry {
			if m.Better != 0 {
				metrics = append(metrics, m.Name)
			}
		}
	}
	for _, m := range metrics {
		for _, arm := range arms {
			pts, err := st.Series(ctx, m, arm, opts.Filter)
			if err != nil {
				return Result{}, err
			}
			var nights [][]float64
			var ids []string
			var at []time.Time
			for _, p := range pts {
				if _, ok := byID[p.RunID]; ok && len(p.Values) > 0 {
					nights, ids, at = append(nights, p.Values), append(ids, p.RunID), append(at, p.Started)
				}
			}
			if len(nights) > 0 {
				seg := segment(ids, defs, arm, false)
				if len(nights) >= 2 {
					res.Series++
				}
				segCPs := make([][]int, len(seg.at))
				for sg := range seg.at {
					pi := seg.points(sg)
					if len(pi) < 2 {
						continue
					}
					cps, err := changepoint.DetectGroups(pick(nights, pi), opts.ChangePoint)
					if err != nil {
						return Result{}, fmt.Errorf("%s of %s: %w", m, arm, err)
					}
					for _, cp := range cps {
						segCPs[sg] = append(segCPs[sg], pi[cp.Index])
					}
					res.Changes = append(res.Changes, changes(Values, m, arm, "", cps, pick(nights, pi), pick(ids, pi), pick(at, pi), pi, len(nights), opts.Recent, number)...)
				}
				// Tonight's check only for an arm the newest night ran.
				if newestRun != "" && ids[len(ids)-1] == newestRun {
					f, ok, why := tonightOf(m, arm, nights, ids, at, seg, segCPs, topts.BaselineNights)
					switch {
					case ok:
						f.Night = res.Tonight.Night
						cands = append(cands, f)
					case why != "":
						res.Tonight.Untested++
						reasons[why] = true
					}
				}
			}
			if !opts.Effect {
				continue
			}
			eff, err := st.Effects(ctx, m, arm, opts.Filter)
			if err != nil {
				return Result{}, err
			}
			var groups [][]float64
			ids, at = nil, nil
			base := ""
			for _, e := range eff {
				if _, ok := byID[e.RunID]; !ok {
					continue
				}
				groups = append(groups, []float64{e.Shift})
				ids, at, base = append(ids, e.RunID), append(at, e.Started), e.Baseline
			}
			if len(groups) < 2 {
				continue
			}
			res.Series++
			seg := segment(ids, defs, arm, true)
			for sg := range seg.at {
				pi := seg.points(sg)
				if len(pi) < 2 {
					continue
				}
				var shifts []float64
				for _, i := range pi {
					shifts = append(shifts, groups[i][0])
				}
				cps, err := changepoint.Detect(shifts, opts.ChangePoint)
				if err != nil {
					return Result{}, fmt.Errorf("effect of %s on %s: %w", arm, m, err)
				}
				res.Changes = append(res.Changes, changes(Effect, m, arm, base, cps, pick(groups, pi), pick(ids, pi), pick(at, pi), pi, len(groups), opts.Recent, number)...)
			}
		}
	}
	res.Tonight.Tested = len(cands)
	res.Tonight.Findings = holm(cands, topts.Alpha, topts.MinShift)
	res.Tonight.Unbased = slices.Sorted(maps.Keys(reasons))
	return res, nil
}

// missingArms are the arms the newest night ran (of those examined) with
// no valid trial; every one when the night has no trial at all.
func missingArms(ctx context.Context, st history.Store, opts DetectOptions) ([]string, error) {
	f := opts.Filter
	f.Last = 1
	runs, err := st.Runs(ctx, f)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	newest := runs[len(runs)-1]
	trials := map[string]int{}
	for _, t := range newest.Trials {
		trials[t.Arm]++
	}
	var out []string
	for _, a := range newest.Arms {
		if trials[a.Name] == 0 && (len(opts.Arms) == 0 || slices.Contains(opts.Arms, a.Name)) {
			out = append(out, a.Name)
		}
	}
	if len(newest.Trials) == 0 && len(out) == 0 {
		out = append(out, "(every arm: the night has no trial)")
	}
	return out, nil
}

// pick is xs at the indexes given.
func pick[T any](xs []T, at []int) []T {
	out := make([]T, len(at))
	for i, j := range at {
		out[i] = xs[j]
	}
	return out
}

// changes describes each change point of one segment by the parts of the
// segment around it. The segment's points are the series' points at
// (of total), which say which nights are the newest recent ones.
func changes(kind, m, arm, base string, cps []changepoint.ChangePoint, nights [][]float64, ids []string, at []time.Time,
	points []int, total, recent int, number map[string]int) []Change {
	bounds := []int{0}
	for _, cp := range cps {
		bounds = append(bounds, cp.Index)
	}
	bounds = append(bounds, len(nights))
	better := metric.Lookup(m).Better
	var out []Change
	for i, cp := range cps {
		before := metric.Median(flatten(nights[bounds[i]:bounds[i+1]]))
		after := metric.Median(flatten(nights[bounds[i+1]:bounds[i+2]]))
		c := Change{Check: CheckChangePoint, Kind: kind, Metric: m, Arm: arm, Baseline: base, Night: number[ids[cp.Index]], RunID: ids[cp.Index], Started: at[cp.Index],
			Before: before, After: after, Relative: math.NaN(), P: cp.PValue, Direction: Neutral, Recent: points[cp.Index] >= total-recent}
		if before != 0 {
			c.Relative = (after - before) / math.Abs(before)
		}
		switch d := (after - before) * float64(better); {
		case better == 0:
		case d < 0:
			c.Direction = Regression
		case d > 0:
			c.Direction = Improvement
		}
		out = append(out, c)
	}
	return out
}

func flatten(nights [][]float64) []float64 {
	var out []float64
	for _, n := range nights {
		out = append(out, n...)
	}
	return out
}
