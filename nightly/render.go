package nightly

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/metric"
)

// WriteText prints tonight's check (one line per regression it found),
// then one line per change point, regressions first.
//
// The tables fit 80 columns, their long values folded; wide shows every
// column (the run, date and series of each change point, the check, night
// and baseline nights of each finding), one line a row.
func WriteText(w io.Writer, r Result, recent int, wide bool) error {
	if err := writeTonightText(w, r.Tonight, wide); err != nil {
		return err
	}
	for _, d := range r.Redefinitions {
		texttable.FoldParagraph(w, redefinitionLine(d), "", "  ")
	}
	texttable.FoldParagraph(w, fmt.Sprintf("change point: %d nights, %d series examined, %d change points", r.Nights, r.Series, len(r.Changes)), "", "  ")
	if len(r.Changes) == 0 {
		return nil
	}
	t := &texttable.Table{Columns: []texttable.Column{{Title: "NIGHT", Key: "night"}, {Title: "RUN", Key: "run", Wide: true},
		{Title: "DATE", Key: "date", Wide: true}, {Title: "SERIES", Key: "series", Wide: true}, {Title: "METRIC", Key: "metric", Wrap: true},
		{Title: "ARM", Key: "arm", Wrap: true}, {Title: "BEFORE", Key: "before"}, {Title: "AFTER", Key: "after"},
		{Title: "CHANGE", Key: "change"}, {Title: "P", Key: "p"}, {Title: "VERDICT", Key: "verdict", Wrap: true}}}
	for _, c := range ordered(r.Changes) {
		t.Add(texttable.Int(c.Night), texttable.Text(c.RunID), texttable.Text(c.Started.Format("2006-01-02")), texttable.Text(series(c)),
			texttable.Text(c.Metric), texttable.Text(armSeries(c.Arm, c.Kind, c.Baseline, wide)), texttable.Text(metric.Format(c.Metric, c.Before)),
			texttable.Text(metric.Format(c.Metric, c.After)), texttable.Text(relative(c.Relative)), texttable.Text(fmt.Sprintf("%.3f", c.P)),
			texttable.Text(verdict(c, recent)))
	}
	return t.Write(w, texttable.Format{Wide: wide})
}

// WriteMarkdown writes a block for a pull-request or chat comment.
func WriteMarkdown(w io.Writer, r Result, recent int) error {
	regressions := 0
	for _, c := range r.Changes {
		if c.Recent && c.Direction == Regression {
			regressions++
		}
	}
	head := "no change point in the newest nights"
	if regressions > 0 {
		head = fmt.Sprintf("**%d regression(s)** in the newest %d night(s)", regressions, recent)
	} else if len(r.Changes) > 0 {
		head = fmt.Sprintf("%d change point(s), none a recent regression", len(r.Changes))
	}
	if n := len(r.Tonight.Findings); n > 0 {
		head = fmt.Sprintf("**%d regression(s) tonight**; %s", n, head)
	}
	if r.NoData() {
		head = "**no data tonight**; " + head
	}
	fmt.Fprintf(w, "### qmlsab history: %s\n\n", head)
	writeTonightMarkdown(w, r.Tonight)
	for _, d := range r.Redefinitions {
		fmt.Fprintf(w, "- %s\n", md(redefinitionLine(d)))
	}
	if len(r.Redefinitions) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Change points: %d nights, %d series (E-Divisive with means, permutation test).\n\n", r.Nights, r.Series)
	if len(r.Changes) == 0 {
		return nil
	}
	fmt.Fprintln(w, "| night | run | series | metric | arm | before | after | change | p | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range ordered(r.Changes) {
		fmt.Fprintf(w, "| %d (%s) | %s | %s | %s | %s | %s | %s | %s | %.3f | %s |\n", c.Night, c.Started.Format("2006-01-02"),
			md(c.RunID), series(c), md(c.Metric), md(c.Arm), metric.Format(c.Metric, c.Before), metric.Format(c.Metric, c.After), relative(c.Relative), c.P, verdict(c, recent))
	}
	return nil
}

// WriteJSON writes the result as JSON (NaN relative changes as null).
func WriteJSON(w io.Writer, r Result) error {
	type change struct {
		Change
		Relative *float64 `json:"relative"`
	}
	type finding struct {
		Finding
		Relative *float64 `json:"relative"` // null when the baseline median is 0
	}
	type tonight struct {
		Tonight
		Findings []finding `json:"findings"`
	}
	out := struct {
		Result
		Changes       []change       `json:"changes"`
		Redefinitions []Redefinition `json:"redefinitions"`
		Tonight       tonight        `json:"tonight"`
		Regressed     bool           `json:"regressed"`
		NoData        bool           `json:"noData"`
	}{Result: r, Regressed: r.Regressed(), NoData: r.NoData(), Changes: []change{}, Redefinitions: r.Redefinitions,
		Tonight: tonight{Tonight: r.Tonight, Findings: []finding{}}}
	if out.Redefinitions == nil {
		out.Redefinitions = []Redefinition{}
	}
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, change{Change: c, Relative: finite(c.Relative)})
	}
	for _, f := range r.Tonight.Findings {
		out.Tonight.Findings = append(out.Tonight.Findings, finding{Finding: f, Relative: finite(f.Relative)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// armSeries is the ARM cell of a change point: the arm, and for an effect
// series the baseline it is measured against when the table has no
// SERIES column.
func armSeries(arm, kind, baseline string, wide bool) string {
	if kind == Effect && !wide {
		return arm + " vs " + baseline
	}
	return arm
}

// ordered puts recent regressions first, then by night.
func ordered(cs []Change) []Change {
	out := make([]Change, 0, len(cs))
	for _, pass := range []bool{true, false} {
		for _, c := range cs {
			if (c.Recent && c.Direction == Regression) == pass {
				out = append(out, c)
			}
		}
	}
	return out
}

func series(c Change) string {
	if c.Kind == Effect {
		return "effect vs " + c.Baseline
	}
	return "values"
}

func relative(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

func verdict(c Change, recent int) string {
	if c.Recent {
		return c.Direction + " (newest " + fmt.Sprint(recent) + ")"
	}
	return c.Direction
}

func md(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// redefinitionLine is a Redefinition as a line of text.
func redefinitionLine(d Redefinition) string {
	return fmt.Sprintf("redefined: night %d (%s) against night %s: %s — a change point by construction, never a regression: change points are found on either side of it, not across",
		d.Night, d.RunID, d.Previous, d.Describe())
}

// tonightHead is the line that says what tonight's check compared and
// found.
func tonightHead(t Tonight) string {
	s := fmt.Sprintf("tonight: night %d (%s)", t.Night, t.RunID)
	if t.Redefined != "" {
		s += ", redefined (" + t.Redefined + ")"
	}
	switch {
	case len(t.NoData) > 0:
		return s + fmt.Sprintf(": NO DATA for %s (no valid trial tonight): a night that measured nothing fails", strings.Join(t.NoData, ", "))
	case t.Tested == 0 && t.Untested > 0:
		return s + ": no baseline yet (" + strings.Join(t.Unbased, "; ") + "): nothing to compare, so the night passes"
	}
	s += fmt.Sprintf(" against up to %d stable nights before it: %d of %d pairs regressed (Mann-Whitney, Holm at %.3g, shift at least %s)",
		t.BaselineNights, len(t.Findings), t.Tested, t.Alpha, relative(t.MinShift))
	if t.Untested > 0 {
		s += fmt.Sprintf("; %d pairs without a baseline yet (%s)", t.Untested, strings.Join(t.Unbased, "; "))
	}
	return s
}

// writeTonightText says what tonight's check compared and lists each
// regression it found.
func writeTonightText(w io.Writer, t Tonight, wide bool) error {
	if t.RunID == "" {
		return nil
	}
	texttable.FoldParagraph(w, tonightHead(t), "", "  ")
	if len(t.Findings) == 0 {
		return nil
	}
	tt := &texttable.Table{Columns: []texttable.Column{{Title: "CHECK", Key: "check", Wide: true}, {Title: "NIGHT", Key: "night", Wide: true},
		{Title: "RUN", Key: "run", Wide: true}, {Title: "METRIC", Key: "metric", Wrap: true}, {Title: "ARM", Key: "arm"},
		{Title: "BASELINE", Key: "baseline"}, {Title: "TONIGHT", Key: "tonight"}, {Title: "SHIFT", Key: "shift"},
		{Title: "CHANGE", Key: "change", Wrap: true}, {Title: "P", Key: "p"}, {Title: "BASELINE NIGHTS", Key: "baseline_nights", Wide: true}}}
	for _, f := range t.Findings {
		tt.Add(texttable.Text(f.Check), texttable.Int(f.Night), texttable.Text(f.RunID), texttable.Text(f.Metric), texttable.Text(f.Arm),
			texttable.Text(metric.Format(f.Metric, f.BaselineMedian)), texttable.Text(metric.Format(f.Metric, f.Median)),
			texttable.Text(signed(f.Metric, f.Shift)), texttable.Text(relativeShift(f)), texttable.Text(fmt.Sprintf("%.4f", f.P)),
			texttable.Text(nightSpan(f.BaselineNights)))
	}
	return tt.Write(w, texttable.Format{Wide: wide})
}

func writeTonightMarkdown(w io.Writer, t Tonight) {
	if t.RunID == "" {
		return
	}
	fmt.Fprintf(w, "%s.\n\n", md(strings.ToUpper(tonightHead(t)[:1])+tonightHead(t)[1:]))
	if len(t.Findings) == 0 {
		return
	}
	fmt.Fprintln(w, "| check | metric | arm | baseline | tonight | shift | change | p | baseline nights |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, f := range t.Findings {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.4f | %s |\n", f.Check, md(f.Metric), md(f.Arm),
			metric.Format(f.Metric, f.BaselineMedian), metric.Format(f.Metric, f.Median), signed(f.Metric, f.Shift),
			relativeShift(f), f.P, md(nightSpan(f.BaselineNights)))
	}
	fmt.Fprintln(w)
}

// signed formats a shift in the metric's unit with its sign.
func signed(m string, x float64) string {
	if x < 0 {
		return "-" + metric.Format(m, -x)
	}
	return "+" + metric.Format(m, x)
}

// relativeShift is the shift against the baseline median, signed.
func relativeShift(f Finding) string {
	if math.IsInf(f.Relative, 0) || math.IsNaN(f.Relative) {
		return "- (baseline median 0)"
	}
	if f.Shift < 0 {
		return relative(-f.Relative)
	}
	return relative(f.Relative)
}

// nightSpan names the baseline's nights: the first and last run and how many.
func nightSpan(ids []string) string {
	switch len(ids) {
	case 0:
		return "-"
	case 1:
		return ids[0]
	}
	return fmt.Sprintf("%s … %s (%d)", ids[0], ids[len(ids)-1], len(ids))
}
