package sweep

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/mathx"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// The ensemble is every fit the observations allow, and what each arm the
// fit did not use does across them. Fit returns one best point; the
// observations do not determine one. The ensemble:
//
//  1. searches (stage 1, by chain): the base setting (an earlier search's
//     nearest point) in every chain, and a Latin hypercube over the
//     continuous unknowns, each sample under every combination of the
//     discrete ones (the build and actor variants), dealt to Starts
//     chains; each chain then runs a (1+2) evolution strategy from its best
//     point and explores around its best points until it holds its share
//     of MinAcceptable. Chains are independent: a chain's points depend on
//     its own trials only, so chains shard across hosts
//     (EnsembleSpec.RunSearch) and merge to what one host finds.
//  2. keeps the acceptable set (Acceptable): every point within every
//     scored observation's tolerance; when no point is, every point within
//     Margin of the best objective, each prediction then conditional on
//     the observations the set misses.
//  3. runs (stage 2, Plan: a flat list of trials) the sensitivity probes
//     at the best point and each predicted arm at the acceptable points
//     over PredictSeeds seeds; the list shards by index
//     (SearchFile.RunPredict).
//  4. reports (Finish) each unknown's range over the set, which
//     observations it moves, and each predicted arm's acceptance
//     conditions as shares of points × seeds, with the unknown that
//     decides a split verdict.

// PredictedShare is the share of acceptable points × seeds at or above
// which a condition is "predicted" (met), and 1 − it the share at or below
// which it is predicted not met; between the two it is "uncertain"
// (package investigation's rule, which the report's gates quote).
const PredictedShare = investigation.PredictedShare

// Verdicts of a predicted condition.
const (
	VerdictMet       = investigation.Predicted
	VerdictNotMet    = investigation.PredictedNotMet
	VerdictUncertain = investigation.PredictionUnsure
)

// MarginLevel is the level of the χ² margin of the acceptable set when no
// point is within every tolerance: reading each residual ÷ tolerance as a
// standard score, the points whose objective is within χ²(MarginLevel, k)
// of the best one (k the searched unknowns) are the likelihood-ratio
// region of the k unknowns at that level. A best objective above the
// number of scored observations n says the tolerances are too tight for
// the model by √(best ÷ n) (the Birge ratio, by which the Particle Data
// Group scales the errors of measurements that disagree): the margin is
// scaled by best ÷ n, so a model that fits worse leaves more settings
// standing, never fewer.
const MarginLevel = 0.95

// SensitivityStep is the half-width, in shares of an unknown's plausible
// range, of the sensitivity probes at the best point (u ± SensitivityStep,
// clipped to the range).
const SensitivityStep = 0.25

// InitialStep is a chain's first evolution step and ExploreStep its
// exploration's, each the standard deviation of a normal move of every
// continuous unknown, in shares of its range.
const (
	InitialStep = 0.1
	ExploreStep = 0.08
)

// FreeBelow is the sensitivity below which an unknown moves no
// observation: less than this many tolerances over its whole range.
const FreeBelow = 0.25

// PinnedSpan is the share of its plausible range at or below which the
// acceptable set pins an unknown (one value, for a discrete one).
const PinnedSpan = 0.5

// Identifiability statuses of an unknown.
const (
	StatusPinned = "pinned" // moves observations, and the set spans at most PinnedSpan of its range
	StatusLoose  = "loose"  // moves observations, but the set spans more of its range
	StatusFree   = "free"   // no observation moves it
)

// Role is a fitted arm under the name its observations give it
// (Observation.Arm).
type Role struct {
	Name string
	Arm  arms.Arm
}

// EnsembleConfig is an ensemble: the setting, the arms, the observations,
// the space and the budget.
type EnsembleConfig struct {
	// Base is the setting every point starts from.
	Base virtual.Config
	// Fitted are the arms the observations are of; Predicted the arms
	// predicted at every acceptable point.
	Fitted    []Role
	Predicted []arms.Arm
	// Observations are the fit's targets; Constraints are observations
	// every acceptable point meets exactly (residual 0), such as "D never
	// failed over".
	Observations []Observation
	Constraints  []Observation
	// Conditions are each predicted arm's acceptance conditions.
	Conditions []investigation.Condition
	Space      []Dim
	Seed       uint64
	// FitSeeds are each fitted arm's trials at a point, PredictSeeds each
	// predicted arm's at an acceptable point.
	FitSeeds, PredictSeeds int
	// Samples is the hypercube's size over the continuous unknowns (each
	// sample runs under every combination of the discrete ones); Starts
	// the chains; Steps each chain's evolution steps; MinAcceptable the
	// acceptable points the chains explore for; Explore each chain's most
	// exploration probes; PredictPoints the most acceptable points the
	// arms are predicted at (a spread subset of a larger set).
	Samples, Starts, Steps, MinAcceptable, Explore, PredictPoints int
	Parallel                                                      int
	Progress                                                      func(stage string, done, total int)
}

// DefaultEnsemble is the default budget: about a thousand default-profile
// trials on the investigation's space (docs/benchmarks.md has its time).
func DefaultEnsemble() EnsembleConfig {
	c := EnsembleConfig{FitSeeds: 2, PredictSeeds: 5, Samples: 24, Starts: 4, Steps: 6, MinAcceptable: 20, PredictPoints: 24}
	c.Explore = ExploreProbes(c.MinAcceptable, c.Starts)
	return c
}

// InvestigationEnsemble is calibrate --fit's default: the default budget
// on the sweeper investigation's observations of D and E (D's failovers a
// constraint), the documented space at the default profile, F and G
// predicted against F's acceptance.
func InvestigationEnsemble() EnsembleConfig {
	c := DefaultEnsemble()
	arm := func(n string) arms.Arm { a, _ := arms.Lookup(n); return a }
	c.Base, c.Seed = virtual.DefaultConfig(1), 1
	c.Fitted = []Role{{"D", arm("D")}, {"E", arm("E")}}
	c.Predicted = []arms.Arm{arm("F"), arm("G")}
	c.Observations, c.Constraints, c.Conditions = investigation.Observations, InvestigationConstraints, investigation.FAcceptance
	c.Space = DefaultSpace()
	return c
}

// InvestigationSource is where InvestigationEnsemble's observations come
// from, as its outputs say.
const InvestigationSource = "the sweeper investigation's observations of D and E on Atlas M50s (package investigation), D's failovers a constraint"

// ExploreProbes is each chain's exploration budget: three probes per
// point it explores for (ExploreNeed).
func ExploreProbes(minAcceptable, starts int) int { return 3 * ExploreNeed(minAcceptable, starts) }

// Validate checks an ensemble's shape.
func (c EnsembleConfig) Validate() error {
	switch {
	case len(c.Fitted) == 0:
		return errors.New("no fitted arm")
	case len(c.Observations) == 0:
		return errors.New("no observation")
	case c.FitSeeds < 1 || c.PredictSeeds < 1:
		return errors.New("at least one seed per point")
	case c.Samples < 1 || c.Starts < 1:
		return errors.New("at least one sample and one start")
	case c.Steps < 0 || c.Explore < 0 || c.MinAcceptable < 0 || c.PredictPoints < 1:
		return errors.New("steps, explore and acceptable counts must not be negative, and at least one point is predicted")
	case len(c.Space) == 0:
		return errors.New("no unknown to search")
	}
	roles := map[string]bool{}
	for _, r := range c.Fitted {
		if r.Name == "" || roles[r.Name] {
			return fmt.Errorf("fitted arm %q: each role named once", r.Name)
		}
		roles[r.Name] = true
	}
	for i, o := range append(slices.Clone(c.Observations), c.Constraints...) {
		if !roles[o.Arm] {
			return fmt.Errorf("observation %q is of arm %s, which is not fitted", o.Name, o.Arm)
		}
		if i < len(c.Observations) && o.Scored() && !(o.Tol > 0) {
			return fmt.Errorf("observation %q: tolerance %v; a scored observation needs one above 0", o.Name, o.Tol)
		}
	}
	for i, d := range c.Space {
		for _, e := range c.Space[:i] {
			if d.Knob.Name == e.Knob.Name {
				return fmt.Errorf("unknown %s is given twice", d.Knob.Name)
			}
		}
		if d.Predict {
			return fmt.Errorf("unknown %s: the ensemble searches every unknown (no prediction-only dimension)", d.Knob.Name)
		}
	}
	return nil
}

// EnsemblePoint is one evaluated point: its values, each observation's
// simulated figure there and what follows from them.
type EnsemblePoint struct {
	Values []Value
	// Chain is the chain that evaluated the point, Seq its place in the
	// chain's order: the canonical order of the ensemble's points.
	Chain, Seq int
	// Sim are the observations' figures (NaN where absent), ConstraintSim
	// the constraints'.
	Sim, ConstraintSim []float64
	// Res are the residuals, Objective Σ (residual ÷ tolerance)² over the
	// scored observations, Feasible whether every constraint is met.
	Res       []float64
	Objective float64
	Feasible  bool
}

// score fills a point's residuals, objective and feasibility from its
// figures.
func (c *EnsembleConfig) score(p *EnsemblePoint) {
	p.Res = make([]float64, len(c.Observations))
	p.Objective = 0
	for i, o := range c.Observations {
		r := o.Residual(p.Sim[i])
		p.Res[i] = r
		if o.Scored() {
			p.Objective += (r / o.Tol) * (r / o.Tol)
		}
	}
	p.Feasible = true
	for i, o := range c.Constraints {
		if o.Residual(p.ConstraintSim[i]) != 0 {
			p.Feasible = false
		}
	}
}

// matchesAll reports whether every scored observation is within its
// tolerance at p.
func (c *EnsembleConfig) matchesAll(p EnsemblePoint) bool {
	for i, o := range c.Observations {
		if o.Scored() && !o.Matches(p.Res[i]) {
			return false
		}
	}
	return true
}

// betterPoint orders points: feasible first, then by objective, then by
// the canonical order.
func betterPoint(a, b EnsemblePoint) bool {
	if a.Feasible != b.Feasible {
		return a.Feasible
	}
	if a.Objective != b.Objective {
		return a.Objective < b.Objective
	}
	if a.Chain != b.Chain {
		return a.Chain < b.Chain
	}
	return a.Seq < b.Seq
}

// Margin is the acceptable set's margin over the best objective when no
// point is within every tolerance: the χ² quantile at MarginLevel with as
// many degrees of freedom as unknowns searched, scaled by the Birge ratio
// squared (best ÷ the scored observations) when that is above 1.
func (c *EnsembleConfig) Margin(best float64) float64 {
	return chi2Quantile(MarginLevel, len(c.Space)) * c.Birge(best)
}

// Birge is the square of the Birge ratio of a best objective: best ÷ the
// number of scored observations, at least 1.
func (c *EnsembleConfig) Birge(best float64) float64 {
	n := 0
	for _, o := range c.Observations {
		if o.Scored() {
			n++
		}
	}
	return max(1, best/float64(max(n, 1)))
}

// chi2Quantile is the p-quantile of the χ² distribution with k degrees of
// freedom, by bisection of its CDF (the regularized lower incomplete
// gamma function, P(k/2, x/2)); no library at hand inverts it.
func chi2Quantile(p float64, k int) float64 {
	lo, hi := 0.0, float64(k)+1
	for mathx.GammaInc(float64(k)/2, hi/2) < p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mathx.GammaInc(float64(k)/2, mid/2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// AcceptableSet is the rule's outcome over a list of points.
type AcceptableSet struct {
	// Points are the indices of the acceptable points, best first.
	Points []int
	// Best is the index of the best point (-1 when there is none).
	Best int
	// WithinTolerance says the set is the points within every tolerance;
	// otherwise it is the feasible points within Margin of the best
	// objective.
	WithinTolerance bool
	Margin          float64
}

// Acceptable applies the acceptable set's rule to points.
func (c *EnsembleConfig) Acceptable(pts []EnsemblePoint) AcceptableSet {
	set := AcceptableSet{Best: -1}
	for i, p := range pts {
		if set.Best < 0 || betterPoint(p, pts[set.Best]) {
			set.Best = i
		}
		if p.Feasible && c.matchesAll(p) {
			set.WithinTolerance = true
		}
	}
	if set.Best < 0 || !pts[set.Best].Feasible {
		return set
	}
	set.Margin = c.Margin(pts[set.Best].Objective)
	for i, p := range pts {
		if !p.Feasible {
			continue
		}
		if set.WithinTolerance && c.matchesAll(p) || !set.WithinTolerance && p.Objective <= pts[set.Best].Objective+set.Margin {
			set.Points = append(set.Points, i)
		}
	}
	slices.SortStableFunc(set.Points, func(a, b int) int {
		if betterPoint(pts[a], pts[b]) {
			return -1
		}
		if betterPoint(pts[b], pts[a]) {
			return 1
		}
		return 0
	})
	return set
}

// applies reports whether unknown d changes arm a. A build variant (E's
// hazard form) applies only to arms that name one: an arm of master's
// build (M) keeps master's form.
func applies(d Dim, a arms.Arm) bool {
	if !d.Knob.AppliesTo(a) {
		return false
	}
	if d.Knob.Name == HazardKnob {
		_, named := a.SetParameters[strings.TrimPrefix(HazardKnob, "param.")]
		return named
	}
	return true
}

// cellKey names arm a's trials at a point: the values of the unknowns
// that change it.
func cellKey(role string, a arms.Arm, vals []Value, dims []Dim) string {
	var b strings.Builder
	b.WriteString(role + ":")
	for i, d := range dims {
		if applies(d, a) {
			fmt.Fprintf(&b, "%s=%v|", d.Knob.Name, vals[i].Any())
		}
	}
	return b.String()
}

// settingFor is the base with a point's values applied for arm a.
func (c *EnsembleConfig) settingFor(a arms.Arm, vals []Value) (Setting, error) {
	s := Setting{Config: c.Base, Arm: a}.clone()
	for i, d := range c.Space {
		if !applies(d, a) {
			continue
		}
		if err := d.Knob.set(&s, vals[i]); err != nil {
			return s, fmt.Errorf("%s: %w", d.Knob.Name, err)
		}
	}
	if h := s.Config.Hardware.Host; h != nil && slices.ContainsFunc(c.Space, func(d Dim) bool { return d.Knob.Name == "host.dirtyRatio" }) {
		h.DirtyBackgroundRatio = h.DirtyRatio / 2
	}
	return s, check(s)
}

// pointLabel names a point's values for messages.
func (c *EnsembleConfig) pointLabel(vals []Value) string {
	var s []string
	for i, d := range c.Space {
		s = append(s, d.Knob.Name+"="+d.Knob.Label(vals[i]))
	}
	return strings.Join(s, " ")
}

// evaluator runs fitted arms' trials at points, each cell (an arm and the
// values it sees) once per process.
type evaluator struct {
	c      *EnsembleConfig
	trials map[string][]virtual.Summary
	// Trials counts the trials run, Shared the cells a point took from an
	// earlier one.
	Trials, Shared int
}

func newEvaluator(c *EnsembleConfig) *evaluator {
	return &evaluator{c: c, trials: map[string][]virtual.Summary{}}
}

// figures are an observation's figure over the trials of its arm.
func figures(obs []Observation, byRole map[string][]virtual.Summary) []float64 {
	out := make([]float64, len(obs))
	for i, o := range obs {
		out[i] = o.Value(virtual.Figures(byRole[o.Arm]))
	}
	return out
}

// request is a point a chain asks for.
type request struct {
	chain int
	vals  []Value
}

// eval runs the fitted arms at every requested point (each cell once) and
// returns the points, in request order.
func (e *evaluator) eval(ctx context.Context, stage string, reqs []request) ([]EnsemblePoint, error) {
	var jobs []job
	var cells []string
	queued := map[string]bool{}
	for _, r := range reqs {
		for _, role := range e.c.Fitted {
			k := cellKey(role.Name, role.Arm, r.vals, e.c.Space)
			if _, ok := e.trials[k]; ok || queued[k] {
				e.Shared++
				continue
			}
			s, err := e.c.settingFor(role.Arm, r.vals)
			if err != nil {
				return nil, fmt.Errorf("point %s: arm %s: %w", e.c.pointLabel(r.vals), role.Name, err)
			}
			queued[k] = true
			for i := range e.c.FitSeeds {
				jobs = append(jobs, job{cell: len(cells), arm: s.Arm, cfg: s.Config, seed: e.c.Seed + uint64(i)})
			}
			cells = append(cells, k)
		}
	}
	if err := e.run(ctx, stage, jobs, cells); err != nil {
		return nil, err
	}
	out := make([]EnsemblePoint, len(reqs))
	for i, r := range reqs {
		byRole := map[string][]virtual.Summary{}
		for _, role := range e.c.Fitted {
			byRole[role.Name] = e.trials[cellKey(role.Name, role.Arm, r.vals, e.c.Space)]
		}
		p := EnsemblePoint{Values: r.vals, Chain: r.chain, Sim: figures(e.c.Observations, byRole), ConstraintSim: figures(e.c.Constraints, byRole)}
		e.c.score(&p)
		out[i] = p
	}
	return out, nil
}

func (e *evaluator) run(ctx context.Context, stage string, jobs []job, cells []string) error {
	if len(jobs) == 0 {
		return nil
	}
	var progress func(done, total int)
	if e.c.Progress != nil {
		progress = func(done, total int) { e.c.Progress(stage, done, total) }
	}
	out, err := runJobs(ctx, jobs, e.c.Parallel, progress)
	if err != nil {
		return err
	}
	e.Trials += len(jobs)
	for i, j := range jobs {
		e.trials[cells[j.cell]] = append(e.trials[cells[j.cell]], out[i])
	}
	return nil
}

// continuous and discrete are the indices of the space's continuous and
// discrete unknowns.
func (c *EnsembleConfig) continuous() (cont, disc []int) {
	for i, d := range c.Space {
		if d.Values != nil {
			disc = append(disc, i)
		} else {
			cont = append(cont, i)
		}
	}
	return cont, disc
}

// variants are every combination of the discrete unknowns' values, the
// first unknown slowest.
func (c *EnsembleConfig) variants() [][]Value {
	_, disc := c.continuous()
	out := [][]Value{{}}
	for _, i := range disc {
		var next [][]Value
		for _, v := range out {
			for _, x := range c.Space[i].Values {
				next = append(next, append(slices.Clone(v), x))
			}
		}
		out = next
	}
	return out
}

// samples are the search's first points, each with its chain: the base
// setting's own values (snapped into the ranges: the point an earlier
// search chose, where there was one) in every chain, then a Latin
// hypercube over the continuous unknowns, each sample under every
// variant, sample j in chain j mod Starts; a space without continuous
// unknowns has its variants dealt to the chains. Each chain starts from
// the best of its points: the base, unless its share of the hypercube
// found better.
func (c *EnsembleConfig) samples() []request {
	cont, disc := c.continuous()
	variants := c.variants()
	join := func(x []float64, v []Value) []Value {
		vals := make([]Value, len(c.Space))
		for k, i := range cont {
			vals[i] = c.Space[i].at(x[k])
		}
		for k, i := range disc {
			vals[i] = v[k]
		}
		return vals
	}
	var out []request
	for k := range c.Starts {
		out = append(out, request{chain: k, vals: c.baseValues()})
	}
	if len(cont) == 0 {
		for j, v := range variants {
			out = append(out, request{chain: j % c.Starts, vals: join(nil, v)})
		}
		return out
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0xf17))
	n := c.Samples
	cols := make([][]float64, len(cont))
	for k := range cont {
		perm := rng.Perm(n)
		for j := range n {
			cols[k] = append(cols[k], (float64(perm[j])+rng.Float64())/float64(n))
		}
	}
	for j := range n {
		x := make([]float64, len(cont))
		for k := range cont {
			x[k] = cols[k][j]
		}
		for _, v := range variants {
			out = append(out, request{chain: j % c.Starts, vals: join(x, v)})
		}
	}
	return out
}

// baseValues are the base setting's values of the unknowns, each snapped
// into its range (a discrete one not among its values takes the first).
func (c *EnsembleConfig) baseValues() []Value {
	vals := make([]Value, len(c.Space))
	for i, d := range c.Space {
		s := Setting{Config: c.Base}
		for _, r := range c.Fitted {
			if applies(d, r.Arm) {
				s.Arm = r.Arm
				break
			}
		}
		if s.Arm.SetParameters == nil {
			s.Arm = c.Fitted[0].Arm
		}
		v := KnobValue(d.Knob, s)
		switch {
		case d.Values != nil:
			if !slices.ContainsFunc(d.Values, v.Equal) {
				v = d.Values[0]
			}
		case v.IsStr:
			v = d.at(0.5)
		default:
			v = d.at(min(max(d.unit(v), 0), 1))
		}
		vals[i] = v
	}
	return vals
}

// perturb is a child of vals: each continuous unknown moved by a normal
// step of sigma (in shares of its range, reflected at its ends), each
// discrete one changed to another value with probability pDiscrete.
func (c *EnsembleConfig) perturb(rng *rand.Rand, vals []Value, sigma, pDiscrete float64) []Value {
	out := slices.Clone(vals)
	for i, d := range c.Space {
		if d.Values != nil {
			if len(d.Values) > 1 && rng.Float64() < pDiscrete {
				j := slices.IndexFunc(d.Values, vals[i].Equal)
				k := rng.IntN(len(d.Values) - 1)
				if k >= j {
					k++
				}
				out[i] = d.Values[k]
			}
			continue
		}
		u := d.unit(vals[i]) + sigma*rng.NormFloat64()
		for u < 0 || u > 1 {
			if u < 0 {
				u = -u
			}
			if u > 1 {
				u = 2 - u
			}
		}
		out[i] = d.at(u)
	}
	return out
}

// chain is one independent search: its points in its own order.
type chain struct {
	id     int
	points []EnsemblePoint
	seen   map[string]bool
	parent int // index of the chain's current point
	sigma  float64
	rng    *rand.Rand
	probes int // exploration probes made
	next   int // the next acceptable point to explore around
}

func (ch *chain) add(p EnsemblePoint) {
	p.Chain, p.Seq = ch.id, len(ch.points)
	ch.points = append(ch.points, p)
	ch.seen[key(p.Values)] = true
}

func (ch *chain) best() int {
	b := 0
	for i, p := range ch.points {
		if betterPoint(p, ch.points[b]) {
			b = i
		}
	}
	return b
}

// child proposes a point the chain has not seen around vals (nil after a
// few tries that all fell on seen points).
func (c *EnsembleConfig) child(ch *chain, vals []Value, sigma float64, pending map[string]bool) []Value {
	for range 8 {
		v := c.perturb(ch.rng, vals, sigma, 1/float64(len(c.Space)))
		if k := key(v); !ch.seen[k] && !pending[k] {
			return v
		}
	}
	return nil
}

// Search is stage 1 for the chains in mine (every chain when nil): the
// hypercube, each chain's evolution and exploration. The points are in
// canonical order (by chain, then the chain's own order).
func (c *EnsembleConfig) Search(ctx context.Context, mine func(chain int) bool) ([]EnsemblePoint, *evaluator, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	if mine == nil {
		mine = func(int) bool { return true }
	}
	ev := newEvaluator(c)
	chains := map[int]*chain{}
	var ids []int
	for id := range c.Starts {
		if mine(id) {
			chains[id] = &chain{id: id, seen: map[string]bool{}, sigma: InitialStep, rng: rand.New(rand.NewPCG(c.Seed, 0xc4a1<<16|uint64(id)))}
			ids = append(ids, id)
		}
	}
	// evalFor evaluates each chain's requests and adds the points to it.
	evalFor := func(stage string, reqs []request) error {
		var fresh []request
		for _, r := range reqs {
			ch := chains[r.chain]
			if ch.seen[key(r.vals)] || slices.ContainsFunc(fresh, func(f request) bool { return f.chain == r.chain && key(f.vals) == key(r.vals) }) {
				continue
			}
			fresh = append(fresh, r)
		}
		pts, err := ev.eval(ctx, stage, fresh)
		if err != nil {
			return err
		}
		for _, p := range pts {
			chains[p.Chain].add(p)
		}
		return nil
	}
	var first []request
	for _, r := range c.samples() {
		if chains[r.chain] != nil {
			first = append(first, r)
		}
	}
	if err := evalFor("sample", first); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if ch := chains[id]; len(ch.points) > 0 {
			ch.parent = ch.best()
		}
	}
	// Evolution: each chain proposes two children of its current point;
	// the better one replaces it when better, and the step grows after a
	// success and shrinks after a failure.
	for step := range c.Steps {
		var reqs []request
		for _, id := range ids {
			ch := chains[id]
			if len(ch.points) == 0 {
				continue
			}
			pending := map[string]bool{}
			for range 2 {
				if v := c.child(ch, ch.points[ch.parent].Values, ch.sigma, pending); v != nil {
					pending[key(v)] = true
					reqs = append(reqs, request{chain: id, vals: v})
				}
			}
		}
		before := map[int]int{}
		for _, id := range ids {
			before[id] = len(chains[id].points)
		}
		if err := evalFor(fmt.Sprintf("search %d", step+1), reqs); err != nil {
			return nil, nil, err
		}
		for _, id := range ids {
			ch := chains[id]
			if len(ch.points) == 0 {
				continue
			}
			improved := false
			for i := before[id]; i < len(ch.points); i++ {
				if betterPoint(ch.points[i], ch.points[ch.parent]) {
					ch.parent, improved = i, true
				}
			}
			if improved {
				ch.sigma = min(ch.sigma*1.5, 0.5)
			} else {
				ch.sigma = max(ch.sigma*0.7, 0.02)
			}
		}
	}
	// Exploration: each chain probes around its explorable points, best
	// first, in turn, until it holds its share of MinAcceptable or spends
	// Explore.
	need := ExploreNeed(c.MinAcceptable, c.Starts)
	for round := 1; ; round++ {
		var reqs []request
		for _, id := range ids {
			ch := chains[id]
			if len(ch.points) == 0 {
				continue
			}
			acc := c.explorable(ch.points)
			if len(acc) == 0 || len(acc) >= need || ch.probes >= c.Explore {
				continue
			}
			pending := map[string]bool{}
			for range min(2, c.Explore-ch.probes) {
				around := ch.points[acc[ch.next%len(acc)]].Values
				ch.next++
				ch.probes++
				if v := c.child(ch, around, ExploreStep, pending); v != nil {
					pending[key(v)] = true
					reqs = append(reqs, request{chain: id, vals: v})
				}
			}
		}
		if len(reqs) == 0 {
			break
		}
		if err := evalFor(fmt.Sprintf("explore %d", round), reqs); err != nil {
			return nil, nil, err
		}
	}
	var out []EnsemblePoint
	for _, id := range ids {
		out = append(out, chains[id].points...)
	}
	return out, ev, nil
}

// ExploreNeed is the explorable points each of starts chains explores
// for: ⌈1.5 × minAcceptable ÷ starts⌉, half again each chain's share, as a
// chain's points need not all be in the ensemble's set.
func ExploreNeed(minAcceptable, starts int) int {
	return (3*minAcceptable + 2*starts - 1) / (2 * starts)
}

// explorable are the points a chain explores around, best first: its
// points within every tolerance when it has any, else those within the
// χ² margin of its best, unscaled — stricter than the set's own margin, so
// that a chain whose best is not the ensemble's still explores where the
// ensemble's set will be.
func (c *EnsembleConfig) explorable(pts []EnsemblePoint) []int {
	set := c.Acceptable(pts)
	if set.WithinTolerance || set.Best < 0 {
		return set.Points
	}
	limit := pts[set.Best].Objective + chi2Quantile(MarginLevel, len(c.Space))
	var out []int
	for _, i := range set.Points {
		if pts[i].Objective <= limit {
			out = append(out, i)
		}
	}
	return out
}

// Canonical orders points by chain and the chain's order and drops a
// point another chain evaluated first (the same values give the same
// figures).
func Canonical(pts []EnsemblePoint) []EnsemblePoint {
	out := slices.Clone(pts)
	slices.SortStableFunc(out, func(a, b EnsemblePoint) int {
		if a.Chain != b.Chain {
			return a.Chain - b.Chain
		}
		return a.Seq - b.Seq
	})
	seen := map[string]bool{}
	kept := out[:0]
	for _, p := range out {
		if k := key(p.Values); !seen[k] {
			seen[k] = true
			kept = append(kept, p)
		}
	}
	return kept
}

// InvestigationConstraints are the investigation's hard constraint: D
// never failed over.
var InvestigationConstraints = []Observation{{Arm: "D", Name: "D failovers, most in a trial", Observed: "0", Metric: metric.Failovers,
	Reduce: investigation.Max, Lo: 0, Hi: 0, Absolute: true, Format: "%.0f"}}
