package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// Dim is one unknown the fit estimates: a knob of the namespace and its
// plausible range (Lo…Hi, on a log scale when Log), or a list of values.
type Dim struct {
	Knob   Knob
	Lo, Hi float64
	Log    bool
	// Values, when set, are the only values (a discrete dimension).
	Values []Value
	// Predict marks an unknown no fitted arm can see. It is not searched;
	// the predictions are made at each of its Values.
	Predict bool
	// Why is the range's source, for the docs and the printout.
	Why string
}

// HazardKnob is the shedder build's hazard form: E's build variant, the
// dimension whose objective per value is the model-selection evidence.
const HazardKnob = "param.simShedHazard"

// DefaultSpace is the joint fit's search space: the storm (rate and mix),
// its clients' connections, the query's sizes, the sort's spill limit, the
// two admission settings the investigation did not report, the killOp
// actor's rule (D) and the shedder's hazard form (E's build). Each range
// holds mongod's default where mongod has one. docs/model.md says why each
// range.
func DefaultSpace() []Dim {
	var pols []Value
	for _, p := range killop.Policies {
		pols = append(pols, Str(p))
	}
	return []Dim{
		{Knob: mustKnob("workload.stormRate"), Lo: 150, Hi: 330, Why: "storm queries/s; D's queue saw ~302 departures/s and E's ~270 arrivals/s of memory-holding ops, 150 was the workload's guess"},
		{Knob: mustKnob("workload.windowShare"), Lo: 0.5, Hi: 0.9, Why: "share of $setWindowFields in the storm; the investigation says most victims were $setWindowFields"},
		{Knob: mustKnob("param.throughputProbingMinConcurrency"), Lo: 4, Hi: 16, Why: "probing floor: mongod's default is 4; the investigation saw the read pool held at ~10–14 tickets"},
		{Knob: mustKnob("param.executionControlConcurrentReadLowPriorityTransactions"), Lo: 2, Hi: 8, Why: "low-priority read tickets: mongod's default is the CPU count (8 on an M50); Atlas's setting is not reported"},
		{Knob: mustKnob("workload.maxPoolSize"), Lo: 100, Hi: 5000, Log: true, Why: "connections the storm's clients may have in the server at once: one Go driver's default pool (100) to a fleet of clients; the investigation does not say how many clients drove its storm"},
		{Knob: mustKnob("workload.scanDocs"), Lo: 5_000, Hi: 200_000, Log: true, Why: "documents a query scans into its blocking stage (median); with docBytes, what it spills and how often it yields (every internalQueryExecYieldIterations documents); not reported"},
		{Knob: mustKnob("workload.docBytes"), Lo: 200, Hi: 8_000, Log: true, Why: "bytes a scanned document adds to the stage's buffer; not reported"},
		{Knob: mustKnob("workload.loadBytes"), Lo: 8 << 20, Hi: 32 << 20, Log: true, Why: "the $setWindowFields partition a getMore loads (median): most victims were $setWindowFields holding ~21 MB (tracked p50), which this range brackets"},
		{Knob: mustKnob("param.internalQueryMaxBlockingSortMemoryUsageBytes"), Lo: 32 << 20, Hi: 100 << 20, Log: true, Why: "the sort's spill limit: mongod's default is 100 MiB; explain output from Atlas clusters shows 32 MiB; which one the investigation's clusters had is not reported"},
		{Knob: mustKnob("killop.policy"), Values: pols, Why: "D's actor is \"mongotune-style\" with no rule given: one of the named killop policies"},
		{Knob: mustKnob(HazardKnob), Values: []Value{Str(model.HazardOdds), Str(model.HazardLinear)}, Why: "E's build: master's odds hazard or a linear one; only E's observed flows can tell"},
	}
}

// HostSpace is the host model's unknowns with their documented ranges
// (docs/model-host.md says why each). They are not in DefaultSpace: the
// joint fit keeps the host's defaults unless a space names them, and
// ParseSpace gives a named one its reason from here.
func HostSpace() []Dim {
	const mib, gib = 1 << 20, 1 << 30
	return []Dim{
		{Knob: mustKnob("host.otherBytes"), Lo: 0, Hi: 3 * gib, Why: "other processes; with the kernel's 512 MiB, 0.5–3.5 GiB outside mongod"},
		{Knob: mustKnob("host.dataSetBytes"), Lo: 2 * gib, Hi: 64 * gib, Log: true, Why: "the storm collection's in-cache size"},
		{Knob: mustKnob("host.wtInitialFill"), Lo: 0, Hi: 1, Why: "share of the cache's fill at the trial's start"},
		{Knob: mustKnob("host.releaseBytesPerSec"), Lo: 0, Hi: 1 * gib, Why: "tcmallocReleaseRate; 8.0's default is 0 with the background thread on"},
		{Knob: mustKnob("host.untrackedPerOpBytes"), Lo: 128 << 10, Hi: 2 * mib, Log: true, Why: "thread stack touched, OperationContext, CurOp, plan, storage cursor"},
		{Knob: mustKnob("host.untrackedPerCursorBytes"), Lo: 32 << 10, Hi: 1 * mib, Log: true, Why: "ClientCursor, plan executor, storage session"},
		{Knob: mustKnob("host.dirtyRatio"), Lo: 10, Hi: 60, Why: "vm.dirty_ratio (background ratio = half); Linux 20, Atlas's not known"},
	}
}

// ParseSpace reads a fit's space, exactly the unknowns given (each as
// ParseDim reads it; the others keep the base setting's values), each
// with the reason DefaultSpace or HostSpace documents for it. A name
// given twice is an error.
func ParseSpace(texts []string) ([]Dim, error) {
	known := append(DefaultSpace(), HostSpace()...)
	var dims []Dim
	for _, text := range texts {
		d, err := ParseDim(text)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(dims, func(x Dim) bool { return x.Knob.Name == d.Knob.Name }) {
			return nil, fmt.Errorf("%s: %s is given twice", text, d.Knob.Name)
		}
		if i := slices.IndexFunc(known, func(x Dim) bool { return x.Knob.Name == d.Knob.Name }); i >= 0 {
			d.Why = known[i].Why
		}
		dims = append(dims, d)
	}
	return dims, nil
}

func mustKnob(name string) Knob {
	kn, ok := LookupKnob(name)
	if !ok {
		panic("sweep: no knob " + name)
	}
	return kn
}

// ParseDim reads --space NAME=LO:HI (a continuous range), NAME=LO:HI:log
// or NAME=V1,V2,... (a discrete list) and replaces or adds that dimension.
func ParseDim(text string) (Dim, error) {
	name, spec, _ := strings.Cut(text, "=")
	k, ok := LookupKnob(strings.TrimSpace(name))
	if !ok {
		return Dim{}, fmt.Errorf("%q: %w %s", text, ErrUnknownKnob, name)
	}
	d := Dim{Knob: k}
	if parts := strings.Split(spec, ":"); len(parts) == 2 || len(parts) == 3 && parts[2] == "log" {
		if k.Choices != nil {
			return Dim{}, fmt.Errorf("%q: %s takes a list of values", text, k.Name)
		}
		lo, err1 := parseNumber(parts[0], k.Unit)
		hi, err2 := parseNumber(parts[1], k.Unit)
		if err := errors.Join(err1, err2); err != nil {
			return Dim{}, fmt.Errorf("%q: %v", text, err)
		}
		if !(hi > lo) || lo < k.Min || hi > k.Max {
			return Dim{}, fmt.Errorf("%q: want LO < HI within [%s, %s]", text, k.Label(Num(k.Min)), k.Label(Num(k.Max)))
		}
		d.Lo, d.Hi, d.Log = lo, hi, len(parts) == 3
		if d.Log && lo <= 0 {
			return Dim{}, fmt.Errorf("%q: a log range needs LO > 0", text)
		}
		return d, nil
	}
	ax, err := ParseVary(text)
	if err != nil {
		return Dim{}, err
	}
	d.Values = ax.Values
	return d, nil
}

// Observation is one of the investigation's figures, with its tolerance
// (package investigation holds them).
type Observation = investigation.Observation

// Observations are the joint fit's targets: D's and E's observations.
var Observations = investigation.Observations

// Point is one evaluated point of the space: its values, the fitted
// arms' figures there and the objective.
type Point struct {
	Values []Value // one per searched dimension
	// Sim and Res are each observation's simulated figure and residual,
	// in Observations order.
	Sim, Res []float64
	// Failovers is the most failovers of any of D's trials (the hard
	// constraint: the investigation saw none).
	Failovers float64
	// Objective is Σ (residual / tolerance)² over D's and E's scored
	// observations (those true by construction are shown, not scored).
	Objective float64
}

// Feasible reports whether D had no failover.
func (p Point) Feasible() bool { return p.Failovers == 0 }

// better orders points: feasible first, then by objective.
func better(a, b Point) bool {
	if a.Feasible() != b.Feasible() {
		return a.Feasible()
	}
	return a.Objective < b.Objective
}

// Matches reports whether every residual of arm's observations (every
// observation when arm is "") is within its tolerance and D had no
// failover.
func (p Point) Matches(arm string) bool {
	if !p.Feasible() {
		return false
	}
	for i, o := range Observations {
		if o.Scored() && (arm == "" || o.Arm == arm) && !o.Matches(p.Res[i]) {
			return false
		}
	}
	return true
}

// FitConfig is a fit: the base setting, the space and its budget.
type FitConfig struct {
	// Base is the setting every point starts from.
	Base virtual.Config
	// D and E are the fitted arms (the observations are of them); F is
	// predicted only, and M (master's formula with E's marks, optional)
	// is predicted beside E.
	D, E, F, M arms.Arm
	Space      []Dim
	Seed       uint64
	// FitSeeds are the trials of each fitted arm per point (the same
	// seeds at every point); PredictSeeds the trials of each arm at the
	// fitted point.
	FitSeeds, PredictSeeds int
	// Samples is the Latin hypercube's size; Refine the most pattern
	// search polls.
	Samples, Refine int
	Parallel        int
	Progress        func(stage string, done, total int)
}

// Prediction is an arm's trials at the fitted point (under one value of
// the prediction dimensions, if any).
type Prediction struct {
	// Role is "D", "E", "M" or "F".
	Role, Arm, Variant string
	Trials             []virtual.Summary
}

// VariantEvidence is the best point the search found with one build
// variant (one value of HazardKnob): the model-selection evidence.
type VariantEvidence struct {
	Variant string
	Best    Point
	Found   bool
}

// FitResult is what a fit found.
type FitResult struct {
	// Start says how the first points were chosen: "grid" (every point
	// of a small discrete space) or "hypercube".
	Start     string
	Space     []Dim // the searched dimensions, in Point.Values order
	Predicted []Dim // the prediction dimensions
	Points    []Point
	Best      Point
	// Variants is the best objective per build variant (empty when the
	// hazard form is not searched).
	Variants []VariantEvidence
	// Predictions are D, E, M and F at the best point.
	Predictions []Prediction
	Evaluated   int // trials run
	Reused      int // fitted-arm trials a point shared with an earlier one
}

// Fit is the single-point fit calibrate --fit ran before issue 37 (it now
// runs the ensemble, RunOne; make bench times one against the other): it
// estimates the unknowns from D's and E's observations together: a
// Latin hypercube over the space (or every point of a small discrete
// space), then a compass search from the best point. Every point runs D
// and E on the same seeds; an arm's trials are shared between points that
// differ only in dimensions the arm does not see (D runs no shedder, E no
// actor). The search is deterministic for its seed. It then predicts D,
// E, M and F at the best point.
func Fit(ctx context.Context, c FitConfig) (*FitResult, error) {
	if c.FitSeeds < 1 || c.PredictSeeds < 1 {
		return nil, errors.New("at least one seed per point")
	}
	if c.D.Name == "" || c.E.Name == "" {
		return nil, errors.New("the fit needs arms D and E")
	}
	r := &FitResult{}
	for _, d := range c.Space {
		if d.Predict {
			r.Predicted = append(r.Predicted, d)
		} else {
			r.Space = append(r.Space, d)
		}
	}
	f := &fitter{c: c, r: r, seen: map[string]int{}, trials: map[string][]virtual.Summary{}}
	if err := f.start(ctx); err != nil {
		return nil, err
	}
	if err := f.refine(ctx); err != nil {
		return nil, err
	}
	r.Best = f.best()
	if i := slices.IndexFunc(r.Space, func(d Dim) bool { return d.Knob.Name == HazardKnob }); i >= 0 {
		for _, v := range r.Space[i].Values {
			ev := VariantEvidence{Variant: v.Str}
			for _, p := range r.Points {
				if p.Values[i].Equal(v) && (!ev.Found || better(p, ev.Best)) {
					ev.Best, ev.Found = p, true
				}
			}
			r.Variants = append(r.Variants, ev)
		}
	}
	if err := f.predict(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

type fitter struct {
	c    FitConfig
	r    *FitResult
	seen map[string]int // point key → index in r.Points
	// trials are a fitted arm's trials by the arm's name and the values
	// of the dimensions it sees.
	trials map[string][]virtual.Summary
}

// at is the value of dimension d at unit coordinate u.
func (d Dim) at(u float64) Value {
	if d.Values != nil {
		i := min(int(u*float64(len(d.Values))), len(d.Values)-1)
		return d.Values[i]
	}
	var v float64
	if d.Log {
		v = math.Exp(math.Log(d.Lo) + u*(math.Log(d.Hi)-math.Log(d.Lo)))
	} else {
		v = d.Lo + u*(d.Hi-d.Lo)
	}
	if d.Knob.Integer {
		v = math.Round(v)
	}
	return Num(v)
}

// unit is the unit coordinate of a value (the centre of a discrete one's
// bin).
func (d Dim) unit(v Value) float64 {
	if d.Values != nil {
		i := slices.IndexFunc(d.Values, v.Equal)
		return (float64(i) + 0.5) / float64(len(d.Values))
	}
	if d.Log {
		return (math.Log(v.Num) - math.Log(d.Lo)) / (math.Log(d.Hi) - math.Log(d.Lo))
	}
	return (v.Num - d.Lo) / (d.Hi - d.Lo)
}

func key(vals []Value) string {
	var b strings.Builder
	for _, v := range vals {
		fmt.Fprintf(&b, "%v|", v.Any())
	}
	return b.String()
}

// armKey names arm a's trials at a point: the values of the dimensions
// that change a.
func armKey(a arms.Arm, vals []Value, dims []Dim) string {
	var b strings.Builder
	b.WriteString(a.Name + ":")
	for i, d := range dims {
		if d.Knob.AppliesTo(a) {
			fmt.Fprintf(&b, "%s=%v|", d.Knob.Name, vals[i].Any())
		}
	}
	return b.String()
}

// discrete reports the number of points of an all-discrete space (0 when
// a dimension is continuous).
func discrete(space []Dim) int {
	n := 1
	for _, d := range space {
		if d.Values == nil {
			return 0
		}
		n *= len(d.Values)
	}
	return n
}

// start evaluates the first points: every point of a discrete space no
// larger than the sample budget, else a Latin hypercube.
func (f *fitter) start(ctx context.Context) error {
	space := f.r.Space
	var pts [][]Value
	if n := discrete(space); n > 0 && n <= max(f.c.Samples, 1) {
		f.r.Start = "grid"
		idx := make([]int, len(space))
		for range n {
			var p []Value
			for i, d := range space {
				p = append(p, d.Values[idx[i]])
			}
			pts = append(pts, p)
			for i := len(idx) - 1; i >= 0; i-- {
				if idx[i]++; idx[i] < len(space[i].Values) {
					break
				}
				idx[i] = 0
			}
		}
	} else {
		f.r.Start = "hypercube"
		rng := rand.New(rand.NewPCG(f.c.Seed, 0xf17))
		n := max(f.c.Samples, 1)
		cols := make([][]float64, len(space))
		for i := range space {
			perm := rng.Perm(n)
			for j := range n {
				cols[i] = append(cols[i], (float64(perm[j])+rng.Float64())/float64(n))
			}
		}
		for j := range n {
			var p []Value
			for i, d := range space {
				p = append(p, d.at(cols[i][j]))
			}
			pts = append(pts, p)
		}
	}
	return f.eval(ctx, "sample", pts)
}

// refine is a compass search from the best point: poll ±step along every
// dimension, move to the best improvement, halve the step when none.
func (f *fitter) refine(ctx context.Context) error {
	space := f.r.Space
	step := 0.25
	for poll := 0; poll < f.c.Refine && step >= 1.0/32 && len(space) > 0; poll++ {
		best := f.best()
		var cand [][]Value
		for i, d := range space {
			for _, sign := range []float64{-1, 1} {
				p := slices.Clone(best.Values)
				if d.Values != nil {
					j := slices.IndexFunc(d.Values, best.Values[i].Equal) + int(sign)
					if j < 0 || j >= len(d.Values) {
						continue
					}
					p[i] = d.Values[j]
				} else {
					u := d.unit(best.Values[i]) + sign*step
					if u < 0 || u > 1 {
						continue
					}
					p[i] = d.at(u)
				}
				if _, ok := f.seen[key(p)]; !ok {
					cand = append(cand, p)
				}
			}
		}
		if len(cand) == 0 {
			step /= 2
			continue
		}
		if err := f.eval(ctx, fmt.Sprintf("refine %d", poll+1), cand); err != nil {
			return err
		}
		if nb := f.best(); key(nb.Values) == key(best.Values) {
			step /= 2
		}
	}
	return nil
}

func (f *fitter) best() Point {
	b := f.r.Points[0]
	for _, p := range f.r.Points[1:] {
		if better(p, b) {
			b = p
		}
	}
	return b
}

// setting is the base with a point's values (and prediction dimensions'
// values) applied for arm a.
func (f *fitter) setting(a arms.Arm, vals []Value, dims []Dim) (Setting, error) {
	s := Setting{Config: f.c.Base, Arm: a}.clone()
	for i, d := range dims {
		if !d.Knob.AppliesTo(a) {
			continue
		}
		if err := d.Knob.set(&s, vals[i]); err != nil {
			return s, err
		}
	}
	if h := s.Config.Hardware.Host; h != nil && slices.ContainsFunc(dims, func(d Dim) bool { return d.Knob.Name == "host.dirtyRatio" }) {
		h.DirtyBackgroundRatio = h.DirtyRatio / 2
	}
	return s, check(s)
}

// eval runs D and E at every new point, in parallel (each arm's trials
// once per combination of the values it sees), and records the points.
func (f *fitter) eval(ctx context.Context, stage string, pts [][]Value) error {
	var jobs []job
	var fresh [][]Value
	var cells []string // armKey of each job's cell
	queued := map[string]bool{}
	for _, p := range pts {
		if _, ok := f.seen[key(p)]; ok || slices.ContainsFunc(fresh, func(q []Value) bool { return key(q) == key(p) }) {
			continue
		}
		fresh = append(fresh, p)
		for _, a := range []arms.Arm{f.c.D, f.c.E} {
			k := armKey(a, p, f.r.Space)
			if _, ok := f.trials[k]; ok || queued[k] {
				f.r.Reused += f.c.FitSeeds
				continue
			}
			s, err := f.setting(a, p, f.r.Space)
			if err != nil {
				return fmt.Errorf("point %s: %w", f.label(p), err)
			}
			queued[k] = true
			for i := range f.c.FitSeeds {
				jobs = append(jobs, job{cell: len(cells), arm: s.Arm, cfg: s.Config, seed: f.c.Seed + uint64(i)})
			}
			cells = append(cells, k)
		}
	}
	var progress func(done, total int)
	if f.c.Progress != nil {
		progress = func(done, total int) { f.c.Progress(stage, done, total) }
	}
	out, err := runJobs(ctx, jobs, f.c.Parallel, progress)
	if err != nil {
		return err
	}
	f.r.Evaluated += len(jobs)
	for i, j := range jobs {
		f.trials[cells[j.cell]] = append(f.trials[cells[j.cell]], out[i])
	}
	for _, p := range fresh {
		pt := Score(f.trials[armKey(f.c.D, p, f.r.Space)], f.trials[armKey(f.c.E, p, f.r.Space)])
		pt.Values = p
		f.seen[key(p)] = len(f.r.Points)
		f.r.Points = append(f.r.Points, pt)
	}
	return nil
}

// Score is the objective of D's and E's trials at a point.
func Score(d, e []virtual.Summary) Point {
	var p Point
	by := map[string][]investigation.Trial{"D": virtual.Figures(d), "E": virtual.Figures(e)}
	for _, o := range Observations {
		v := o.Value(by[o.Arm])
		r := o.Residual(v)
		p.Sim, p.Res = append(p.Sim, v), append(p.Res, r)
		if o.Scored() {
			p.Objective += (r / o.Tol) * (r / o.Tol)
		}
	}
	for _, t := range d {
		p.Failovers = max(p.Failovers, t.Metrics[metric.Failovers])
	}
	return p
}

func (f *fitter) label(vals []Value) string {
	var s []string
	for i, d := range f.r.Space {
		s = append(s, d.Knob.Name+"="+d.Knob.Label(vals[i]))
	}
	return strings.Join(s, " ")
}

// predict runs D, E, M and F at the best point (under every value of the
// prediction dimensions). M, master's formula with E's marks, runs with
// the hazard dimension left out: its build is master's by definition.
func (f *fitter) predict(ctx context.Context) error {
	type pred struct {
		role    string
		arm     arms.Arm
		variant string
		vals    []Value
		dims    []Dim
	}
	variants := [][]Value{nil}
	for _, d := range f.r.Predicted {
		var next [][]Value
		for _, v := range variants {
			for _, x := range d.Values {
				next = append(next, append(slices.Clone(v), x))
			}
		}
		variants = next
	}
	dims := append(slices.Clone(f.r.Space), f.r.Predicted...)
	var noHazard []Dim
	for _, d := range dims {
		if d.Knob.Name != HazardKnob {
			noHazard = append(noHazard, d)
		}
	}
	values := func(v []Value, ds []Dim) []Value {
		all := append(slices.Clone(f.r.Best.Values), v...)
		var out []Value
		for i, d := range dims {
			if slices.ContainsFunc(ds, func(x Dim) bool { return x.Knob.Name == d.Knob.Name }) {
				out = append(out, all[i])
			}
		}
		return out
	}
	var preds []pred
	for _, role := range []struct {
		name string
		arm  arms.Arm
	}{{"D", f.c.D}, {"E", f.c.E}, {"M", f.c.M}, {"F", f.c.F}} {
		if role.arm.Name == "" {
			continue
		}
		ds := dims
		if role.name == "M" {
			ds = noHazard
		}
		for _, v := range variants {
			var names []string
			for i, d := range f.r.Predicted {
				names = append(names, strings.TrimPrefix(d.Knob.Name, "param.")+"="+d.Knob.Label(v[i]))
			}
			preds = append(preds, pred{role: role.name, arm: role.arm, variant: strings.Join(names, " "), vals: values(v, ds), dims: ds})
			if role.name == "D" {
				break // D runs no shedder: one variant tells all
			}
		}
	}
	var jobs []job
	for i, p := range preds {
		s, err := f.setting(p.arm, p.vals, p.dims)
		if err != nil {
			return err
		}
		for k := range f.c.PredictSeeds {
			jobs = append(jobs, job{cell: i, arm: s.Arm, cfg: s.Config, seed: f.c.Seed + uint64(k)})
		}
	}
	var progress func(done, total int)
	if f.c.Progress != nil {
		progress = func(done, total int) { f.c.Progress("predict", done, total) }
	}
	out, err := runJobs(ctx, jobs, f.c.Parallel, progress)
	if err != nil {
		return err
	}
	f.r.Evaluated += len(jobs)
	trials := make([][]virtual.Summary, len(preds))
	for i, j := range jobs {
		trials[j.cell] = append(trials[j.cell], out[i])
	}
	for i, p := range preds {
		f.r.Predictions = append(f.r.Predictions, Prediction{Role: p.role, Arm: p.arm.Name, Variant: p.variant, Trials: trials[i]})
	}
	return nil
}

// Falls reports whether an arm's trials reproduce E's observed outcome
// (investigation.Falls).
func Falls(trials []virtual.Summary) bool { return investigation.Falls(virtual.Figures(trials)) }

// Holds reports whether an arm's trials hold as D did
// (investigation.Holds).
func Holds(trials []virtual.Summary) bool { return investigation.Holds(virtual.Figures(trials)) }

// Prediction returns the prediction of a role (the first, under the
// first prediction variant).
func (r *FitResult) Prediction(role string) (Prediction, bool) {
	for _, p := range r.Predictions {
		if p.Role == role {
			return p, true
		}
	}
	return Prediction{}, false
}

// Reproduced reports whether the fit reproduces the investigation's D and
// E: every observation within tolerance at the fitted point, and at the
// fitted point's predictions D holds and E falls. F is not part of it: F
// is a prediction.
func (r *FitResult) Reproduced() bool {
	if !r.Best.Matches("") {
		return false
	}
	d, okD := r.Prediction("D")
	e, okE := r.Prediction("E")
	return okD && okE && Holds(d.Trials) && Falls(e.Trials)
}
