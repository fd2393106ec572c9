package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// EnsembleOut is the ensemble as fit.json and --format json have it.
type EnsembleOut struct {
	Schema    string `json:"schema"`
	Simulated bool   `json:"simulated"`
	Note      string `json:"note"`
	// Source says where the observations came from.
	Source  string  `json:"observed_from"`
	Profile string  `json:"profile"`
	Rule    RuleOut `json:"rule"`
	// Unknowns are the searched unknowns with their plausible ranges.
	Unknowns     []UnknownOut     `json:"unknowns"`
	Observations []ObservationOut `json:"observations"`
	// Acceptable are the acceptable points, best first.
	Acceptable []AcceptableOut `json:"acceptable"`
	// Ranges are each unknown's span over the acceptable set: [min, max]
	// for a number, the values present for a discrete unknown.
	Ranges map[string][]any `json:"ranges"`
	// Identifiability is each unknown's status: pinned, loose or free.
	Identifiability map[string]string `json:"identifiability"`
	// Sensitivity is, by observation and unknown, the tolerances the
	// observation moves over the unknown's whole range at the best point.
	Sensitivity map[string]map[string]float64 `json:"sensitivity"`
	// Predictions are, by arm and condition, the share of acceptable
	// points × seeds where it is met.
	Predictions map[string]map[string]PredictionOut `json:"predictions"`
	// PredictedAt is how many acceptable points the arms ran at, each over
	// PredictSeeds seeds.
	PredictedAt  int     `json:"predicted_at"`
	PredictSeeds int     `json:"predict_seeds"`
	Threshold    float64 `json:"predicted_share"`
	Points       int     `json:"points"`
	Trials       int     `json:"trials"`
	WallSeconds  float64 `json:"wall_seconds"`
}

// RuleOut is the acceptable set's rule as applied.
type RuleOut struct {
	WithinTolerance bool    `json:"within_tolerance"`
	Margin          float64 `json:"margin,omitempty"`
	MarginLevel     float64 `json:"margin_level,omitempty"`
	// Birge is the margin's scale: the best objective per scored
	// observation (the Birge ratio squared), at least 1.
	Birge         float64 `json:"birge,omitempty"`
	BestObjective float64 `json:"best_objective"`
	// Misfits are the scored observations some acceptable point misses:
	// each prediction is conditional on them.
	Misfits []string `json:"misfits,omitempty"`
	Text    string   `json:"text"`
}

// UnknownOut is a searched unknown.
type UnknownOut struct {
	Name   string `json:"name"`
	Lo     any    `json:"lo,omitempty"`
	Hi     any    `json:"hi,omitempty"`
	Log    bool   `json:"log,omitempty"`
	Values []any  `json:"values,omitempty"`
	Why    string `json:"why,omitempty"`
}

// ObservationOut is an observation with how the set meets it.
type ObservationOut struct {
	Name     string  `json:"name"`
	Arm      string  `json:"arm"`
	Observed string  `json:"observed"`
	Tol      float64 `json:"tolerance"`
	Scored   bool    `json:"scored"`
	// ByConstruction says why an unscored observation holds at every
	// point.
	ByConstruction string `json:"by_construction,omitempty"`
	// Best is the best point's figure (null when absent); Within the
	// acceptable points within tolerance.
	Best   *float64 `json:"best"`
	Within int      `json:"within_tolerance"`
}

// AcceptableOut is an acceptable point.
type AcceptableOut struct {
	Params    map[string]any     `json:"params"`
	Objective float64            `json:"objective"`
	Residuals map[string]float64 `json:"residuals"`
}

// PredictionOut is one condition of a predicted arm.
type PredictionOut struct {
	Share   float64  `json:"share"`
	Met     int      `json:"met"`
	Of      int      `json:"of"`
	Verdict string   `json:"verdict"`
	FlipsAt *FlipOut `json:"flips_at"`
}

// FlipOut is where a condition turns.
type FlipOut struct {
	Unknown   string   `json:"unknown"`
	Value     *float64 `json:"value,omitempty"`
	MetAbove  *bool    `json:"met_above,omitempty"`
	MetAt     []string `json:"met_at,omitempty"`
	Agreement float64  `json:"agreement"`
	// Decides says whether the unknown decides the verdict (agreement at
	// least FlipDecides) or the seed moves it more.
	Decides bool   `json:"decides"`
	Text    string `json:"text"`
}

// Out is the ensemble in fit.json's form.
func (en *Ensemble) Out(spec EnsembleSpec, took time.Duration) EnsembleOut {
	c, pts, set := en.Config, en.Points, en.Plan.Set
	out := EnsembleOut{Schema: EnsembleSchema, Simulated: true, Note: Note, Source: spec.Source, Profile: spec.Profile,
		Ranges: map[string][]any{}, Identifiability: map[string]string{}, Sensitivity: map[string]map[string]float64{},
		Predictions: map[string]map[string]PredictionOut{}, PredictedAt: len(en.Plan.Predict), PredictSeeds: c.PredictSeeds,
		Threshold: PredictedShare, Points: len(pts), Trials: en.Trials, WallSeconds: took.Seconds()}
	out.Rule = en.rule()
	for _, d := range c.Space {
		u := UnknownOut{Name: d.Knob.Name, Log: d.Log, Why: d.Why}
		if d.Values != nil {
			for _, v := range d.Values {
				u.Values = append(u.Values, v.Any())
			}
		} else {
			u.Lo, u.Hi = d.Lo, d.Hi
		}
		out.Unknowns = append(out.Unknowns, u)
	}
	for o, obs := range c.Observations {
		oo := ObservationOut{Name: obs.Name, Arm: obs.Arm, Observed: obs.Observed, Tol: obs.Tol, Scored: obs.Scored(), ByConstruction: obs.ByConstruction,
			Within: en.Fits[o]}
		if set.Best >= 0 && !math.IsNaN(pts[set.Best].Sim[o]) {
			v := pts[set.Best].Sim[o]
			oo.Best = &v
		}
		out.Observations = append(out.Observations, oo)
	}
	for _, i := range set.Points {
		a := AcceptableOut{Params: map[string]any{}, Objective: pts[i].Objective, Residuals: map[string]float64{}}
		for u, d := range c.Space {
			a.Params[d.Knob.Name] = pts[i].Values[u].Any()
		}
		for o, obs := range c.Observations {
			a.Residuals[obs.Name] = pts[i].Res[o]
		}
		out.Acceptable = append(out.Acceptable, a)
	}
	for u, d := range c.Space {
		r := en.Ranges[u]
		if d.Values != nil {
			vs := []any{}
			for _, v := range r.Values {
				vs = append(vs, v.Any())
			}
			out.Ranges[d.Knob.Name] = vs
		} else if !math.IsNaN(r.Lo) {
			out.Ranges[d.Knob.Name] = []any{r.Lo, r.Hi}
		}
		if en.Status != nil {
			out.Identifiability[d.Knob.Name] = en.Status[u]
		}
	}
	for o, obs := range c.Observations {
		if en.Sensitivity == nil {
			break
		}
		row := map[string]float64{}
		for u, d := range c.Space {
			row[d.Knob.Name] = math.Round(en.Sensitivity[o][u]*1000) / 1000
		}
		out.Sensitivity[obs.Name] = row
	}
	for _, ap := range en.Predictions {
		conds := map[string]PredictionOut{}
		for _, cs := range ap.Conditions {
			po := PredictionOut{Share: cs.Share, Met: cs.Met, Of: cs.Of, Verdict: cs.Verdict}
			if f := cs.FlipsAt; f != nil {
				fo := &FlipOut{Unknown: f.Unknown, MetAt: f.MetAt, Agreement: f.Agreement, Decides: f.Decides(), Text: en.flipText(*f)}
				if f.MetAt == nil {
					v, above := f.Value, f.MetAbove
					fo.Value, fo.MetAbove = &v, &above
				}
				po.FlipsAt = fo
			}
			conds[cs.Name] = po
		}
		out.Predictions[ap.Arm] = conds
	}
	return out
}

// rule is the acceptable set's rule in words.
func (en *Ensemble) rule() RuleOut {
	c, pts, set := en.Config, en.Points, en.Plan.Set
	r := RuleOut{WithinTolerance: set.WithinTolerance}
	if set.Best < 0 {
		r.Text = "no point was evaluated"
		return r
	}
	r.BestObjective = pts[set.Best].Objective
	if !pts[set.Best].Feasible {
		r.Text = "no point meets the constraints (" + constraintNames(c) + "): the acceptable set is empty and nothing is predicted"
		return r
	}
	for o, obs := range c.Observations {
		if obs.Scored() && en.Fits[o] < len(set.Points) {
			r.Misfits = append(r.Misfits, obs.Name)
		}
	}
	if set.WithinTolerance {
		r.Text = fmt.Sprintf("%d points, each within every scored observation's tolerance", len(set.Points))
		return r
	}
	r.Margin, r.MarginLevel, r.Birge = set.Margin, MarginLevel, c.Birge(r.BestObjective)
	r.Text = fmt.Sprintf("no point is within every tolerance: the set is the %d points whose objective is within %.2f of the best, %.2f (χ² at %.0f %% with %d degrees of freedom, one per unknown, %.3g, times the best's objective per scored observation, %.3g); every prediction is conditional on the observations the set misses",
		len(set.Points), set.Margin, r.BestObjective, 100*MarginLevel, len(c.Space), chi2Quantile(MarginLevel, len(c.Space)), r.Birge)
	return r
}

func constraintNames(c *EnsembleConfig) string {
	var s []string
	for _, o := range c.Constraints {
		s = append(s, o.Name+" "+o.Observed)
	}
	return strings.Join(s, "; ")
}

// flipText says where a condition turns, and whether the unknown decides
// it.
func (en *Ensemble) flipText(f Flip) string {
	i := slices.IndexFunc(en.Config.Space, func(d Dim) bool { return d.Knob.Name == f.Unknown })
	var where string
	switch {
	case f.MetAt != nil:
		where = fmt.Sprintf("met at %s = %s", f.Unknown, strings.Join(f.MetAt, " or "))
	case f.MetAbove:
		where = fmt.Sprintf("met above %s = %s", f.Unknown, en.Config.Space[i].Knob.Label(Num(roundTo(f.Value, 3))))
	default:
		where = fmt.Sprintf("met below %s = %s", f.Unknown, en.Config.Space[i].Knob.Label(Num(roundTo(f.Value, 3))))
	}
	if !f.Decides() {
		return fmt.Sprintf("no unknown decides it: the best split (%s) is right for %.0f %% of points × seeds, calling them all alike for %.0f %%; the seed moves it more", where, 100*f.Agreement, 100*f.Baseline)
	}
	return fmt.Sprintf("decided by %s: %s (right for %.0f %% of points × seeds)", f.Unknown, where, 100*f.Agreement)
}

// roundTo rounds to n significant figures.
func roundTo(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// JSON is fit.json's bytes.
func (o EnsembleOut) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// EnsembleReport is how an ensemble was run, for its text: the lines that
// name a command are the caller's, so that this package names no flags.
type EnsembleReport struct {
	Title string
	Took  time.Duration
	// Next, when set, is printed after the best point's settings: how to
	// go on from it.
	Next string
}

// WriteEnsemble prints the ensemble: the method, the acceptable set and
// its rule, each unknown's range and status, each observation's fit, the
// sensitivity table, each predicted arm's conditions as shares, and the
// verdict.
func WriteEnsemble(w io.Writer, en *Ensemble, spec EnsembleSpec, rep EnsembleReport) {
	c, pts, set := en.Config, en.Points, en.Plan.Set
	out := en.Out(spec, rep.Took)
	fmt.Fprintf(w, "%s\n\n", rep.Title)
	cont, disc := c.continuous()
	var variants []string
	for _, i := range disc {
		variants = append(variants, c.Space[i].Knob.Name)
	}
	var roles []string
	for _, r := range c.Fitted {
		roles = append(roles, r.Name)
	}
	fmt.Fprintf(w, "Observations: %s.\n", spec.Source)
	fmt.Fprintf(w, "Method: %d unknowns (%d continuous, %d discrete); a Latin hypercube of %d samples", len(c.Space), len(cont), len(disc), c.Samples)
	if len(disc) > 0 {
		fmt.Fprintf(w, ", each under all %d variants (%s)", len(c.variants()), strings.Join(variants, " × "))
	}
	fmt.Fprintf(w, ", and the base setting, in %d chains; each chain then %d steps of a (1+2) evolution strategy from its best point and up to %d probes around its acceptable points. Arms %s run on seeds %d–%d at every point (profile %s). %d points, %d trials, %v wall.\n\n",
		c.Starts, c.Steps, c.Explore, strings.Join(roles, ", "), c.Seed, c.Seed+uint64(c.FitSeeds)-1, spec.Profile, len(pts), en.Trials, rep.Took.Round(time.Second))

	fmt.Fprintf(w, "Acceptable set: %s.\n", out.Rule.Text)
	if len(out.Rule.Misfits) > 0 {
		fmt.Fprintln(w, "Conditional on (scored observations some acceptable point misses):")
		for o, obs := range c.Observations {
			if slices.Contains(out.Rule.Misfits, obs.Name) {
				fmt.Fprintf(w, "  - %s: within tolerance at %d of %d acceptable points\n", obs.Name, en.Fits[o], len(set.Points))
			}
		}
	}
	if set.Best < 0 || !pts[set.Best].Feasible {
		return
	}
	best := pts[set.Best]

	fmt.Fprintf(w, "\nUnknowns over the acceptable set (pinned: moves an observation by ≥ %.2g tolerance over its range and the set spans ≤ %.0f %% of it; loose: moves one, the set spans more; free: moves none):\n",
		FreeBelow, 100*PinnedSpan)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  unknown\tplausible range\tacceptable range\tspan\tbest point\tstatus\t")
	for u, d := range c.Space {
		r := en.Ranges[u]
		var span string
		if d.Values != nil {
			var vs []string
			for _, v := range r.Values {
				vs = append(vs, d.Knob.Label(v))
			}
			span = strings.Join(vs, " | ")
		} else {
			span = d.Knob.Label(Num(roundTo(r.Lo, 3))) + " – " + d.Knob.Label(Num(roundTo(r.Hi, 3)))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.0f %%\t%s\t%s\t\n", d.Knob.Name, dimRange(d), span, 100*r.Span, d.Knob.Label(roundValue(best.Values[u])), en.Status[u])
	}
	tw.Flush()

	fmt.Fprintf(w, "\nObservations (the best point's figure, objective %.2f; how many acceptable points are within tolerance):\n", best.Objective)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  observation\tobserved\ttolerance\tbest point\tresidual\twithin tolerance\t")
	for o, obs := range c.Observations {
		within := fmt.Sprintf("%d of %d", en.Fits[o], len(set.Points))
		if !obs.Scored() {
			within = "not scored: true by construction"
		}
		fmt.Fprintf(tw, "  %s\t%s\t±%.3g\t%s\t%+.2f\t%s\t\n", obs.Name, obs.Observed, obs.Tol, obs.FormatValue(best.Sim[o]), best.Res[o], within)
	}
	for o, obs := range c.Constraints {
		fmt.Fprintf(tw, "  %s\t%s\t(constraint)\t%s\t\tevery acceptable point\t\n", obs.Name, obs.Observed, obs.FormatValue(best.ConstraintSim[o]))
	}
	tw.Flush()
	for _, obs := range c.Observations {
		if !obs.Scored() {
			fmt.Fprintf(w, "  (%s: shown, not scored — %s.)\n", obs.Name, obs.ByConstruction)
		}
	}

	fmt.Fprintf(w, "\nSensitivity at the best point: tolerances each observation moves over an unknown's whole range (from probes at ±%.0f %% of the range; a discrete unknown: the largest move to another value; · below %.2g):\n",
		100*SensitivityStep, FreeBelow)
	tw = tabwriter.NewWriter(w, 2, 4, 1, ' ', tabwriter.AlignRight)
	head := "  observation\t"
	for u := range c.Space {
		head += fmt.Sprintf("[%d]\t", u+1)
	}
	fmt.Fprintln(tw, head)
	for o, obs := range c.Observations {
		line := "  " + obs.Name + "\t"
		for u := range c.Space {
			s := en.Sensitivity[o][u]
			if math.Abs(s) < FreeBelow {
				line += "·\t"
			} else {
				line += strconv.FormatFloat(roundTo(s, 2), 'g', -1, 64) + "\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for u, d := range c.Space {
		fmt.Fprintf(w, "  [%d] %s (%s)\n", u+1, d.Knob.Name, en.Status[u])
	}

	if len(en.Predictions) > 0 {
		fmt.Fprintf(w, "\nPredictions at %d acceptable points × %d seeds (a prediction, never fitted; \"%s\" when met in ≥ %.0f %%, \"%s\" in ≤ %.0f %%, else \"%s\"):\n",
			len(en.Plan.Predict), c.PredictSeeds, VerdictMet, 100*PredictedShare, VerdictNotMet, 100*(1-PredictedShare), VerdictUncertain)
		if len(en.Plan.Predict) < len(set.Points) {
			fmt.Fprintf(w, "  (%d of the %d acceptable points: the best and then, one at a time, the farthest from those taken)\n", len(en.Plan.Predict), len(set.Points))
		}
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, ap := range en.Predictions {
			for i, cs := range ap.Conditions {
				arm := ""
				if i == 0 {
					arm = ap.Arm
				}
				line := fmt.Sprintf("  %s\t%s\t%.0f %% (%d of %d)\t%s\t", arm, cs.Name, 100*cs.Share, cs.Met, cs.Of, cs.Verdict)
				if cs.FlipsAt != nil {
					line += en.flipText(*cs.FlipsAt)
				}
				fmt.Fprintln(tw, line+"\t")
			}
		}
		tw.Flush()
	}
	var sets []string
	for _, s := range en.BestSettings() {
		sets = append(sets, "--set "+s)
	}
	if rep.Next != "" {
		fmt.Fprintf(w, "\n%s %s\n", rep.Next, strings.Join(sets, " "))
	}
	fmt.Fprintln(w)
	if len(out.Rule.Misfits) > 0 {
		fmt.Fprintf(w, "Verdict: the model meets the observations only in part; every prediction above is conditional on the %d misfit(s) named.\n", len(out.Rule.Misfits))
	} else {
		fmt.Fprintln(w, "Verdict: every acceptable point is within every scored observation's tolerance; the shares above are the predictions those observations allow.")
	}
}

// roundValue rounds a number value to 3 significant figures for a label.
func roundValue(v Value) Value {
	if v.IsStr {
		return v
	}
	return Num(roundTo(v.Num, 3))
}

// BestSettings are the best point's values as settings a sweep fixes
// (ParseSet's NAME=VALUE), in Space order, with host.dirtyBackgroundRatio
// held at half host.dirtyRatio as the host model pairs them.
func (en *Ensemble) BestSettings() []string {
	if en.Plan.Set.Best < 0 {
		return nil
	}
	var out []string
	for i, d := range en.Config.Space {
		v := en.Points[en.Plan.Set.Best].Values[i]
		text := v.Str
		if !v.IsStr {
			text = strconv.FormatFloat(v.Num, 'g', 6, 64)
			if d.Knob.Integer || d.Knob.Unit == UnitBytes {
				text = strconv.FormatFloat(math.Round(v.Num), 'f', 0, 64)
			}
		}
		out = append(out, d.Knob.Name+"="+text)
		if d.Knob.Name == "host.dirtyRatio" {
			out = append(out, "host.dirtyBackgroundRatio="+strconv.FormatFloat(v.Num/2, 'g', 6, 64))
		}
	}
	return out
}

// dimRange is a dimension's plausible values or range, as labels.
func dimRange(d Dim) string {
	if d.Values != nil {
		var vs []string
		for _, v := range d.Values {
			vs = append(vs, d.Knob.Label(v))
		}
		return strings.Join(vs, " | ")
	}
	s := d.Knob.Label(Num(d.Lo)) + " – " + d.Knob.Label(Num(d.Hi))
	if d.Log {
		s += " (log)"
	}
	return s
}
