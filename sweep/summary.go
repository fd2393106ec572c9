package sweep

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/run/virtual"
)

// The sweep's text for a terminal: its summary and the list of the names
// --vary takes (what qmlsab sweep prints).

// WriteSummary prints the sweep's table for a terminal: per arm and
// drawn metric, its lowest and highest median over the cells and the
// cell of each.
func WriteSummary(w io.Writer, r *Result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tmetric\tlowest cell\thighest cell\t")
	for _, a := range r.Arms {
		for _, m := range r.Metrics {
			lo, hi := "", ""
			var lv, hv float64
			for _, c := range r.Cells {
				v, ok := c.Median[m.Name]
				if c.Arm != a.Name || !ok {
					continue
				}
				if lo == "" || v < lv {
					lv, lo = v, cellAt(r, c)
				}
				if hi == "" || v > hv {
					hv, hi = v, cellAt(r, c)
				}
			}
			f := func(v float64) string {
				if m.Unit == "B" {
					return units.HumanBytes(v)
				}
				return fmt.Sprintf("%.3g", v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s at %s\t%s at %s\t\n", a.Name, m.Title, f(lv), lo, f(hv), hi)
		}
	}
	tw.Flush()
}

// cellAt names cell c by its settings: NAME=VALUE of each axis.
func cellAt(r *Result, c Cell) string {
	var s []string
	for i, ax := range r.Axes {
		s = append(s, ax.Name+"="+ax.Labels[c.Index[i]])
	}
	return strings.Join(s, " ")
}

// WriteKnobs lists the sweep namespace with each name's value in the
// given arms ("-" where it does not apply). The names are long (a server
// parameter's is up to 60 characters), so the terminal form gives each
// its own lines: the name, then its values, then what it means, folded;
// --wide is the table, one line a name, and --format the table for
// machines.
func WriteKnobs(w io.Writer, base virtual.Config, list []arms.Arm, format texttable.Format) error {
	t := &texttable.Table{Columns: []texttable.Column{{Title: "NAME", Key: "name"}}}
	for _, a := range list {
		t.Columns = append(t.Columns, texttable.Column{Title: a.Name, Key: a.Name})
	}
	t.Columns = append(t.Columns, texttable.Column{Title: "VALUES", Key: "values"}, texttable.Column{Title: "MEANING", Key: "meaning", Wrap: true})
	for _, k := range Knobs {
		vals := "numbers"
		switch {
		case len(k.Choices) > 0:
			vals = strings.Join(k.Choices, ",")
		case k.Choices != nil:
			vals = "strings"
		case k.Min > -1e300 && k.Max < 1e300:
			vals = k.Label(Num(k.Min)) + " … " + k.Label(Num(k.Max))
		}
		row := []texttable.Cell{texttable.Text(k.Name)}
		for _, a := range list {
			cell := texttable.Cell{Text: "-", Value: nil} // the knob does not apply to the arm
			if k.AppliesTo(a) {
				cell = texttable.Text(k.Label(KnobValue(k, Setting{Config: base, Arm: a})))
			}
			row = append(row, cell)
		}
		t.Add(append(row, texttable.Text(vals), texttable.Text(k.Doc))...)
	}
	if format.Machine != "" || format.Wide {
		return t.Write(w, format)
	}
	fmt.Fprintln(w, "Names --vary (and calibrate --fit --space) take, with each arm's value on")
	fmt.Fprintln(w, "the model --host selects (--wide: one line a name):")
	for _, r := range t.Rows {
		fmt.Fprintln(w)
		fmt.Fprintln(w, r[0].Text)
		var vals []string
		for j, a := range list {
			vals = append(vals, a.Name+" "+r[1+j].Text)
		}
		texttable.FoldParagraph(w, strings.Join(vals, " · ")+" · values "+r[len(list)+1].Text, "    ", "    ")
		texttable.FoldParagraph(w, r[len(list)+2].Text, "    ", "    ")
	}
	fmt.Fprintln(w)
	texttable.FoldParagraph(w, "Metrics drawn: "+strings.Join(metricTitles(), ", "), "", "  ")
	return nil
}

// metricTitles are the titles of the metrics a sweep draws (MapMetrics).
func metricTitles() []string {
	var out []string
	for _, n := range MapMetrics {
		out = append(out, metric.Lookup(n).Title)
	}
	return out
}
