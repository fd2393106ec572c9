package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// Directions of a comparison, as the verdict words them (Comparison.
// Direction).
const (
	// Better and Worse: the shift is significant and the metric says
	// which way is better (metric.Metric.Better).
	Better = "better"
	Worse  = "worse"
	// Changed: significant, on a metric with no better direction (a
	// diagnostic such as sheds/s): a change, never a judgement.
	Changed = "changed"
	// NotJudged: significant, but the metric is over the seconds with a
	// primary and one of the arms had none for part of its storm
	// (primaryOnly), so the shift may be the outage's, not the arm's.
	NotJudged = "not judged"
)

// directionMark is the symbol that says a direction without colour.
var directionMark = map[string]string{Better: "▲", Worse: "▼", Changed: "◆", NotJudged: "◇"}

// primaryOnly are the metrics computed over the storm's seconds with a
// primary alone: the primary's gauges (tickets, the low-priority queue)
// and its flows per second with a primary. Across an outage they do not
// compare: a queue that restarts empty with each new primary, or is not
// sampled while there is none, reads lower for an arm that crash-loops.
// So when an arm had no primary for part of its storm (Outage), a
// significant shift of one of these is NotJudged rather than better or
// worse. The registry's definitions say which metrics rest on the
// primary alone (a test holds this list to them).
var primaryOnly = map[string]bool{
	metric.ServerShedsPerS: true, metric.ServerShedsInlinePerS: true, metric.ServerShedsQueuedPerS: true,
	metric.ActorKillsPerS: true, metric.ActorKillsLowQueuePerS: true, metric.ActorKillsNormalQueuePerS: true, metric.ActorKillsRunningPerS: true,
	metric.AdmissionsPerS: true, metric.KillsPerS: true, metric.DeparturesPerS: true, metric.ServerShedsMinusAdmissions: true,
	metric.ReadTicketsMed: true, metric.ReadTicketsMin: true,
	metric.LowQueueP95: true, metric.LowQueueMax: true, metric.LowQueueSlope: true, metric.LowQueueGrowth: true,
}

// minOutage is the shortest span without a primary sample that counts as
// an outage: a clean handover is seen one sampling interval apart (a
// second on the virtual clock), an election after a crash takes several.
const minOutage = time.Second

// Outage is how much of their storms an arm's valid trials had no
// primary for, from their primary lives (store.Trial.PrimaryLives).
type Outage struct {
	// Known counts the trials whose lives were recorded, Lost those of
	// them that had no primary for part of the storm.
	Known, Lost int
	// Shares are each known trial's share of its storm without a primary
	// (on a sharded cluster, its worst shard's), and Median their median.
	Shares []float64
	Median float64
	// Failovers counts trials without recorded lives that failed over in
	// the storm's trial (failovers > 0): they may have lost it too.
	Failovers int
}

// Any reports whether some trial had, or may have had, no primary for a
// part of its storm.
func (o Outage) Any() bool { return o.Lost > 0 || o.Failovers > 0 }

// noPrimarySpans are the spans of [from, to] (seconds into the trial)
// without a primary on shard (longer than minOutage): before the first
// life, between lives, after the last. ok is false when the trial
// recorded no lives (a run made before they were, or the merge
// workload): then nothing is known.
func noPrimarySpans(t Trial, shard string, from, to float64) (spans [][2]float64, ok bool) {
	if len(t.PrimaryLives) == 0 {
		return nil, false
	}
	var lives [][2]float64
	for _, l := range t.PrimaryLives {
		if l.Shard == shard {
			lives = append(lives, [2]float64{l.Start.Sub(t.Started).Seconds(), l.End.Sub(t.Started).Seconds()})
		}
	}
	slices.SortFunc(lives, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	gap := minOutage.Seconds()
	at := from // covered up to here
	for _, l := range lives {
		if l[0]-at > gap && l[0] > from {
			spans = append(spans, [2]float64{max(at, from), min(l[0], to)})
		}
		at = max(at, l[1])
		if at >= to {
			break
		}
	}
	// A last life that ended before to: the rest had no primary, unless
	// the samples simply ended there (the life lasted to the trial's end).
	if to-at > gap && !lastLifeRanToTheEnd(t, shard) {
		spans = append(spans, [2]float64{at, to})
	}
	return slices.DeleteFunc(spans, func(s [2]float64) bool { return s[1] <= s[0] }), true
}

// lastLifeRanToTheEnd reports whether a shard's last primary was still
// primary when the trial's samples ended.
func lastLifeRanToTheEnd(t Trial, shard string) bool {
	var last *store.PrimaryLife
	for i := range t.PrimaryLives {
		if l := &t.PrimaryLives[i]; l.Shard == shard && (last == nil || l.End.After(last.End)) {
			last = l
		}
	}
	return last != nil && last.Cause == store.LifeTrialEnded
}

// shards are the shards a trial's lives name ("" on a replica set).
func shards(t Trial) []string {
	var out []string
	for _, l := range t.PrimaryLives {
		if !slices.Contains(out, l.Shard) {
			out = append(out, l.Shard)
		}
	}
	return out
}

// stormOutage is the share of a trial's storm without a primary (its
// worst shard's); ok is false when its lives were not recorded or it had
// no storm.
func stormOutage(t Trial) (share float64, ok bool) {
	from, okFrom := t.Phases[store.PhaseStorm]
	to, okTo := t.Phases[store.PhaseRecovery]
	if !okFrom || !okTo || to <= from || len(t.PrimaryLives) == 0 {
		return 0, false
	}
	for _, sh := range shards(t) {
		spans, _ := noPrimarySpans(t, sh, from, to)
		lost := 0.0
		for _, s := range spans {
			lost += s[1] - s[0]
		}
		share = max(share, lost/(to-from))
	}
	return share, true
}

// outageOf is an arm's Outage over its valid trials.
func outageOf(trials []Trial) Outage {
	var o Outage
	for _, t := range trials {
		share, ok := stormOutage(t)
		if !ok {
			if t.Metrics[metric.Failovers] > 0 {
				o.Failovers++
			}
			continue
		}
		o.Known++
		o.Shares = append(o.Shares, share)
		if share > 0 {
			o.Lost++
		}
	}
	if len(o.Shares) > 0 {
		o.Median = metric.Median(o.Shares)
	}
	return o
}

// direction is a comparison's Direction: "" when it is not significant,
// NotJudged when the metric is over the seconds with a primary and either
// arm lost its primary in the storm, else what the metric's Better says.
func direction(c Comparison, outage bool) string {
	if !c.Significant || math.IsNaN(c.P) {
		return ""
	}
	if outage && primaryOnly[c.Metric] {
		return NotJudged
	}
	b := metric.Lookup(c.Metric).Better
	switch {
	case b == 0 || c.Delta == 0 || math.IsNaN(c.Delta):
		return Changed
	case (c.Delta > 0) == (b > 0):
		return Better
	}
	return Worse
}

// VerdictPart is one metric of a verdict sentence: "availability
// −61.5 %" with its p-value and direction.
type VerdictPart struct {
	Metric, Title string
	// Change is the shift as the sentence says it: a share of the
	// baseline's median ("−61.5 %"), a shift in the metric's unit, or for
	// counts both totals ("13 vs 0"); for a lower bound both medians.
	Change, P string
	Direction string
}

// Mark is the part's direction symbol (▲ better, ▼ worse, ◆ changed,
// ◇ not judged; none for a lower bound).
func (p VerdictPart) Mark() string { return directionMark[p.Direction] }

// Text is the part as plain text: "▼ availability −61.5 % (p = 0.008)".
func (p VerdictPart) Text() string {
	s := strings.TrimSpace(p.Mark() + " " + p.Title + " " + p.Change)
	if p.P != "" {
		s += " (" + p.P + ")"
	}
	return s
}

// VerdictClause is a labelled list of parts: "better: …".
type VerdictClause struct {
	Label string
	Parts []VerdictPart
}

// Verdict is one arm's sentence against the baseline: its head ("E
// worse than D"), the clauses naming the key metrics that moved beyond
// noise, and a footnote on outages when a comparison was not judged.
type Verdict struct {
	Arm, Base string
	Head      string
	// Class is better, worse, mixed, changed or same: the sentence's
	// colour.
	Class    string
	Clauses  []VerdictClause
	Footnote string
}

// Text is the sentence as plain text.
func (v Verdict) Text() string {
	var b strings.Builder
	b.WriteString(v.Head)
	for i, c := range v.Clauses {
		switch {
		case i == 0 && c.Label == "":
			b.WriteString(": ")
		case i == 0:
			b.WriteString(" — " + c.Label + ": ")
		default:
			b.WriteString("; " + c.Label + ": ")
		}
		var parts []string
		for _, p := range c.Parts {
			parts = append(parts, p.Text())
		}
		b.WriteString(strings.Join(parts, ", "))
	}
	b.WriteString(".")
	if v.Footnote != "" {
		b.WriteString(" " + v.Footnote)
	}
	return b.String()
}

// countTotal is the sum of an arm's trial values of a count metric.
func countTotal(s Summary) float64 {
	total := 0.0
	for _, x := range s.Values {
		total += x
	}
	return total
}

// Verdicts are one sentence per arm against the baseline, naming the key
// metrics that moved beyond noise (significant by the report's U test),
// worse first, with the direction the registry gives them; metrics without
// one "changed"; those over the seconds with a primary when an arm lost
// it in the storm "not judged", with a footnote saying how much of the
// storm had none; and key metrics that are only lower bounds, untested.
func (a *Analysis) Verdicts() []Verdict {
	base := a.Arm(a.Baseline)
	var out []Verdict
	for _, arm := range a.Arms {
		if arm.Name == a.Baseline {
			continue
		}
		v := Verdict{Arm: arm.Name, Base: a.Baseline}
		if arm.N == 0 || base == nil || base.N == 0 {
			who := arm.Name
			if arm.N > 0 {
				who = a.Baseline
			}
			v.Head, v.Class = fmt.Sprintf("%s vs %s: %s has no valid trial, so nothing is compared", arm.Name, a.Baseline, who), "same"
			out = append(out, v)
			continue
		}
		by := map[string][]VerdictPart{}
		var bounds []VerdictPart
		for _, m := range keyMetrics(a) {
			title := metric.Lookup(m).Title
			if c, ok := a.Comparison(arm.Name, m); ok && c.Direction != "" {
				change := FormatDelta(c)
				if metric.Lookup(m).Count {
					change = fmt.Sprintf("%s vs %s", metric.Number(countTotal(arm.Metrics[m])), metric.Number(countTotal(base.Metrics[m])))
				}
				by[c.Direction] = append(by[c.Direction], VerdictPart{Metric: m, Title: title, Change: change, P: PValue(c.P), Direction: c.Direction})
				continue
			}
			// A lower bound is never tested; the sentence gives both
			// medians when either arm's is one.
			ca, aBound := arm.Censored[m]
			cb, bBound := base.Censored[m]
			if !aBound && !bBound {
				continue
			}
			show := func(arm *Arm, c Censored, bound bool) string {
				if bound {
					if c.MedianAtLeast {
						return "≥ " + metric.Format(m, c.Median)
					}
					return metric.Format(m, c.Median)
				}
				if s, ok := arm.Metrics[m]; ok {
					return metric.Format(m, s.Median)
				}
				return "–"
			}
			bounds = append(bounds, VerdictPart{Metric: m, Title: title, Change: show(a.Arm(arm.Name), ca, aBound) + " vs " + show(base, cb, bBound)})
		}
		worse, better := by[Worse], by[Better]
		switch {
		case len(worse) > 0 && len(better) > 0:
			v.Head, v.Class = fmt.Sprintf("%s both worse and better than %s", arm.Name, a.Baseline), "mixed"
			v.Clauses = append(v.Clauses, VerdictClause{"worse", worse}, VerdictClause{"better", better})
		case len(worse) > 0:
			v.Head, v.Class = fmt.Sprintf("%s worse than %s", arm.Name, a.Baseline), "worse"
			v.Clauses = append(v.Clauses, VerdictClause{"", worse})
		case len(better) > 0:
			v.Head, v.Class = fmt.Sprintf("%s better than %s", arm.Name, a.Baseline), "better"
			v.Clauses = append(v.Clauses, VerdictClause{"", better})
		case len(by[Changed]) > 0 || len(by[NotJudged]) > 0:
			v.Head, v.Class = fmt.Sprintf("%s neither better nor worse than %s", arm.Name, a.Baseline), "changed"
		default:
			v.Class = "same"
			if p := MinP(base.N, arm.N); p > a.Alpha {
				v.Head = fmt.Sprintf("%s vs %s: with %d and %d trials no key metric can move beyond noise (the smallest p a U test can give is %.3f > α = %g)",
					arm.Name, a.Baseline, arm.N, base.N, p, a.Alpha)
			} else {
				v.Head = fmt.Sprintf("%s no different from %s beyond noise on any key metric (n = %d vs %d, α = %g)", arm.Name, a.Baseline, arm.N, base.N, a.Alpha)
			}
		}
		if len(by[Changed]) > 0 {
			v.Clauses = append(v.Clauses, VerdictClause{"changed (no better direction)", by[Changed]})
		}
		if len(by[NotJudged]) > 0 {
			v.Clauses = append(v.Clauses, VerdictClause{"not judged (over the seconds with a primary)†", by[NotJudged]})
			v.Footnote = a.outageFootnote(arm.Name)
		}
		if len(bounds) > 0 {
			v.Clauses = append(v.Clauses, VerdictClause{"lower bounds, not tested (a client timeout)", bounds})
		}
		out = append(out, v)
	}
	return out
}

// outageFootnote says how much of the storm an arm and the baseline had
// no primary for, and what that does to the primary's figures.
func (a *Analysis) outageFootnote(arm string) string {
	var parts []string
	for _, name := range []string{arm, a.Baseline} {
		if ar := a.Arm(name); ar != nil {
			parts = append(parts, outageText(name, ar.Outage))
		}
	}
	return "† " + strings.Join(parts, "; ") + ". The queue, ticket and per-second-with-a-primary figures are over the seconds with a primary (and a new primary's queue starts empty), so their shifts are not judged better or worse."
}

// outageText is "E had no primary for 38 % of its storm (median of 5
// trials; 5 of them lost it)".
func outageText(name string, o Outage) string {
	switch {
	case o.Known == 0 && o.Failovers > 0:
		return fmt.Sprintf("%s failed over in %d trial(s) (how long it had no primary was not recorded)", name, o.Failovers)
	case o.Known == 0:
		return name + ": its primaries' lives were not recorded"
	case o.Lost == 0:
		return fmt.Sprintf("%s always had a primary in the storm", name)
	}
	return fmt.Sprintf("%s had no primary for %s %% of its storm (median of %d trials; %d of them lost it)", name, metric.Number(100*o.Median), o.Known, o.Lost)
}
