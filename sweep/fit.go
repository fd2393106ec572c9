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
	"github.com/qmlsab/qmlsab/metric"
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
	// Predict marks an unknown the fitted arm cannot see (the shedder's
	// build variant: D runs no shedder). It is not searched; the
	// predictions are made at each of its Values.
	Predict bool
	// Why is the range's source, for the docs and the printout.
	Why string
}

// DefaultSpace is the fit's search space: the host model's unknowns and
// the storm rate, each over its plausible range (docs/model-host.md says
// why each range), and the shedder's build variant as a prediction
// dimension.
func DefaultSpace() []Dim {
	k := func(name string) Knob {
		kn, ok := LookupKnob(name)
		if !ok {
			panic("sweep: no knob " + name)
		}
		return kn
	}
	const mib, gib = 1 << 20, 1 << 30
	return []Dim{
		{Knob: k("host.otherBytes"), Lo: 0, Hi: 3 * gib, Why: "other processes; with the kernel's 512 MiB, 0.5–3.5 GiB outside mongod"},
		{Knob: k("host.dataSetBytes"), Lo: 2 * gib, Hi: 64 * gib, Log: true, Why: "the storm collection's in-cache size"},
		{Knob: k("host.wtInitialFill"), Lo: 0, Hi: 1, Why: "share of the cache's fill at the trial's start"},
		{Knob: k("host.releaseBytesPerSec"), Lo: 0, Hi: 1 * gib, Why: "tcmallocReleaseRate; 8.0's default is 0 with the background thread on"},
		{Knob: k("host.untrackedPerOpBytes"), Lo: 128 << 10, Hi: 2 * mib, Log: true, Why: "thread stack touched, OperationContext, CurOp, plan, storage cursor"},
		{Knob: k("host.untrackedPerCursorBytes"), Lo: 32 << 10, Hi: 1 * mib, Log: true, Why: "ClientCursor, plan executor, storage session"},
		{Knob: k("host.dirtyRatio"), Lo: 10, Hi: 60, Why: "vm.dirty_ratio (background ratio = half); Linux 20, Atlas's not known"},
		{Knob: k("workload.stormRate"), Lo: 100, Hi: 300, Why: "storm queries/s; the investigation's arrivals (~270/s of memory-holding ops) bound it"},
		{Knob: k("param.simShedClockScope"), Values: []Value{Str("query"), Str("operation")}, Predict: true, Why: "the shedder build's clock scope; D runs no shedder, so D cannot tell"},
	}
}

// ParseDim reads --space NAME=LO:HI (a continuous range), NAME=LO:HI:log
// or NAME=V1,V2,... (a discrete list) and replaces or adds that dimension.
func ParseDim(text string) (Dim, error) {
	name, spec, _ := strings.Cut(text, "=")
	k, ok := LookupKnob(strings.TrimSpace(name))
	if !ok {
		return Dim{}, fmt.Errorf("%q: unknown name %s", text, name)
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
	d.Predict = k.Name == "param.simShedClockScope"
	return d, nil
}

// Observation is one figure the sweeper investigation reported for arm D
// or for its storm, with the tolerance the fit allows it.
type Observation struct {
	Name, Observed string
	// Target, or the range Lo…Hi (Lo < Hi) inside which the residual is 0.
	Lo, Hi float64
	// Tol is the relative error that still counts as a match.
	Tol float64
	// Unavail: the residual is the relative error of 1 − value (for
	// availability, whose shortfall is what was measured).
	Unavail bool
	get     func(s []virtual.Summary) float64
	format  string
}

func med(f func(virtual.Summary) float64) func([]virtual.Summary) float64 {
	return func(ss []virtual.Summary) float64 {
		var xs []float64
		for _, s := range ss {
			xs = append(xs, f(s))
		}
		return metric.Quantile(xs, 0.5)
	}
}

func mm(name string) func([]virtual.Summary) float64 {
	return med(func(s virtual.Summary) float64 { return s.Metrics[name] })
}

// Observations are the fit's targets: arm D and the storm, as the
// sweeper investigation saw them on Atlas M50s (docs/investigations.md).
// E's and F's outcomes are not among them: they are predictions.
var Observations = []Observation{
	{Name: "D availability", Observed: "0.97", Lo: 0.97, Hi: 0.97, Tol: 1, Unavail: true, get: mm(metric.Availability), format: "%.3f"},
	{Name: "D low-pri admissions/s", Observed: "160", Lo: 160, Hi: 160, Tol: 0.25, get: mm(metric.AdmissionsPerS), format: "%.0f"},
	{Name: "D low-pri kills/s", Observed: "142", Lo: 142, Hi: 142, Tol: 0.25, get: mm(metric.KillsPerS), format: "%.0f"},
	{Name: "D read tickets (median)", Observed: "10–14", Lo: 10, Hi: 14, Tol: 0.15, get: mm(metric.ReadTicketsMed), format: "%.0f"},
	{Name: "D victims' tracked p50 MiB", Observed: "21", Lo: 21, Hi: 21, Tol: 0.25,
		get: med(func(s virtual.Summary) float64 { return s.Metrics[metric.VictimTrackedP50] / (1 << 20) }), format: "%.1f"},
	{Name: "D victims $setWindowFields", Observed: "most (≥ 0.5)", Lo: 0.5, Hi: 1, Tol: 0.2,
		get: med(func(s virtual.Summary) float64 { return s.WindowShare }), format: "%.2f"},
	{Name: "storm arrivals/s (D's queue)", Observed: "~270 (E); 302 departed (D)", Lo: 270, Hi: 302, Tol: 0.25,
		get: mm2(func(m map[string]float64) float64 { return m[metric.DeparturesPerS] + m[metric.LowQueueSlope] }), format: "%.0f"},
}

func mm2(f func(map[string]float64) float64) func([]virtual.Summary) float64 {
	return med(func(s virtual.Summary) float64 { return f(s.Metrics) })
}

// Residual is an observation's relative error at a point: 0 inside its
// range, else the error relative to the nearer end.
func (o Observation) Residual(sim float64) float64 {
	if o.Unavail {
		u, lo, hi := 1-sim, 1-o.Hi, 1-o.Lo
		return relOut(u, lo, hi)
	}
	return relOut(sim, o.Lo, o.Hi)
}

func relOut(x, lo, hi float64) float64 {
	switch {
	case x < lo:
		return (x - lo) / lo
	case x > hi:
		return (x - hi) / hi
	}
	return 0
}

// Format writes a simulated figure as the observation's row does.
func (o Observation) Format(v float64) string { return fmt.Sprintf(o.format, v) }

// Point is one evaluated point of the space: its values, D's trials there
// and the objective.
type Point struct {
	Values []Value // one per searched dimension
	// Sim and Res are each observation's simulated figure and residual.
	Sim, Res []float64
	// Failovers is the most failovers of any of D's trials (the hard
	// constraint: the investigation saw none).
	Failovers float64
	// Objective is Σ (residual / tolerance)².
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

// Matches reports whether every residual is within its tolerance and D
// had no failover.
func (p Point) Matches() bool {
	if !p.Feasible() {
		return false
	}
	for i, o := range Observations {
		if math.Abs(p.Res[i]) > o.Tol {
			return false
		}
	}
	return true
}

// FitConfig is a fit: the base setting, the space and its budget.
type FitConfig struct {
	// Base is the setting every point starts from; Base.Hardware.Host
	// must be set (the unknowns are the host's).
	Base virtual.Config
	// D is the arm the observations are of; E and F the predicted arms.
	D, E, F arms.Arm
	Space   []Dim
	Seed    uint64
	// FitSeeds are the trials of D per point (the same seeds at every
	// point); PredictSeeds the trials of each predicted arm.
	FitSeeds, PredictSeeds int
	// Samples is the Latin hypercube's size; Refine the most pattern
	// search polls.
	Samples, Refine int
	// Top is how many of the best points E is also predicted at.
	Top      int
	Parallel int
	Progress func(stage string, done, total int)
}

// Prediction is an arm's trials at the fitted point under one build
// variant.
type Prediction struct {
	// Role is "D", "E" or "F": which of the investigation's arms this is.
	Role, Arm, Variant string
	Trials             []virtual.Summary
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
	// D, E and F at the best point (E and F under each variant).
	Predictions []Prediction
	// TopE is E's median availability, restarts and failovers at the
	// next best points (under the first variant).
	TopE      []TopPrediction
	Evaluated int // trials run
}

// TopPrediction is E at one of the best points.
type TopPrediction struct {
	Point                             Point
	Availability, Restarts, Failovers float64
}

// Fit estimates the unknowns: a Latin hypercube over the space (or every
// point of a small discrete space), then a pattern search from the best
// point; every point runs D on the same seeds, so the search is
// deterministic for its seed. It then predicts E and F at the best point.
func Fit(ctx context.Context, c FitConfig) (*FitResult, error) {
	if c.Base.Hardware.Host == nil {
		return nil, errors.New("the fit needs the host model")
	}
	if c.FitSeeds < 1 || c.PredictSeeds < 1 {
		return nil, errors.New("at least one seed per point")
	}
	r := &FitResult{}
	for _, d := range c.Space {
		if d.Predict {
			r.Predicted = append(r.Predicted, d)
		} else {
			r.Space = append(r.Space, d)
		}
	}
	f := &fitter{c: c, r: r, seen: map[string]int{}}
	if err := f.start(ctx); err != nil {
		return nil, err
	}
	if err := f.refine(ctx); err != nil {
		return nil, err
	}
	r.Best = r.Points[0]
	for _, p := range r.Points[1:] {
		if better(p, r.Best) {
			r.Best = p
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

// eval runs D at every new point, in parallel, and records the points.
func (f *fitter) eval(ctx context.Context, stage string, pts [][]Value) error {
	var jobs []job
	var fresh [][]Value
	for _, p := range pts {
		if _, ok := f.seen[key(p)]; ok || slices.ContainsFunc(fresh, func(q []Value) bool { return key(q) == key(p) }) {
			continue
		}
		s, err := f.setting(f.c.D, p, f.r.Space)
		if err != nil {
			return fmt.Errorf("point %s: %v", f.label(p), err)
		}
		for i := range f.c.FitSeeds {
			jobs = append(jobs, job{cell: len(fresh), arm: s.Arm, cfg: s.Config, seed: f.c.Seed + uint64(i)})
		}
		fresh = append(fresh, p)
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
	trials := make([][]virtual.Summary, len(fresh))
	for i, j := range jobs {
		trials[j.cell] = append(trials[j.cell], out[i])
	}
	for i, p := range fresh {
		pt := Score(trials[i])
		pt.Values = p
		f.seen[key(p)] = len(f.r.Points)
		f.r.Points = append(f.r.Points, pt)
	}
	return nil
}

// Score is the objective of D's trials at a point.
func Score(trials []virtual.Summary) Point {
	var p Point
	for _, o := range Observations {
		v := o.get(trials)
		r := o.Residual(v)
		p.Sim, p.Res = append(p.Sim, v), append(p.Res, r)
		p.Objective += (r / o.Tol) * (r / o.Tol)
	}
	for _, t := range trials {
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

// predict runs D, E and F at the best point (E and F under every value
// of the prediction dimensions), and E at the next best points.
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
	var preds []pred
	preds = append(preds, pred{role: "D", arm: f.c.D, vals: append(slices.Clone(f.r.Best.Values), variants[0]...), dims: dims})
	for ai, a := range []arms.Arm{f.c.E, f.c.F} {
		for _, v := range variants {
			var names []string
			for i, d := range f.r.Predicted {
				names = append(names, strings.TrimPrefix(d.Knob.Name, "param.")+"="+d.Knob.Label(v[i]))
			}
			preds = append(preds, pred{role: []string{"E", "F"}[ai], arm: a, variant: strings.Join(names, " "), vals: append(slices.Clone(f.r.Best.Values), v...), dims: dims})
		}
	}
	// E at the next best points, first variant.
	ranked := slices.Clone(f.r.Points)
	slices.SortStableFunc(ranked, func(a, b Point) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	// The next best points with an objective of their own: refinement
	// around a plateau finds many points D cannot tell apart.
	var top []Point
	objectives := []float64{f.r.Best.Objective}
	for _, p := range ranked {
		if len(top) >= f.c.Top || slices.Contains(objectives, p.Objective) {
			continue
		}
		objectives = append(objectives, p.Objective)
		top = append(top, p)
		preds = append(preds, pred{role: "E", arm: f.c.E, variant: "top", vals: append(slices.Clone(p.Values), variants[0]...), dims: dims})
	}
	var jobs []job
	for i, p := range preds {
		s, err := f.setting(p.arm, p.vals, p.dims)
		if err != nil {
			return err
		}
		n := f.c.PredictSeeds
		if p.variant == "top" {
			n = f.c.FitSeeds
		}
		for k := range n {
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
		if p.variant == "top" {
			m := func(name string) float64 { return mm(name)(trials[i]) }
			f.r.TopE = append(f.r.TopE, TopPrediction{Point: top[len(f.r.TopE)], Availability: m(metric.Availability), Restarts: m(metric.Restarts), Failovers: m(metric.Failovers)})
			continue
		}
		f.r.Predictions = append(f.r.Predictions, Prediction{Role: p.role, Arm: p.arm.Name, Variant: p.variant, Trials: trials[i]})
	}
	return nil
}

// Falls reports whether an arm's trials reproduce E's observed outcome:
// median availability ≤ 0.6, with OOM restarts and failovers in most
// trials.
func Falls(trials []virtual.Summary) bool {
	n := 0
	for _, t := range trials {
		if t.Metrics[metric.Restarts] > 0 && t.Metrics[metric.Failovers] > 0 {
			n++
		}
	}
	return mm(metric.Availability)(trials) <= 0.6 && 2*n > len(trials)
}

// Holds reports whether an arm's trials hold as D and F did: median
// availability > 0.9 and no failover in any trial.
func Holds(trials []virtual.Summary) bool {
	for _, t := range trials {
		if t.Metrics[metric.Failovers] > 0 {
			return false
		}
	}
	return mm(metric.Availability)(trials) > 0.9
}

// Reproduced reports whether the fit reproduces the investigation: D
// matches every observation, and under some build variant E falls while
// F holds.
func (r *FitResult) Reproduced() (bool, string) {
	if !r.Best.Matches() {
		return false, ""
	}
	for _, e := range r.Predictions {
		if e.Role != "E" || !Falls(e.Trials) {
			continue
		}
		for _, f := range r.Predictions {
			if f.Role == "F" && f.Variant == e.Variant && Holds(f.Trials) {
				return true, e.Variant
			}
		}
	}
	return false, ""
}
