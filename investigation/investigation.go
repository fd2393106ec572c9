// Package investigation is the sweeper investigation as data: what it
// observed of arms D and E on Atlas M50s, the tolerance the model's fit
// allows each observation, the "holds" and "falls" rules its outcomes are
// judged by, and F's acceptance as written. The calibration table, the
// joint fit (qmlsab calibrate --fit), the sweep and the report's gates all
// read it from here, so a figure of the investigation is written once.
//
// A trial is a map of figures by name: the metric registry's metrics
// (package metric) plus the few figures the virtual engine derives for
// the investigation (KillShare, WindowShare and the queue-growth flows).
package investigation

import (
	"fmt"
	"math"
	"slices"

	"github.com/qmlsab/qmlsab/metric"
)

// Trial is one trial's figures by name.
type Trial = map[string]float64

// Figures the virtual engine derives beside the metric registry's.
const (
	// KillShare is low-priority queue kills ÷ departures.
	KillShare = "kill_share"
	// WindowShare is the share of the storm's victims (shed or killed)
	// that were $setWindowFields.
	WindowShare = "window_share"
	// GrowthArrivalsPerS and GrowthAdmissionsPerS are the low-priority
	// read queue's arrivals (Δ addedToQueue) and admissions (Δ removed −
	// Δ canceled) per second over the storm's sample intervals in which
	// the primary's queue grew; GrowthSeconds is how long those were.
	GrowthArrivalsPerS   = "growth_arrivals_per_s"
	GrowthAdmissionsPerS = "growth_admissions_per_s"
	GrowthSeconds        = "growth_seconds"
	// StormArrivalsPerS is the low-priority queue's departures plus its
	// trend after the fill (metric.LowQueueSlope), per second of storm:
	// what reached the queue once it had filled.
	StormArrivalsPerS = "storm_arrivals_per_s"
)

// Reduce is how an observation reads an arm's trials.
type Reduce int

// Reductions.
const (
	Median Reduce = iota // the median over trials
	Min                  // the smallest (a condition "in every trial")
	Max                  // the largest
)

// Observation is one figure the investigation reported for an arm, with
// the range the model's figure must fall in and the tolerance the fit
// allows outside it.
type Observation struct {
	// Arm is the investigation's arm: "D" or "E".
	Arm      string
	Name     string
	Observed string // as the investigation wrote it
	Metric   string
	Reduce   Reduce
	Scale    float64 // the figure is Metric × Scale (0: 1)
	// Lo…Hi is the range in which the residual is 0 (Lo == Hi: a target).
	Lo, Hi float64
	// Tol is the residual that still counts as a match.
	Tol float64
	// Unavail: the residual is the relative error of 1 − value
	// (availability, whose shortfall is what was measured).
	Unavail bool
	// Absolute: the residual is value − range, not relative (a target of
	// zero).
	Absolute bool
	Format   string
	// ByConstruction, when set, says why the model meets the observation
	// whatever its unknowns: the figure is shown beside the investigation's
	// but never scored (it cannot tell one setting from another).
	ByConstruction string
}

// Scored reports whether a fit scores the observation: every observation
// but those true by construction.
func (o Observation) Scored() bool { return o.ByConstruction == "" }

// Observations are the fit's targets: D's flows and outcome, and E's
// outcome and flows (the evidence about E's build). F is never among them:
// F is the fix, and what the model predicts of it is a prediction.
var Observations = []Observation{
	{Arm: "D", Name: "D availability", Observed: "0.97 (≥ 0.94)", Metric: metric.Availability, Lo: 0.94, Hi: 1, Tol: 1, Unavail: true, Format: "%.3f"},
	{Arm: "D", Name: "D low-pri admissions/s", Observed: "160", Metric: metric.AdmissionsPerS, Lo: 160, Hi: 160, Tol: 0.25, Format: "%.0f"},
	{Arm: "D", Name: "D low-pri queue kills/s", Observed: "142", Metric: metric.KillsPerS, Lo: 142, Hi: 142, Tol: 0.25, Format: "%.0f"},
	{Arm: "D", Name: "D read tickets (median)", Observed: "10–14", Metric: metric.ReadTicketsMed, Lo: 10, Hi: 14, Tol: 0.15, Format: "%.0f"},
	{Arm: "D", Name: "D victims' tracked p50 MiB", Observed: "21", Metric: metric.VictimTrackedP50, Scale: 1.0 / (1 << 20), Lo: 21, Hi: 21, Tol: 0.25, Format: "%.1f"},
	{Arm: "D", Name: "D victims $setWindowFields", Observed: "most (≥ 0.5)", Metric: WindowShare, Lo: 0.5, Hi: 1, Tol: 0.2, Format: "%.2f"},
	{Arm: "E", Name: "E availability", Observed: "0.41 (≤ 0.6)", Metric: metric.Availability, Lo: 0, Hi: 0.6, Tol: 0.25, Format: "%.2f"},
	{Arm: "E", Name: "E failovers, fewest in a trial", Observed: "crash-looping (≥ 1 every trial)", Metric: metric.Failovers, Reduce: Min, Lo: 1, Hi: math.Inf(1), Tol: 0.5, Format: "%.0f"},
	{Arm: "E", Name: "E OOM restarts, fewest in a trial", Observed: "crash-looping (≥ 1 every trial)", Metric: metric.Restarts, Reduce: Min, Lo: 1, Hi: math.Inf(1), Tol: 0.5, Format: "%.0f"},
	{Arm: "E", Name: "E low-pri queue kills/s", Observed: "0 (departures = admissions)", Metric: metric.KillsPerS, Reduce: Max, Lo: 0, Hi: 0, Tol: 1, Absolute: true, Format: "%.1f",
		ByConstruction: "E has no killOp actor and its inline shedder checks only ticket holders, so nothing but a ticket removes a queued op: departures = admissions at every setting"},
	{Arm: "E", Name: "E arrivals/s while the queue grows", Observed: "~270", Metric: GrowthArrivalsPerS, Lo: 270, Hi: 270, Tol: 0.25, Format: "%.0f"},
	{Arm: "E", Name: "E admissions/s while the queue grows", Observed: "~180", Metric: GrowthAdmissionsPerS, Lo: 180, Hi: 180, Tol: 0.25, Format: "%.0f"},
}

// Value is the observation's figure over an arm's trials; NaN when no
// trial has it.
func (o Observation) Value(trials []Trial) float64 {
	var xs []float64
	for _, t := range trials {
		if v, ok := t[o.Metric]; ok && !math.IsNaN(v) {
			s := o.Scale
			if s == 0 {
				s = 1
			}
			xs = append(xs, v*s)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	switch o.Reduce {
	case Min:
		return slices.Min(xs)
	case Max:
		return slices.Max(xs)
	}
	return metric.Median(xs)
}

// Residual is the figure's error: 0 inside the range, else relative to
// the nearer end (absolute for Absolute observations); a missing figure
// is a residual of −1 (as far off as a figure can be).
func (o Observation) Residual(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	if o.Unavail {
		return outside(1-v, 1-o.Hi, 1-o.Lo, false)
	}
	return outside(v, o.Lo, o.Hi, o.Absolute)
}

func outside(x, lo, hi float64, absolute bool) float64 {
	var d, ref float64
	switch {
	case x < lo:
		d, ref = x-lo, lo
	case x > hi:
		d, ref = x-hi, hi
	default:
		return 0
	}
	if absolute || ref == 0 {
		return d
	}
	return d / math.Abs(ref)
}

// Matches reports whether a residual is within the tolerance.
func (o Observation) Matches(residual float64) bool { return math.Abs(residual) <= o.Tol }

// FormatValue writes a figure as the observation's row does ("–" when
// absent).
func (o Observation) FormatValue(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(o.Format, v)
}

// Of returns the observations of one arm.
func Of(arm string) []Observation {
	var out []Observation
	for _, o := range Observations {
		if o.Arm == arm {
			out = append(out, o)
		}
	}
	return out
}

// PredictedArms are the arms whose outcome the investigations predict
// rather than observed: F, the sweeper the sweeper investigation proposed,
// and G, F with the partial-write investigation's write-started flag. On
// the model their figures are its predictions (the fit never sees them),
// not reproductions of anything observed, as D's and E's are
// (Observations).
var PredictedArms = []string{"F", "G"}

// Observed reports whether arm is one the investigation observed (D or
// E): an arm of Observations.
func Observed(arm string) bool {
	return slices.ContainsFunc(Observations, func(o Observation) bool { return o.Arm == arm })
}

// PredictedArm reports whether arm is one of PredictedArms.
func PredictedArm(arm string) bool { return slices.Contains(PredictedArms, arm) }

// The thresholds of the outcomes: "holds" is median availability above
// HoldsAvailability with no failover; "falls" is median availability at
// most FallsAvailability with a failover and an OOM restart in every trial.
const (
	HoldsAvailability = 0.9
	FallsAvailability = 0.6
)

func median(trials []Trial, name string) float64 {
	return Observation{Metric: name}.Value(trials)
}

// Holds is D's and F's outcome in the investigation: median availability
// above 0.9 and no failover in any trial.
func Holds(trials []Trial) bool {
	if len(trials) == 0 {
		return false
	}
	for _, t := range trials {
		if t[metric.Failovers] > 0 {
			return false
		}
	}
	return median(trials, metric.Availability) > HoldsAvailability
}

// Falls is E's outcome in the investigation: median availability at most
// 0.6, with at least one failover and one OOM restart in every trial (a
// crash loop).
func Falls(trials []Trial) bool {
	if len(trials) == 0 {
		return false
	}
	for _, t := range trials {
		if t[metric.Restarts] < 1 || t[metric.Failovers] < 1 {
			return false
		}
	}
	return median(trials, metric.Availability) <= FallsAvailability
}

// Condition is one of F's acceptance conditions as the investigation wrote
// them.
type Condition struct {
	Name string
	// Met reports whether trials meet it, and what was compared.
	Met func(trials []Trial) (bool, string)
}

// FAcceptance is F's acceptance as written: availability > 0.9, zero
// failovers, a bounded low-priority queue, sheds/s above low-priority
// admissions/s during the storm. The sheds are the server's own
// (metric.ServerShedsPerS): the signature that the server sheds queued
// ops, which no client actor's kill can stand in for.
//
// A finding of the model, not a tuning target: once D's flows match, F's
// sheds are about arrivals − admissions (a queued op leaves by a ticket or
// by a shed), so sheds/s > admissions/s needs arrivals above twice the
// admissions. D's observed flows (302 arrivals against 160 admissions)
// leave sheds ≈ 142/s against 160/s: by that arithmetic the fourth
// condition cannot hold while D's flows do. The model's F counts inline
// sheds of ticket holders too, which is why it can still predict it met
// (docs/investigations.md).
var FAcceptance = []Condition{
	{Name: "availability > 0.9", Met: func(ts []Trial) (bool, string) {
		v := median(ts, metric.Availability)
		return v > 0.9, fmt.Sprintf("availability median = %.2f, want > 0.9", v)
	}},
	{Name: "zero failovers", Met: func(ts []Trial) (bool, string) {
		v := Observation{Metric: metric.Failovers, Reduce: Max}.Value(ts)
		return v == 0, fmt.Sprintf("failovers max = %.0f, want == 0", v)
	}},
	{Name: "low-priority queue bounded", Met: func(ts []Trial) (bool, string) {
		v := Observation{Metric: metric.LowQueueGrowth, Reduce: Max}.Value(ts)
		return v == 0, fmt.Sprintf("%s max = %.0f, want == 0", metric.LowQueueGrowth, v)
	}},
	{Name: "sheds/s above low-priority admissions/s", Met: func(ts []Trial) (bool, string) {
		s, a := median(ts, metric.ServerShedsPerS), median(ts, metric.AdmissionsPerS)
		return s > a, fmt.Sprintf("%s median = %.0f, want > %s median = %.0f", metric.ServerShedsPerS, s, metric.AdmissionsPerS, a)
	}},
}

// Reported are the investigation's figures for D and E as the calibration
// table shows them beside the model's, by figure name ("" where it says
// nothing). Each stands beside the metric that counts the same thing:
// D's 142 kills/s were its killOp actor's kills of ops in the
// low-priority queue (D's base build has no shedder), which the server
// counted as queue kills (Δ canceled), never as sheds of its own.
var Reported = map[string][2]string{
	metric.Availability:           {"0.97", "0.41"},
	metric.Failovers:              {"0", "crash-looping"},
	metric.Restarts:               {"0", "crash-looping"},
	metric.ReadTicketsMin:         {"~10", "~10"},
	metric.ReadTicketsMed:         {"10-14", "10-14"},
	metric.AdmissionsPerS:         {"160", "~180"},
	metric.KillsPerS:              {"142", "0"},
	metric.ActorKillsLowQueuePerS: {"142 (as queue kills)", ""},
	KillShare:                     {"0.47", "0"},
	metric.RSSPeakBytes:           {"", "OOM"},
	metric.LowQueueP95:            {"", "grows"},
	metric.LowQueueSlope:          {"bounded", "grows"},
	GrowthArrivalsPerS:            {"", "~270"},
	GrowthAdmissionsPerS:          {"", "~180"},
	StormArrivalsPerS:             {"302 (departures)", "~270"},
	metric.VictimTrackedP50:       {"21", "21"},
	WindowShare:                   {"most", "most"},
}

// FitRecord is what the joint fit that chose the embedded default found
// (qmlsab calibrate --fit --samples 240 --refine 40 --seed 11, the best of
// three searches): the report's methods paragraph and the docs quote it.
// A change to the model that moves it should update it.
type FitRecord struct {
	// Variant is E's build variant the fit selected (simShedHazard), and
	// Objectives the best objective found with each variant.
	Variant    string
	Objectives map[string]float64
	// Reproduced says whether the fitted point reproduces the
	// investigation (every residual within tolerance, D holds, E falls).
	Reproduced bool
	// Worst is the largest residual at the fitted point, as its line.
	Worst string
}

// Fitted is the joint fit behind the embedded default. Under conserved
// spill I/O no point of the space reproduces the investigation: this is
// the nearest one.
var Fitted = FitRecord{
	Variant:    "odds",
	Objectives: map[string]float64{"odds": 16.58, "linear": 36.06},
	Reproduced: false,
	Worst:      "E OOM restarts, fewest in a trial: 0 simulated against crash-looping (≥ 1 every trial) observed (residual −1.00, tolerance ±0.50)",
}

// PredictedShare is the share of acceptable fits × seeds at or above which
// a condition of a predicted arm is "predicted" (met), and at or below 1 −
// it "predicted not met"; between the two it is "uncertain"
// (calibrate --fit's ensemble).
const PredictedShare = 0.95

// The verdicts of a predicted condition.
const (
	Predicted        = "predicted"
	PredictedNotMet  = "predicted not met"
	PredictionUnsure = "uncertain"
)

// Verdict is the word for a condition met in share of the acceptable fits
// × seeds.
func Verdict(share float64) string {
	switch {
	case share >= PredictedShare:
		return Predicted
	case share <= 1-PredictedShare:
		return PredictedNotMet
	}
	return PredictionUnsure
}

// EnsembleRecord is what calibrate --fit's default ensemble predicts of
// the fix on the investigation's observations: the report's gates and the
// docs quote it. A change to the model that moves it should update it.
type EnsembleRecord struct {
	// Acceptable is the acceptable set's size, Points the acceptable
	// points F and G ran at and Seeds the seeds at each.
	Acceptable, Points, Seeds int
	// Shares are, by FAcceptance condition, the share of points × seeds
	// where F met it (G's are the same: on spill_to_disk G behaves as F).
	Shares map[string]float64
}

// Words is a condition's verdict with its share, as the report prints it:
// "uncertain (74 % of 24 fits × 5 seeds)"; ok false for a condition the
// record does not hold.
func (r EnsembleRecord) Words(condition string) (string, bool) {
	share, ok := r.Shares[condition]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s (%.0f %% of %d fits × %d seeds)", Verdict(share), 100*share, r.Points, r.Seeds), true
}

// Ensemble is the default ensemble's prediction of F (qmlsab calibrate
// --fit, seed 1; docs/investigations.md).
var Ensemble = EnsembleRecord{Acceptable: 25, Points: 24, Seeds: 5, Shares: map[string]float64{
	"availability > 0.9":                      104.0 / 120,
	"zero failovers":                          118.0 / 120,
	"low-priority queue bounded":              89.0 / 120,
	"sheds/s above low-priority admissions/s": 47.0 / 120,
}}

// Outcomes are the investigation's arms' outcomes in a line each, by role,
// as the fit's predictions print them beside the model's.
var Outcomes = map[string]string{
	"D": "0.97, 0 failovers, 160 + 142/s",
	"E": "0.41, crash-looping, ~270 arrivals vs ~180 admissions/s",
	"M": "(master's formula: not run in the investigation)",
	"F": "(the fix, never fitted: > 0.9, 0 failovers, bounded queue, sheds/s > admissions/s)",
}
