package sweep

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// FitReport is how a fit was run, for its text: what WriteFit prints
// beside the fit's FitConfig and FitResult. The lines that name a command
// (Title, Next) are the caller's, so that this package names no flags.
type FitReport struct {
	// Title is the first line: what made the fit and that it is simulated.
	Title string
	// Profile names the trial profile the fit ran at.
	Profile string
	// Took is the fit's wall time.
	Took time.Duration
	// Next, when not empty, is printed after the predictions: how to go
	// on from the fitted point (a sweep around it, say).
	Next string
}

// WriteFit prints a fit: the fitted values, each observation's residual
// beside the observed figure, the objective per build variant, D's, E's,
// M's and F's predictions, F's acceptance as the model predicts it, and
// the verdict.
func WriteFit(w io.Writer, cfg FitConfig, r *FitResult, rep FitReport) {
	b := r.Best
	modelName := "spill I/O through the page cache, the OOM killer on host memory"
	fmt.Fprintf(w, "%s\n\n", rep.Title)
	start := fmt.Sprintf("a Latin hypercube of %d points", cfg.Samples)
	if r.Start == "grid" {
		start = "every point of the (small, discrete) space"
	}
	fmt.Fprintf(w, "Method: %d unknowns over their plausible ranges; %s, then a compass search from the best (at most %d polls); at each point arms D and E run on seeds %d–%d (profile %s, %s); objective Σ (residual ÷ tolerance)² over D's and E's observations, D's failovers a hard constraint. %d points, %d trials (%d shared between points), %v wall, %.1f trials/s.\n\n",
		len(r.Space), start, cfg.Refine, cfg.Seed, cfg.Seed+uint64(cfg.FitSeeds)-1, rep.Profile, modelName, len(r.Points), r.Evaluated, r.Reused, rep.Took.Round(time.Second), float64(r.Evaluated)/max(rep.Took.Seconds(), 1e-9))

	fmt.Fprintln(w, "Fitted values (the best point):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  unknown\tfitted\tplausible range\tembedded default\t")
	for i, d := range r.Space {
		def := Setting{Config: cfg.Base, Arm: cfg.D}
		if !d.Knob.AppliesTo(cfg.D) {
			def.Arm = cfg.E
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", d.Knob.Name, d.Knob.Label(b.Values[i]), dimRange(d), d.Knob.Label(KnobValue(d.Knob, def)))
	}
	tw.Flush()

	if len(r.Variants) > 0 {
		fmt.Fprintln(w, "\nModel selection: E's build variant (simShedHazard), the best point found with each:")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  variant\tobjective\tD's objective\tE's objective\tE's figures there\t")
		for _, v := range r.Variants {
			if !v.Found {
				fmt.Fprintf(tw, "  %s\t(not searched)\t\t\t\t\n", v.Variant)
				continue
			}
			var dObj, eObj float64
			var figs []string
			for i, o := range Observations {
				q := (v.Best.Res[i] / o.Tol) * (v.Best.Res[i] / o.Tol)
				if o.Arm == "D" {
					dObj += q
				} else {
					eObj += q
					figs = append(figs, strings.TrimPrefix(o.Name, "E ")+" "+o.FormatValue(v.Best.Sim[i]))
				}
			}
			sel := ""
			if v.Best.Objective == b.Objective {
				sel = " (selected)"
			}
			fmt.Fprintf(tw, "  %s%s\t%.2f\t%.2f\t%.2f\t%s\t\n", v.Variant, sel, v.Best.Objective, dObj, eObj, strings.Join(figs, "; "))
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\nResiduals at the fitted point (median of %d seeds unless the row says otherwise; objective %.2f; D's failovers at most %.0f):\n", cfg.FitSeeds, b.Objective, b.Failovers)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  observation\tsimulated\tobserved\tresidual\ttolerance\tmatch\tover every point searched\t")
	for i, o := range Observations {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range r.Points {
			if !math.IsNaN(p.Sim[i]) {
				lo, hi = min(lo, p.Sim[i]), max(hi, p.Sim[i])
			}
		}
		span := "–"
		if lo <= hi {
			span = o.FormatValue(lo) + " – " + o.FormatValue(hi)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.2f\t±%.2f\t%s\t%s\t\n", o.Name, o.FormatValue(b.Sim[i]), o.Observed, b.Res[i], o.Tol,
			yesNo(o.Matches(b.Res[i])), span)
	}
	feasible := 0
	for _, p := range r.Points {
		if p.Feasible() {
			feasible++
		}
	}
	fmt.Fprintf(tw, "  D failovers\t%.0f\t0\t(hard constraint)\t\t%s\tnone at %d of %d points\t\n", b.Failovers, yesNo(b.Feasible()), feasible, len(r.Points))
	tw.Flush()

	fmt.Fprintf(w, "\nPredictions at the fitted point (%d seeds each; median [min–max]):\n", cfg.PredictSeeds)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  arm\tavailability\tfailovers\trestarts\tadmissions/s\tqueue kills/s\tserver sheds/s\tactor kills/s\tarrivals/s growing\tpeak RSS GiB\toutcome\tobserved\t")
	observed := investigation.Outcomes
	for _, p := range r.Predictions {
		col := func(name string, scale float64, format string) string {
			return rangeOf(p.Trials, func(s virtual.Summary) float64 { return s.Metrics[name] * scale }, format)
		}
		outcome := "neither"
		switch {
		case Holds(p.Trials):
			outcome = "holds"
		case Falls(p.Trials):
			outcome = "falls"
		}
		name := p.Arm
		if p.Variant != "" {
			name += " (" + p.Variant + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, col(metric.Availability, 1, "%.2f"), col(metric.Failovers, 1, "%.0f"),
			col(metric.Restarts, 1, "%.0f"), col(metric.AdmissionsPerS, 1, "%.0f"), col(metric.KillsPerS, 1, "%.0f"), col(metric.ServerShedsPerS, 1, "%.0f"),
			col(metric.ActorKillsPerS, 1, "%.0f"),
			col(investigation.GrowthArrivalsPerS, 1, "%.0f"), col(metric.RSSPeakBytes, 1.0/(1<<30), "%.1f"), outcome, observed[p.Role])
	}
	tw.Flush()
	if f, ok := r.Prediction("F"); ok {
		fmt.Fprintln(w, "\nF's acceptance as the model predicts it (a prediction, never a fit target):")
		for _, cond := range investigation.FAcceptance {
			met, what := cond.Met(virtual.Figures(f.Trials))
			fmt.Fprintf(w, "  %-4s %s: %s\n", map[bool]string{true: "met", false: "NOT"}[met], cond.Name, what)
		}
	}
	if rep.Next != "" {
		fmt.Fprintf(w, "\n%s\n", rep.Next)
	}
	fmt.Fprintln(w)
	if r.Reproduced() {
		fmt.Fprintln(w, "Verdict: the fitted point reproduces the investigation's D and E: every observation within tolerance, D holds and E falls.")
		return
	}
	fmt.Fprintln(w, "Verdict: no point of the plausible space that was searched reproduces the investigation's D and E.")
	fmt.Fprintln(w, "The nearest point is the fitted one above; it misses:")
	for i, o := range Observations {
		if !o.Matches(b.Res[i]) {
			fmt.Fprintf(w, "  - %s: %s simulated against %s observed (residual %+.2f, tolerance ±%.2f)\n", o.Name, o.FormatValue(b.Sim[i]), o.Observed, b.Res[i], o.Tol)
		}
	}
	if !b.Feasible() {
		fmt.Fprintf(w, "  - D failed over (%.0f), which the investigation never saw\n", b.Failovers)
	}
	if p, ok := r.Prediction("D"); ok && !Holds(p.Trials) {
		fmt.Fprintln(w, "  - D does not hold at the fitted point")
	}
	if p, ok := r.Prediction("E"); ok && !Falls(p.Trials) {
		fmt.Fprintln(w, "  - E does not fall at the fitted point")
	}
}

// FittedSettings are the fitted values as settings a sweep fixes
// (ParseSet's NAME=VALUE), one per searched unknown, in Space order, with
// host.dirtyBackgroundRatio held at half the fitted host.dirtyRatio as the
// host model pairs them.
func (r *FitResult) FittedSettings() []string {
	var out []string
	for i, d := range r.Space {
		v := r.Best.Values[i]
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

// yesNo is a match column: "NO" stands out.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
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

// rangeOf is the median [min–max] of f over trials.
func rangeOf(trials []virtual.Summary, f func(virtual.Summary) float64, format string) string {
	var xs []float64
	for _, t := range trials {
		xs = append(xs, f(t))
	}
	if len(xs) == 0 {
		return "-"
	}
	s := fmt.Sprintf(format, metric.Quantile(xs, 0.5))
	if lo, hi := slices.Min(xs), slices.Max(xs); lo != hi {
		s += " [" + fmt.Sprintf(format, lo) + "–" + fmt.Sprintf(format, hi) + "]"
	}
	return s
}
