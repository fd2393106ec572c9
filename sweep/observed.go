package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// ObservedFigure is a figure a run's arm is fitted by (calibrate --fit
// --observed): a metric of the registry, its median over the arm's valid
// trials, and the smallest tolerance it takes.
type ObservedFigure struct {
	Metric string
	Name   string
	Format string
	// Floor is the tolerance's least absolute value (a figure of trials
	// that all agree still has the model's seed to allow for).
	Floor float64
}

// ObservedFigures are the figures a run gives the fit, each arm's, where
// the run has them: what the model answers for any arm (its admission
// flows, tickets, kills, sheds, memory and outcome).
var ObservedFigures = []ObservedFigure{
	{metric.Availability, "availability", "%.3f", 0.01},
	{metric.Failovers, "failovers", "%.1f", 0.5},
	{metric.Restarts, "OOM restarts", "%.1f", 0.5},
	{metric.AdmissionsPerS, "low-pri admissions/s", "%.1f", 1},
	{metric.KillsPerS, "low-pri queue kills/s", "%.1f", 1},
	{metric.ReadTicketsMed, "read tickets (median)", "%.1f", 1},
	{metric.ServerShedsPerS, "server sheds/s", "%.1f", 1},
	{metric.ActorKillsPerS, "actor kills/s", "%.1f", 1},
	{metric.LowQueueP95, "low-pri queue p95", "%.1f", 1},
	{metric.RSSPeakBytes, "peak RSS", "%.4g", 64 << 20},
}

// ObservedRelFloor is the tolerance's least share of the observed figure.
const ObservedRelFloor = 0.1

// ObservedTolerance is the documented rule for a run's own tolerance: the
// spread of its trials (max − min), at least ObservedRelFloor of the
// median and at least the figure's floor. A model median within that of
// the run's median matches.
func ObservedTolerance(xs []float64, floor float64) (median, tol float64) {
	median = metric.Median(xs)
	tol = max(slices.Max(xs)-slices.Min(xs), ObservedRelFloor*math.Abs(median), floor)
	return median, tol
}

// Observed is what a run folder gives a fit: its arms' observations, the
// arms as the model runs them and the workload.
type Observed struct {
	Observations []Observation
	Fitted       []Role
	// Arms are every arm the run records, as the model runs them (for
	// --predict names of the run's own arms).
	Arms     []arms.Arm
	Workload workload.SpillToDisk
	// Source says where the observations came from; Absent names the
	// figures the run did not have, by arm.
	Source string
	Absent []string
}

// FromRun reads the observations of the named arms of a run (a real run,
// an FTDC import or a model run): for each ObservedFigures figure the arm's
// valid trials have, its median, with the tolerance of ObservedTolerance.
// The arms are the run's recorded definitions, run on the model (their
// server parameters and killOp actors); the workload is the run's.
func FromRun(r *store.Run, names []string) (Observed, error) {
	mpath := filepath.Join(r.Dir, store.ManifestFile)
	var out Observed
	if len(r.Manifest.Workload) == 0 {
		return out, fmt.Errorf("%s records no workload, so the model cannot run what the run ran", mpath)
	}
	var spec workload.Spec
	if err := json.Unmarshal(r.Manifest.Workload, &spec); err != nil {
		return out, fmt.Errorf("%s: workload: %w", mpath, err)
	}
	if spec.SpillToDisk == nil {
		return out, fmt.Errorf("%s: the run's workload is %s; the fit runs the spill_to_disk storm on the model", mpath, spec.Kind)
	}
	out.Workload = *spec.SpillToDisk
	recorded, err := recordedArms(mpath, r.Manifest)
	if err != nil {
		return out, err
	}
	for _, a := range recorded {
		m, err := ModelArm(a)
		if err != nil {
			return out, fmt.Errorf("%s: %w", mpath, err)
		}
		out.Arms = append(out.Arms, m)
	}
	var counts []string
	for _, name := range names {
		i := slices.IndexFunc(out.Arms, func(a arms.Arm) bool { return a.Name == name })
		if i < 0 {
			return out, fmt.Errorf("arm %q is not an arm of the run in %s (its arms: %s)", name, r.Dir, strings.Join(r.Manifest.ArmNames(), ", "))
		}
		if slices.ContainsFunc(out.Fitted, func(f Role) bool { return f.Name == name }) {
			return out, fmt.Errorf("arm %q is named twice", name)
		}
		out.Fitted = append(out.Fitted, Role{Name: name, Arm: out.Arms[i]})
		trials := r.Valid(name)
		if len(trials) == 0 {
			return out, fmt.Errorf("arm %s has no valid trial in %s", name, r.Dir)
		}
		counts = append(counts, fmt.Sprintf("%s %d", name, len(trials)))
		for _, f := range ObservedFigures {
			var xs []float64
			for _, t := range trials {
				if v, ok := t.Metrics[f.Metric]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
					xs = append(xs, v)
				}
			}
			if len(xs) == 0 {
				out.Absent = append(out.Absent, name+" "+f.Name)
				continue
			}
			med, tol := ObservedTolerance(xs, f.Floor)
			out.Observations = append(out.Observations, Observation{Arm: name, Name: name + " " + f.Name,
				Observed: fmt.Sprintf(f.Format+" (median of %d)", med, len(xs)), Metric: f.Metric, Reduce: investigation.Median,
				Lo: med, Hi: med, Tol: tol, Absolute: true, Format: f.Format})
		}
	}
	kind := "a run"
	switch {
	case r.Manifest.Imported != nil:
		kind = "an import from " + r.Manifest.Imported.From
	case r.Manifest.Simulated:
		kind = "a model run"
	}
	out.Source = fmt.Sprintf("%s (%s; valid trials: %s), each figure the median of the arm's trials, its tolerance their spread (max − min), at least %.0f %% of the median and the figure's floor",
		r.Dir, kind, strings.Join(counts, ", "), 100*ObservedRelFloor)
	if len(out.Absent) > 0 {
		out.Source += "; not in the run: " + strings.Join(out.Absent, ", ")
	}
	return out, nil
}

// recordedArms are the arms a manifest records (their resolved
// definitions, credentials redacted).
func recordedArms(mpath string, m store.Manifest) ([]arms.Arm, error) {
	if len(m.Arms) == 0 {
		return nil, fmt.Errorf("%s records no arm definitions, so the model cannot run the run's arms", mpath)
	}
	var doc string
	if err := json.Unmarshal(m.Arms, &doc); err != nil {
		return nil, fmt.Errorf("%s: arms: %w", mpath, err)
	}
	recorded, err := arms.Parse(mpath+" (arms)", []byte(doc))
	if err != nil {
		return nil, fmt.Errorf("the arms %s records: %w", mpath, err)
	}
	return recorded, nil
}

// ModelArm is an arm as the model runs it: its server parameters and
// killOp actors on the embedded replica set, whatever target it ran on.
// An arm with an exec actor (an outside program) has nothing the model
// can run in its place, and is refused.
func ModelArm(a arms.Arm) (arms.Arm, error) {
	out := a
	out.Target, out.Mongod, out.URI, out.Topology, out.Sharded = arms.TargetEmbedded, "", "", "", arms.Sharded{}
	out.Actors = nil
	for _, act := range a.Actors {
		if act.Exec != nil {
			return out, fmt.Errorf("arm %s runs an outside program (an exec actor), which the model cannot run", a.Name)
		}
		if act.KillOp != nil {
			k := *act.KillOp
			out.Actors = append(out.Actors, arms.Actor{KillOp: &k})
		}
	}
	if _, err := model.ParamsFrom(out.SetParameters); err != nil {
		return out, fmt.Errorf("arm %s: %w", a.Name, err)
	}
	return out, nil
}
