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

// WriteText prints one line per change point, regressions first.
func WriteText(w io.Writer, r Result, recent int) error {
	fmt.Fprintf(w, "%d nights, %d series examined, %d change points\n", r.Nights, r.Series, len(r.Changes))
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
	fmt.Fprintf(w, "### qmlsab history: %s\n\n", head)
	fmt.Fprintf(w, "%d nights, %d series (E-Divisive with means, permutation test).\n\n", r.Nights, r.Series)
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
	out := struct {
		Result
		Changes   []change `json:"changes"`
		Regressed bool     `json:"regressed"`
	}{Result: r, Regressed: r.Regressed(), Changes: []change{}}
	for _, c := range r.Changes {
		cc := change{Change: c}
		if !math.IsNaN(c.Relative) && !math.IsInf(c.Relative, 0) {
			v := c.Relative
			cc.Relative = &v
		}
		out.Changes = append(out.Changes, cc)
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
