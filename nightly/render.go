package nightly

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/qmlsab/qmlsab/metric"
)

// WriteText prints tonight's check (one line per regression it found),
// then one line per change point, regressions first.
func WriteText(w io.Writer, r Result, recent int) error {
	if err := writeTonightText(w, r.Tonight); err != nil {
		return err
	}
	fmt.Fprintf(w, "change point: %d nights, %d series examined, %d change points\n", r.Nights, r.Series, len(r.Changes))
	if len(r.Changes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NIGHT\tRUN\tDATE\tSERIES\tMETRIC\tARM\tBEFORE\tAFTER\tCHANGE\tP\tVERDICT")
	for _, c := range ordered(r.Changes) {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", c.Night+1, c.RunID, c.Started.Format("2006-01-02"),
			series(c), c.Metric, c.Arm, metric.Format(c.Metric, c.Before), metric.Format(c.Metric, c.After), relative(c.Relative), c.P, verdict(c, recent))
	}
	return tw.Flush()
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
	fmt.Fprintf(w, "### qmlsab history: %s\n\n", head)
	writeTonightMarkdown(w, r.Tonight)
	fmt.Fprintf(w, "Change points: %d nights, %d series (E-Divisive with means, permutation test).\n\n", r.Nights, r.Series)
	if len(r.Changes) == 0 {
		return nil
	}
	fmt.Fprintln(w, "| night | run | series | metric | arm | before | after | change | p | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range ordered(r.Changes) {
		fmt.Fprintf(w, "| %d (%s) | %s | %s | %s | %s | %s | %s | %s | %.3f | %s |\n", c.Night+1, c.Started.Format("2006-01-02"),
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
		Changes   []change `json:"changes"`
		Tonight   tonight  `json:"tonight"`
		Regressed bool     `json:"regressed"`
	}{Result: r, Regressed: r.Regressed(), Changes: []change{}, Tonight: tonight{Tonight: r.Tonight, Findings: []finding{}}}
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

// writeTonightText says what tonight's check compared and lists each
// regression it found.
func writeTonightText(w io.Writer, t Tonight) error {
	if t.RunID == "" {
		return nil
	}
	fmt.Fprintf(w, "tonight: night %d (%s) against up to %d stable nights before it: %d of %d pairs regressed (Mann-Whitney, Holm at %.3g, shift at least %s)\n",
		t.Night+1, t.RunID, t.BaselineNights, len(t.Findings), t.Tested, t.Alpha, relative(t.MinShift))
	if len(t.Findings) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tNIGHT\tRUN\tMETRIC\tARM\tBASELINE\tTONIGHT\tSHIFT\tCHANGE\tP\tBASELINE NIGHTS")
	for _, f := range t.Findings {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%s\n", f.Check, f.Night+1, f.RunID, f.Metric, f.Arm,
			metric.Format(f.Metric, f.BaselineMedian), metric.Format(f.Metric, f.Median), signed(f.Metric, f.Shift),
			relativeShift(f), f.P, nightSpan(f.BaselineNights))
	}
	return tw.Flush()
}

func writeTonightMarkdown(w io.Writer, t Tonight) {
	if t.RunID == "" {
		return
	}
	fmt.Fprintf(w, "Tonight: night %d (%s) against up to %d stable nights before it, %d pairs (exact Mann-Whitney U, Holm at %.3g, shift at least %s).\n\n",
		t.Night+1, md(t.RunID), t.BaselineNights, t.Tested, t.Alpha, relative(t.MinShift))
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
