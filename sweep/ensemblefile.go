package sweep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/workload"
)

// An ensemble too large for one host runs in shards, as a run does
// (docs/distributed.md): stage 1 by chain (qmlsab calibrate --fit --shard
// i/N writes fit-search.json), a merge of the searches, stage 2 by trial
// (--from the merged search --shard i/N writes fit-predict.json), and a
// merge of those, which is the ensemble. Every file carries the ensemble's
// resolved setting (EnsembleSpec) and its digest, so the hosts need not
// share anything but the files, and a file of another ensemble is refused.

// File schemas.
const (
	SpecSchema     = "qmlsab/fit-spec/v1"
	SearchSchema   = "qmlsab/fit-search/v1"
	PredictSchema  = "qmlsab/fit-predict/v1"
	EnsembleSchema = "qmlsab/fit-ensemble/v1"
)

// File names in an ensemble's folder.
const (
	SearchFileName   = "fit-search.json"
	PredictFileName  = "fit-predict.json"
	EnsembleFileName = "fit.json"
	EnsemblePageName = "fit.html"
)

// MaxFitFileBytes bounds an ensemble file read back: far above any
// ensemble's (a few MB for thousands of points), far below a host's memory.
const MaxFitFileBytes = 256 << 20

// Num64 is a float64 that JSON carries whatever it is: NaN as null, the
// infinities as "+Inf" and "-Inf".
type Num64 float64

// MarshalJSON writes the number, null for NaN, a string for ±Inf.
func (n Num64) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Num64) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*n = Num64(math.NaN())
		return nil
	case `"+Inf"`:
		*n = Num64(math.Inf(1))
		return nil
	case `"-Inf"`:
		*n = Num64(math.Inf(-1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num64(f)
	return nil
}

func nums(xs []float64) []Num64 {
	out := make([]Num64, len(xs))
	for i, x := range xs {
		out[i] = Num64(x)
	}
	return out
}

func floats(xs []Num64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// BaseSpec is the setting every point starts from, as a file has it.
type BaseSpec struct {
	Workload        workload.SpillToDisk `json:"workload"`
	Hardware        model.Hardware       `json:"hardware"`
	ElectionTimeout time.Duration        `json:"election_timeout_ns"`
	RestartDelay    time.Duration        `json:"restart_delay_ns"`
	SampleInterval  time.Duration        `json:"sample_interval_ns"`
}

// RoleSpec is a fitted arm as a file has it.
type RoleSpec struct {
	Name string   `json:"name"`
	Arm  arms.Arm `json:"arm"`
}

// ObservationSpec is an observation as a file has it.
type ObservationSpec struct {
	Arm            string `json:"arm"`
	Name           string `json:"name"`
	Observed       string `json:"observed"`
	Metric         string `json:"metric"`
	Reduce         int    `json:"reduce"`
	Scale          Num64  `json:"scale"`
	Lo             Num64  `json:"lo"`
	Hi             Num64  `json:"hi"`
	Tol            Num64  `json:"tol"`
	Unavail        bool   `json:"unavail,omitempty"`
	Absolute       bool   `json:"absolute,omitempty"`
	Format         string `json:"format"`
	ByConstruction string `json:"by_construction,omitempty"`
}

func observationSpecs(obs []Observation) []ObservationSpec {
	var out []ObservationSpec
	for _, o := range obs {
		out = append(out, ObservationSpec{Arm: o.Arm, Name: o.Name, Observed: o.Observed, Metric: o.Metric, Reduce: int(o.Reduce), Scale: Num64(o.Scale),
			Lo: Num64(o.Lo), Hi: Num64(o.Hi), Tol: Num64(o.Tol), Unavail: o.Unavail, Absolute: o.Absolute, Format: o.Format, ByConstruction: o.ByConstruction})
	}
	return out
}

func observationsOf(specs []ObservationSpec) []Observation {
	var out []Observation
	for _, o := range specs {
		out = append(out, Observation{Arm: o.Arm, Name: o.Name, Observed: o.Observed, Metric: o.Metric, Reduce: investigation.Reduce(o.Reduce), Scale: float64(o.Scale),
			Lo: float64(o.Lo), Hi: float64(o.Hi), Tol: float64(o.Tol), Unavail: o.Unavail, Absolute: o.Absolute, Format: o.Format, ByConstruction: o.ByConstruction})
	}
	return out
}

// DimSpec is an unknown as a file has it: a knob's name and its range or
// values.
type DimSpec struct {
	Knob   string `json:"knob"`
	Lo     Num64  `json:"lo,omitempty"`
	Hi     Num64  `json:"hi,omitempty"`
	Log    bool   `json:"log,omitempty"`
	Values []any  `json:"values,omitempty"`
	Why    string `json:"why,omitempty"`
}

// EnsembleSpec is an ensemble's resolved setting: everything its trials
// depend on, so that every host of a sharded ensemble runs the same one.
type EnsembleSpec struct {
	Schema string `json:"schema"`
	// Source says where the observations came from.
	Source        string            `json:"source"`
	Profile       string            `json:"profile"`
	Base          BaseSpec          `json:"base"`
	Fitted        []RoleSpec        `json:"fitted"`
	Predicted     []arms.Arm        `json:"predicted"`
	Observations  []ObservationSpec `json:"observations"`
	Constraints   []ObservationSpec `json:"constraints,omitempty"`
	Conditions    []string          `json:"conditions"`
	Space         []DimSpec         `json:"space"`
	Seed          uint64            `json:"seed"`
	FitSeeds      int               `json:"fit_seeds"`
	PredictSeeds  int               `json:"predict_seeds"`
	Samples       int               `json:"samples"`
	Starts        int               `json:"starts"`
	Steps         int               `json:"steps"`
	MinAcceptable int               `json:"min_acceptable"`
	Explore       int               `json:"explore"`
	PredictPoints int               `json:"predict_points"`
}

// Spec is the ensemble's resolved setting. Every condition must be one of
// investigation.FAcceptance's (by name), every unknown a knob of the
// namespace.
func (c EnsembleConfig) Spec(source, profile string) (EnsembleSpec, error) {
	s := EnsembleSpec{Schema: SpecSchema, Source: source, Profile: profile, Seed: c.Seed, FitSeeds: c.FitSeeds, PredictSeeds: c.PredictSeeds,
		Samples: c.Samples, Starts: c.Starts, Steps: c.Steps, MinAcceptable: c.MinAcceptable, Explore: c.Explore, PredictPoints: c.PredictPoints,
		Base: BaseSpec{Workload: c.Base.Workload, Hardware: c.Base.Hardware, ElectionTimeout: c.Base.ElectionTimeout, RestartDelay: c.Base.RestartDelay,
			SampleInterval: c.Base.SampleInterval},
		Predicted: c.Predicted, Observations: observationSpecs(c.Observations), Constraints: observationSpecs(c.Constraints)}
	for _, r := range c.Fitted {
		s.Fitted = append(s.Fitted, RoleSpec{Name: r.Name, Arm: r.Arm})
	}
	for _, cond := range c.Conditions {
		if !slices.ContainsFunc(investigation.FAcceptance, func(f investigation.Condition) bool { return f.Name == cond.Name }) {
			return s, fmt.Errorf("condition %q is not one of the investigation's acceptance", cond.Name)
		}
		s.Conditions = append(s.Conditions, cond.Name)
	}
	for _, d := range c.Space {
		if _, ok := LookupKnob(d.Knob.Name); !ok {
			return s, fmt.Errorf("unknown %s is not a knob of the namespace", d.Knob.Name)
		}
		ds := DimSpec{Knob: d.Knob.Name, Log: d.Log, Why: d.Why}
		if d.Values != nil {
			for _, v := range d.Values {
				ds.Values = append(ds.Values, v.Any())
			}
		} else {
			ds.Lo, ds.Hi = Num64(d.Lo), Num64(d.Hi)
		}
		s.Space = append(s.Space, ds)
	}
	// A spec is what a file reads back: go through the file's form now,
	// so that one host runs exactly what a shard would.
	b, err := json.Marshal(s)
	if err != nil {
		return s, err
	}
	var back EnsembleSpec
	if err := json.Unmarshal(b, &back); err != nil {
		return s, err
	}
	return back, nil
}

// Digest is the SHA-256 of the spec's JSON: equal digests, one ensemble.
func (s EnsembleSpec) Digest() string {
	b, err := json.Marshal(s)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Config is the ensemble the spec describes (Progress and Parallel are
// the caller's).
func (s EnsembleSpec) Config() (EnsembleConfig, error) {
	if s.Schema != SpecSchema {
		return EnsembleConfig{}, fmt.Errorf("schema %q, want %s", s.Schema, SpecSchema)
	}
	base := virtual.DefaultConfig(s.Seed)
	base.Workload, base.Hardware = s.Base.Workload, s.Base.Hardware
	base.ElectionTimeout, base.RestartDelay, base.SampleInterval = s.Base.ElectionTimeout, s.Base.RestartDelay, s.Base.SampleInterval
	base.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := EnsembleConfig{Base: base, Predicted: s.Predicted, Observations: observationsOf(s.Observations), Constraints: observationsOf(s.Constraints),
		Seed: s.Seed, FitSeeds: s.FitSeeds, PredictSeeds: s.PredictSeeds, Samples: s.Samples, Starts: s.Starts, Steps: s.Steps,
		MinAcceptable: s.MinAcceptable, Explore: s.Explore, PredictPoints: s.PredictPoints}
	for _, r := range s.Fitted {
		c.Fitted = append(c.Fitted, Role{Name: r.Name, Arm: r.Arm})
	}
	for _, name := range s.Conditions {
		i := slices.IndexFunc(investigation.FAcceptance, func(f investigation.Condition) bool { return f.Name == name })
		if i < 0 {
			return c, fmt.Errorf("condition %q is not one of the investigation's acceptance", name)
		}
		c.Conditions = append(c.Conditions, investigation.FAcceptance[i])
	}
	for _, ds := range s.Space {
		k, ok := LookupKnob(ds.Knob)
		if !ok {
			return c, fmt.Errorf("unknown %s is not a knob of the namespace", ds.Knob)
		}
		d := Dim{Knob: k, Lo: float64(ds.Lo), Hi: float64(ds.Hi), Log: ds.Log, Why: ds.Why}
		for _, v := range ds.Values {
			val, err := valueOf(v)
			if err != nil {
				return c, fmt.Errorf("unknown %s: %w", ds.Knob, err)
			}
			d.Values = append(d.Values, val)
		}
		c.Space = append(c.Space, d)
	}
	return c, c.Validate()
}

// valueOf reads a value as JSON decoded it: a string or a number.
func valueOf(v any) (Value, error) {
	switch x := v.(type) {
	case string:
		return Str(x), nil
	case float64:
		return Num(x), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return Num(f), err
	}
	return Value{}, fmt.Errorf("value %v is neither a string nor a number", v)
}

// PointSpec is an evaluated point as a file has it.
type PointSpec struct {
	Values        []any   `json:"values"`
	Chain         int     `json:"chain"`
	Seq           int     `json:"seq"`
	Sim           []Num64 `json:"sim"`
	ConstraintSim []Num64 `json:"constraint_sim,omitempty"`
}

func pointSpecs(pts []EnsemblePoint) []PointSpec {
	out := make([]PointSpec, len(pts))
	for i, p := range pts {
		var vals []any
		for _, v := range p.Values {
			vals = append(vals, v.Any())
		}
		out[i] = PointSpec{Values: vals, Chain: p.Chain, Seq: p.Seq, Sim: nums(p.Sim), ConstraintSim: nums(p.ConstraintSim)}
	}
	return out
}

// points reads points back and scores them.
func (c *EnsembleConfig) points(specs []PointSpec) ([]EnsemblePoint, error) {
	out := make([]EnsemblePoint, len(specs))
	for i, ps := range specs {
		if len(ps.Values) != len(c.Space) || len(ps.Sim) != len(c.Observations) || len(ps.ConstraintSim) != len(c.Constraints) {
			return nil, fmt.Errorf("point %d: %d values, %d figures and %d constraint figures, want %d, %d and %d", i+1,
				len(ps.Values), len(ps.Sim), len(ps.ConstraintSim), len(c.Space), len(c.Observations), len(c.Constraints))
		}
		p := EnsemblePoint{Chain: ps.Chain, Seq: ps.Seq, Sim: floats(ps.Sim), ConstraintSim: floats(ps.ConstraintSim)}
		for _, v := range ps.Values {
			val, err := valueOf(v)
			if err != nil {
				return nil, fmt.Errorf("point %d: %w", i+1, err)
			}
			p.Values = append(p.Values, val)
		}
		c.score(&p)
		out[i] = p
	}
	return out, nil
}

// SearchFile is stage 1's output: one shard's chains, or every chain
// (a merge, or one host).
type SearchFile struct {
	Schema string       `json:"schema"`
	Digest string       `json:"digest"`
	Spec   EnsembleSpec `json:"spec"`
	// Shard is the shard's place; nil for every chain.
	Shard *plan.Shard `json:"shard,omitempty"`
	// Shards is how many shards a merge put together.
	Shards      int         `json:"shards,omitempty"`
	Points      []PointSpec `json:"points"`
	Trials      int         `json:"trials"`
	WallSeconds float64     `json:"wall_seconds"`
}

// PredictFile is stage 2's output for one shard: the merged search it
// planned from (Points) and its trials' figures by job.
type PredictFile struct {
	Schema       string       `json:"schema"`
	Digest       string       `json:"digest"`
	Spec         EnsembleSpec `json:"spec"`
	PlanDigest   string       `json:"plan_digest"`
	Points       []PointSpec  `json:"points"`
	SearchTrials int          `json:"search_trials"`
	// SearchWallSeconds is the search's wall time (its longest shard's).
	SearchWallSeconds float64      `json:"search_wall_seconds"`
	Shard             plan.Shard   `json:"shard"`
	Figures           []JobFigures `json:"figures"`
	Trials            int          `json:"trials"`
	WallSeconds       float64      `json:"wall_seconds"`
}

// JobFigures are one stage-2 trial's figures.
type JobFigures struct {
	Job     int                `json:"job"`
	Metrics map[string]float64 `json:"metrics"`
}

// Digest is the plan's SHA-256: its cells and trials.
func (pl Plan) Digest() string {
	h := sha256.New()
	for _, c := range pl.Cells {
		fmt.Fprintf(h, "%s\n", c.Key)
	}
	for _, j := range pl.Jobs {
		fmt.Fprintf(h, "%d %d\n", j.Cell, j.Seed)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CheckShard refuses a shard a search of starts chains cannot have.
func CheckShard(s plan.Shard, starts int) error {
	switch {
	case !s.Valid():
		return fmt.Errorf("shard %s: want i/N with 1 ≤ i ≤ N", s)
	case s.Count > starts:
		return field.Errorf("", nil, "shard %s: the search has %d chains (%v), so at most %d shards", s, starts, field.Ref(FieldStarts), starts)
	}
	return nil
}

// RunSearch runs stage 1 for one shard's chains (every chain when shard
// is nil). parallel and progress are as EnsembleConfig's.
func (s EnsembleSpec) RunSearch(ctx context.Context, shard *plan.Shard, parallel int, progress func(stage string, done, total int)) (SearchFile, error) {
	start := time.Now()
	c, err := s.Config()
	if err != nil {
		return SearchFile{}, err
	}
	c.Parallel, c.Progress = parallel, progress
	var mine func(int) bool
	if shard != nil {
		if err := CheckShard(*shard, c.Starts); err != nil {
			return SearchFile{}, err
		}
		mine = shard.Has
	}
	pts, ev, err := c.Search(ctx, mine)
	if err != nil {
		return SearchFile{}, err
	}
	return SearchFile{Schema: SearchSchema, Digest: s.Digest(), Spec: s, Shard: shard, Points: pointSpecs(Canonical(pts)), Trials: ev.Trials,
		WallSeconds: time.Since(start).Seconds()}, nil
}

// DecodeSearch reads a fit-search.json, refusing another schema or a
// spec that does not match its digest.
func DecodeSearch(b []byte) (SearchFile, error) {
	var f SearchFile
	if err := decodeFit(b, &f); err != nil {
		return f, err
	}
	if f.Schema != SearchSchema {
		return f, fmt.Errorf("schema %q, want %s (a search shard or merged search)", f.Schema, SearchSchema)
	}
	if d := f.Spec.Digest(); d != f.Digest {
		return f, fmt.Errorf("its setting's digest is %s but the file says %s: the file was changed", shortDigest(d), shortDigest(f.Digest))
	}
	return f, nil
}

// DecodePredict reads a fit-predict.json, refusing another schema or a
// spec that does not match its digest.
func DecodePredict(b []byte) (PredictFile, error) {
	var f PredictFile
	if err := decodeFit(b, &f); err != nil {
		return f, err
	}
	if f.Schema != PredictSchema {
		return f, fmt.Errorf("schema %q, want %s (a prediction shard)", f.Schema, PredictSchema)
	}
	if d := f.Spec.Digest(); d != f.Digest {
		return f, fmt.Errorf("its setting's digest is %s but the file says %s: the file was changed", shortDigest(d), shortDigest(f.Digest))
	}
	return f, nil
}

// FileSchema is the schema a fit file says it has ("" when it is not a
// JSON object with one).
func FileSchema(b []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(b, &head) != nil {
		return ""
	}
	return head.Schema
}

func decodeFit(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("corrupt or truncated: %w", err)
	}
	if dec.More() {
		return errors.New("corrupt: trailing data after the document")
	}
	return nil
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// checkShards refuses a set of shards that is not exactly 1…N of one
// ensemble: names are the files, for the messages.
func checkShards(names []string, digests []string, shards []*plan.Shard) error {
	if len(names) == 0 {
		return errors.New("no shard given")
	}
	n := 0
	seen := map[int]string{}
	for i, s := range shards {
		if s == nil {
			return fmt.Errorf("%s: not a shard (it holds every chain already)", names[i])
		}
		if digests[i] != digests[0] {
			return fmt.Errorf("%s: a shard of another ensemble than %s (setting digest %s, not %s): every shard must be run with the same flags",
				names[i], names[0], shortDigest(digests[i]), shortDigest(digests[0]))
		}
		if n == 0 {
			n = s.Count
		}
		if s.Count != n {
			return fmt.Errorf("%s: shard %s, but %s is one of %d", names[i], s, names[0], n)
		}
		if prev, ok := seen[s.Index]; ok {
			return fmt.Errorf("%s: shard %s is given twice (also %s)", names[i], s, prev)
		}
		seen[s.Index] = names[i]
	}
	for i := 1; i <= n; i++ {
		if _, ok := seen[i]; !ok {
			return fmt.Errorf("shard %d/%d is missing: give every shard's folder", i, n)
		}
	}
	return nil
}

// MergeSearch puts stage 1's shards together: every shard 1…N of one
// ensemble, once.
func MergeSearch(names []string, files []SearchFile) (SearchFile, error) {
	var digests []string
	var shards []*plan.Shard
	for _, f := range files {
		digests, shards = append(digests, f.Digest), append(shards, f.Shard)
	}
	if err := checkShards(names, digests, shards); err != nil {
		return SearchFile{}, err
	}
	c, err := files[0].Spec.Config()
	if err != nil {
		return SearchFile{}, fmt.Errorf("%s: %w", names[0], err)
	}
	var all []EnsemblePoint
	out := SearchFile{Schema: SearchSchema, Digest: files[0].Digest, Spec: files[0].Spec, Shards: len(files)}
	for i, f := range files {
		pts, err := c.points(f.Points)
		if err != nil {
			return SearchFile{}, fmt.Errorf("%s: %w", names[i], err)
		}
		for _, p := range pts {
			if !f.Shard.Has(p.Chain) {
				return SearchFile{}, fmt.Errorf("%s: a point of chain %d, which shard %s does not run", names[i], p.Chain, f.Shard)
			}
		}
		all = append(all, pts...)
		out.Trials += f.Trials
		out.WallSeconds = max(out.WallSeconds, f.WallSeconds)
	}
	out.Points = pointSpecs(Canonical(all))
	return out, nil
}

// RunPredict runs one shard's trials of stage 2 from a merged (or
// one-host) search.
func (search SearchFile) RunPredict(ctx context.Context, shard plan.Shard, parallel int, progress func(stage string, done, total int)) (PredictFile, error) {
	start := time.Now()
	if search.Shard != nil {
		return PredictFile{}, fmt.Errorf("the search is shard %s; merge the search's shards first", search.Shard)
	}
	c, err := search.Spec.Config()
	if err != nil {
		return PredictFile{}, err
	}
	c.Parallel, c.Progress = parallel, progress
	pts, err := c.points(search.Points)
	if err != nil {
		return PredictFile{}, err
	}
	pl := c.Plan(pts)
	if shard.Count < 1 || shard.Index < 1 || shard.Index > shard.Count {
		return PredictFile{}, fmt.Errorf("shard %s: want i/N with 1 ≤ i ≤ N", shard)
	}
	if shard.Count > max(len(pl.Jobs), 1) {
		return PredictFile{}, fmt.Errorf("shard %s: stage 2 has %d trials, so at most %d shards", shard, len(pl.Jobs), max(len(pl.Jobs), 1))
	}
	figs, n, err := c.RunPlan(ctx, pl, shard.Has)
	if err != nil {
		return PredictFile{}, err
	}
	out := PredictFile{Schema: PredictSchema, Digest: search.Digest, Spec: search.Spec, PlanDigest: pl.Digest(), Points: search.Points,
		SearchTrials: search.Trials, SearchWallSeconds: search.WallSeconds, Shard: shard, Trials: n, WallSeconds: time.Since(start).Seconds()}
	for j := range pl.Jobs {
		if m, ok := figs[j]; ok {
			out.Figures = append(out.Figures, JobFigures{Job: j, Metrics: m})
		}
	}
	return out, nil
}

// RunOne is the whole ensemble on one host, through the same files a
// sharded one writes: stage 1 for every chain, stage 2 as its only shard.
func (s EnsembleSpec) RunOne(ctx context.Context, parallel int, progress func(stage string, done, total int)) (*Ensemble, error) {
	search, err := s.RunSearch(ctx, nil, parallel, progress)
	if err != nil {
		return nil, err
	}
	pred, err := search.RunPredict(ctx, plan.Shard{Index: 1, Count: 1}, parallel, progress)
	if err != nil {
		return nil, err
	}
	en, _, err := MergePredict([]string{"this host"}, []PredictFile{pred})
	return en, err
}

// MergePredict puts stage 2's shards together into the ensemble.
func MergePredict(names []string, files []PredictFile) (*Ensemble, EnsembleSpec, error) {
	var digests []string
	var shards []*plan.Shard
	for i := range files {
		digests, shards = append(digests, files[i].Digest), append(shards, &files[i].Shard)
	}
	if err := checkShards(names, digests, shards); err != nil {
		return nil, EnsembleSpec{}, err
	}
	for i, f := range files {
		if f.PlanDigest != files[0].PlanDigest {
			return nil, EnsembleSpec{}, fmt.Errorf("%s: planned from another search than %s (plan digest %s, not %s): every shard must be planned from the same merged search",
				names[i], names[0], shortDigest(f.PlanDigest), shortDigest(files[0].PlanDigest))
		}
	}
	c, err := files[0].Spec.Config()
	if err != nil {
		return nil, EnsembleSpec{}, fmt.Errorf("%s: %w", names[0], err)
	}
	pts, err := c.points(files[0].Points)
	if err != nil {
		return nil, EnsembleSpec{}, fmt.Errorf("%s: %w", names[0], err)
	}
	pl := c.Plan(pts)
	if pl.Digest() != files[0].PlanDigest {
		return nil, EnsembleSpec{}, fmt.Errorf("%s: its plan digest does not match its search's plan: the file was changed", names[0])
	}
	figs := map[int]map[string]float64{}
	trials := files[0].SearchTrials
	var wall float64
	for i, f := range files {
		wall = max(wall, f.WallSeconds)
		for _, jf := range f.Figures {
			if jf.Job < 0 || jf.Job >= len(pl.Jobs) || !f.Shard.Has(jf.Job) {
				return nil, EnsembleSpec{}, fmt.Errorf("%s: trial %d is not one of shard %s's", names[i], jf.Job+1, f.Shard)
			}
			figs[jf.Job] = jf.Metrics
		}
		trials += f.Trials
	}
	en, err := c.Finish(pts, pl, figs, trials)
	if err != nil {
		return nil, EnsembleSpec{}, err
	}
	en.WallSeconds = files[0].SearchWallSeconds + wall
	return en, files[0].Spec, nil
}
