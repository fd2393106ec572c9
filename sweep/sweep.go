// Package sweep runs the virtual-time model over a grid of settings — of
// the model's host and hardware, the workload, an arm's server parameters
// or its killOp actor, named in one namespace (Knobs) — for each of a few
// arms and seeds, and writes what each cell's trials measured (sweep.json)
// and heatmaps of it (sweep.html). It also fits the model's unknowns to
// observations — the sweeper investigation's, or a run's — over the same
// namespace: every setting the observations allow and the other arms'
// predictions across them (the ensemble, calibrate --fit; ensemble.go),
// and the single best point it replaced (Fit). Every figure is a
// simulation.
package sweep

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/internal/parallel"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/workload"
)

// Schema is sweep.json's schema version.
const Schema = "qmlsab/sweep/v1"

// Note is what every sweep output says about its numbers.
const Note = "SIMULATED: every figure is the median of virtual-time trials of mongosim's model of mongod, not a measurement of a real server"

// MapMetrics are the metrics a sweep draws, in order.
var MapMetrics = []string{metric.Availability, metric.Failovers, metric.RSSPeakBytes, metric.ServerShedsMinusAdmissions}

// Config is a sweep: the arms, the base setting every cell starts from,
// the axes and the seeds.
type Config struct {
	Arms []arms.Arm
	// Base is the engine's configuration every cell starts from: hardware
	// (with Hardware.Host for the host model) and workload (phases already
	// scaled by the profile).
	Base virtual.Config
	Axes []Axis
	// Fixed are settings every cell takes before the axes' (--set): each
	// a knob with one value. The arms' defaults the page marks are the
	// base's with these applied.
	Fixed []Axis
	Seed  uint64 // first seed; a cell runs Seed … Seed+Seeds−1
	Seeds int
	// Parallel is how many trials run at once (0: every CPU).
	Parallel int
	// Progress, when set, hears after every finished trial.
	Progress func(done, total int)
}

// Cell is one grid point of one arm.
type Cell struct {
	Arm string `json:"arm"`
	// Index is the cell's position on each axis.
	Index []int `json:"index"`
	// Values are the axes' values at the cell (numbers or strings).
	Values []any `json:"values"`
	// Applied is false when no axis changes this arm (a shedding
	// parameter on an arm that does not shed): its cells repeat the
	// arm's default.
	Applied bool           `json:"applied"`
	Trials  []TrialMetrics `json:"trials"`
	// Median, Min and Max of each metric over the cell's trials that
	// have it.
	Median map[string]float64 `json:"median"`
	Min    map[string]float64 `json:"min"`
	Max    map[string]float64 `json:"max"`
}

// TrialMetrics is one trial's metrics (metric.Summarize, derived ones such
// as metric.ServerShedsMinusAdmissions included, and the engine's own restart count).
type TrialMetrics struct {
	Seed    uint64             `json:"seed"`
	Metrics map[string]float64 `json:"metrics"`
}

// AxisOut is an axis as sweep.json has it.
type AxisOut struct {
	Name   string   `json:"name"`
	Doc    string   `json:"doc"`
	Unit   string   `json:"unit"`
	Flag   string   `json:"flag"`
	Values []any    `json:"values"`
	Labels []string `json:"labels"`
	// Defaults are each arm's value of the knob before the sweep (absent
	// for arms the knob does not apply to); DefaultIndex is the grid
	// point nearest to it when it lies within the grid, else −1.
	Defaults     map[string]any `json:"defaults"`
	DefaultIndex map[string]int `json:"default_index"`
}

// ArmOut is an arm as sweep.json has it.
type ArmOut struct {
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	Build         string            `json:"build"`
	SetParameters map[string]string `json:"set_parameters"`
	KillOp        bool              `json:"killop"`
}

// MetricOut describes a drawn metric.
type MetricOut struct {
	Name       string `json:"name"`
	Title      string `json:"title"`
	Unit       string `json:"unit"`
	Better     int    `json:"better"`
	Definition string `json:"definition"`
}

// Result is a finished sweep: sweep.json.
type Result struct {
	Schema      string    `json:"schema"`
	Simulated   bool      `json:"simulated"`
	Note        string    `json:"note"`
	ToolVersion string    `json:"tool_version"`
	Created     time.Time `json:"created"`
	CommandLine []string  `json:"command_line,omitempty"`
	Profile     string    `json:"profile"`
	HostModel   bool      `json:"host_model"`
	Workload    Workload  `json:"workload"`
	Seeds       []uint64  `json:"seeds"`
	Arms        []ArmOut  `json:"arms"`
	Axes        []AxisOut `json:"axes"`
	// Fixed are the --set values every cell took.
	Fixed   map[string]any `json:"fixed,omitempty"`
	Metrics []MetricOut    `json:"metrics"`
	Cells   []Cell         `json:"cells"`
	// Trials is how many trials ran; WallSeconds how long they took;
	// Parallel how many ran at once.
	Trials       int     `json:"trials"`
	WallSeconds  float64 `json:"wall_seconds"`
	TrialsPerSec float64 `json:"trials_per_s"`
	Parallel     int     `json:"parallel"`
}

// Workload is the base workload's shape as sweep.json records it.
type Workload struct {
	StormRate      float64 `json:"storm_rate"`
	WarmupSeconds  float64 `json:"warmup_s"`
	StormSeconds   float64 `json:"storm_s"`
	RecoverySecond float64 `json:"recovery_s"`
}

// Fields of a Config, as this package's errors name them
// (internal/field): a command maps each to the flag that sets it.
const (
	FieldArms     = "Config.Arms"
	FieldSeeds    = "Config.Seeds"
	FieldAxes     = "Config.Axes"
	FieldFixed    = "Config.Fixed"
	FieldParallel = "Config.Parallel"
	// FieldStarts is EnsembleConfig.Starts (the search's chains), which a
	// shard of the search is checked against.
	FieldStarts = "EnsembleConfig.Starts"
)

// Validate checks a sweep's shape and builds every cell's setting once,
// so a value the model, the workload or an arm refuses is an error before
// any trial runs. Errors are *field.Error, naming the Config field and
// the axis's own text ("Config.Axes hw.cpus=4,8: …"), which a command
// names by its flag.
func (c Config) Validate() error {
	switch {
	case len(c.Arms) == 0:
		return field.Errorf(FieldArms, nil, "no arm")
	case c.Seeds < 1:
		return field.Errorf(FieldSeeds, c.Seeds, "at least one trial per cell")
	case len(c.Axes) == 0:
		return field.Errorf(FieldAxes, nil, "give one or two")
	case len(c.Axes) > MaxAxes:
		return field.Errorf(FieldAxes, nil, "%d given; at most %d (a line for one, a heatmap for two)", len(c.Axes), MaxAxes)
	case c.Parallel < 0:
		return field.Errorf(FieldParallel, c.Parallel, "must not be negative")
	}
	for i, f := range c.Fixed {
		if len(f.Values) != 1 {
			return field.Errorf(FieldFixed, f.Spec, "one value")
		}
		for _, g := range c.Fixed[:i] {
			if f.Knob.Name == g.Knob.Name {
				return field.Errorf(FieldFixed, f.Spec, "%s is set twice", f.Knob.Name)
			}
		}
		for _, a := range c.Axes {
			if f.Knob.Name == a.Knob.Name {
				return field.Errorf(FieldFixed, f.Spec, "%s is also varied", f.Knob.Name)
			}
		}
	}
	for i, a := range c.Axes {
		for _, b := range c.Axes[:i] {
			if a.Knob.Name == b.Knob.Name {
				return field.Errorf(FieldAxes, a.Spec, "%s is varied twice", a.Knob.Name)
			}
		}
	}
	for _, a := range c.Arms {
		if !a.Embedded() {
			return field.Errorf(FieldArms, nil, "arm %s runs on the %s target; a sweep runs the model only", a.Name, a.Target)
		}
	}
	_, err := c.settings()
	return err
}

// job is one trial to run.
type job struct {
	cell int
	arm  arms.Arm
	cfg  virtual.Config
	seed uint64
}

// grid returns every grid point's axis indices, the first axis slowest.
func (c Config) grid() [][]int {
	pts := [][]int{{}}
	for _, ax := range c.Axes {
		var next [][]int
		for _, p := range pts {
			for i := range ax.Values {
				next = append(next, append(slices.Clone(p), i))
			}
		}
		pts = next
	}
	return pts
}

// settings builds every (arm, grid point) setting, in cell order: arms
// outermost.
func (c Config) settings() ([]Setting, error) {
	var out []Setting
	for _, a := range c.Arms {
		for _, idx := range c.grid() {
			s, err := c.setting(a, idx)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// setting is arm a's setting at a grid point, checked as a trial would
// check it.
func (c Config) setting(a arms.Arm, idx []int) (Setting, error) {
	s, err := c.fixed(a)
	if err != nil {
		return s, err
	}
	for i, ax := range c.Axes {
		if !ax.Knob.AppliesTo(a) {
			continue
		}
		v := ax.Values[idx[i]]
		if err := ax.Knob.set(&s, v); err != nil {
			return s, field.Errorf(FieldAxes, ax.Spec, "arm %s: %v", a.Name, err)
		}
	}
	if err := check(s); err != nil {
		return s, field.Errorf(FieldAxes, axesSpec(c.Axes), "arm %s at %s: %v", a.Name, pointLabel(c.Axes, idx), err)
	}
	return s, nil
}

// check refuses a setting a trial would refuse, before it runs.
func check(s Setting) error {
	spec := workload.Spec{Name: workload.KindSpillToDisk, Kind: workload.KindSpillToDisk, SpillToDisk: &s.Config.Workload}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("workload: %v", err)
	}
	if _, err := model.ParamsFrom(s.Arm.SetParameters); err != nil {
		return err
	}
	if h := s.Config.Hardware.Host; h != nil {
		mem := s.Config.Hardware.WithDefaults().MemLimitBytes
		if h.OtherProcessBytes+h.KernelBytes+h.MongodBaseBytes >= mem {
			return fmt.Errorf("host memory outside mongod (%s) and mongod's base (%s) fill the machine's %s",
				units.HumanBytes(float64(h.OtherProcessBytes+h.KernelBytes)), units.HumanBytes(float64(h.MongodBaseBytes)), units.HumanBytes(float64(mem)))
		}
		if h.DirtyBackgroundRatio >= h.DirtyRatio {
			return fmt.Errorf("host.dirtyBackgroundRatio (%v) must be below host.dirtyRatio (%v)", h.DirtyBackgroundRatio, h.DirtyRatio)
		}
	}
	return nil
}

// fixed is arm a's setting with the Fixed values applied.
func (c Config) fixed(a arms.Arm) (Setting, error) {
	s := Setting{Config: c.Base, Arm: a}.clone()
	for _, f := range c.Fixed {
		if !f.Knob.AppliesTo(a) {
			continue
		}
		if err := f.Knob.set(&s, f.Values[0]); err != nil {
			return s, field.Errorf(FieldFixed, f.Spec, "arm %s: %v", a.Name, err)
		}
	}
	return s, nil
}

func axesSpec(axes []Axis) string {
	var s []string
	for _, a := range axes {
		s = append(s, a.Spec)
	}
	return fmt.Sprint(s)
}

func pointLabel(axes []Axis, idx []int) string {
	var s []string
	for i, a := range axes {
		s = append(s, a.Knob.Name+"="+a.Knob.Label(a.Values[idx[i]]))
	}
	return fmt.Sprint(s)
}

// Run runs every cell's trials, at most Parallel at once, and returns the
// result. It stops within a trial's check interval when ctx ends, and
// returns ctx's error.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	settings, _ := c.settings()
	pts := c.grid()
	res := &Result{Schema: Schema, Simulated: true, Note: Note, Created: time.Now().UTC(), HostModel: c.Base.Hardware.Host != nil}
	w := c.Base.Workload
	res.Workload = Workload{StormRate: w.StormRate, WarmupSeconds: w.Phases.Warmup.Seconds(), StormSeconds: w.Phases.Storm.Seconds(), RecoverySecond: w.Phases.Recovery.Seconds()}
	for i := range c.Seeds {
		res.Seeds = append(res.Seeds, c.Seed+uint64(i))
	}
	for _, a := range c.Arms {
		res.Arms = append(res.Arms, ArmOut{Name: a.Name, Description: a.Description, Build: a.Build, SetParameters: a.SetParameters, KillOp: a.KillOp() != nil})
	}
	for _, ax := range c.Axes {
		res.Axes = append(res.Axes, axisOut(ax, c))
	}
	for _, f := range c.Fixed {
		if res.Fixed == nil {
			res.Fixed = map[string]any{}
		}
		res.Fixed[f.Knob.Name] = f.Values[0].Any()
	}
	for _, name := range MapMetrics {
		res.Metrics = append(res.Metrics, metricOut(name))
	}
	var jobs []job
	for i, s := range settings {
		a := c.Arms[i/len(pts)]
		cell := Cell{Arm: a.Name, Index: pts[i%len(pts)], Median: map[string]float64{}, Min: map[string]float64{}, Max: map[string]float64{}}
		for k, ax := range c.Axes {
			cell.Values = append(cell.Values, ax.Values[cell.Index[k]].Any())
			cell.Applied = cell.Applied || ax.Knob.AppliesTo(a)
		}
		res.Cells = append(res.Cells, cell)
		for _, seed := range res.Seeds {
			jobs = append(jobs, job{cell: i, arm: s.Arm, cfg: s.Config, seed: seed})
		}
	}
	start := time.Now()
	out, err := runJobs(ctx, jobs, c.Parallel, c.Progress)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		res.Cells[j.cell].Trials = append(res.Cells[j.cell].Trials, TrialMetrics{Seed: j.seed, Metrics: out[i].Metrics})
	}
	for i := range res.Cells {
		aggregate(&res.Cells[i])
	}
	res.Trials = len(jobs)
	res.Parallel = parallelism(c.Parallel)
	res.WallSeconds = time.Since(start).Seconds()
	if res.WallSeconds > 0 {
		res.TrialsPerSec = float64(res.Trials) / res.WallSeconds
	}
	return res, nil
}

// TuneGC makes the collector run less often while trials run and returns
// what restores it: a trial allocates fast and keeps little, and with the
// default the collector takes about a third of the CPU. GOGC, when set,
// wins.
func TuneGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(old) }
}

func parallelism(p int) int {
	if p > 0 {
		return p
	}
	return runtime.GOMAXPROCS(0)
}

// runJobs runs trials, at most limit at once (0: one per CPU), and
// summarizes each; the results are in job order whatever the scheduling,
// so a sweep is deterministic for its seeds. The first trial to fail
// stops the sweep (no trial starts after it) and is its error.
func runJobs(ctx context.Context, jobs []job, limit int, progress func(done, total int)) ([]virtual.Summary, error) {
	var done atomic.Int64
	out, err := parallel.Map(ctx, len(jobs), parallelism(limit), func(ctx context.Context, i int) (virtual.Summary, error) {
		j := jobs[i]
		cfg := j.cfg
		cfg.Seed = j.seed
		t, err := virtual.Run(ctx, cfg, j.arm)
		if err != nil {
			return virtual.Summary{}, err
		}
		sum := virtual.Summarize(j.arm.Name, j.seed, t)
		if progress != nil {
			progress(int(done.Add(1)), len(jobs))
		}
		return sum, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// aggregate is each metric's median, minimum and maximum over the
// cell's trials that have it.
func aggregate(c *Cell) {
	names := map[string]bool{}
	for _, t := range c.Trials {
		for k := range t.Metrics {
			names[k] = true
		}
	}
	for k := range names {
		var xs []float64
		for _, t := range c.Trials {
			if v, ok := t.Metrics[k]; ok {
				xs = append(xs, v)
			}
		}
		c.Median[k], c.Min[k], c.Max[k] = metric.Median(xs), slices.Min(xs), slices.Max(xs)
	}
}

func axisOut(ax Axis, c Config) AxisOut {
	o := AxisOut{Name: ax.Knob.Name, Doc: ax.Knob.Doc, Unit: ax.Knob.Unit, Flag: ax.Spec, Defaults: map[string]any{}, DefaultIndex: map[string]int{}}
	for _, v := range ax.Values {
		o.Values = append(o.Values, v.Any())
		o.Labels = append(o.Labels, ax.Knob.Label(v))
	}
	for _, a := range c.Arms {
		if !ax.Knob.AppliesTo(a) {
			continue
		}
		s, _ := c.fixed(a)
		d := ax.Knob.get(&s)
		o.Defaults[a.Name] = d.Any()
		o.DefaultIndex[a.Name] = nearest(ax.Values, d)
	}
	return o
}

// nearest is the index of the grid value nearest to d when d lies within
// the grid's span (for choices: equal to d), else −1.
func nearest(vals []Value, d Value) int {
	if d.IsStr {
		return slices.IndexFunc(vals, d.Equal)
	}
	lo, hi := vals[0].Num, vals[len(vals)-1].Num
	for _, v := range vals {
		lo, hi = min(lo, v.Num), max(hi, v.Num)
	}
	if d.Num < lo || d.Num > hi || vals[0].IsStr {
		return -1
	}
	best := 0
	for i, v := range vals {
		if abs(v.Num-d.Num) < abs(vals[best].Num-d.Num) {
			best = i
		}
	}
	return best
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func metricOut(name string) MetricOut {
	m := metric.Lookup(name)
	return MetricOut{Name: m.Name, Title: m.Title, Unit: m.Unit, Better: m.Better, Definition: m.Definition}
}
