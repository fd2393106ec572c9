package report

import (
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/store"
)

// mergeCaseRow is one arm's ops of one sharded merge case, over its valid
// trials.
type mergeCaseRow struct {
	Case, Arm string
	Ops       int
	Shed      int   // ops that failed shed
	Unsafe    int   // of them, with documents written into the target
	LeftDocs  int64 // documents the unsafe ones left in their targets
	// OutTemp and OutTempDocs are the $out ops that left documents in
	// $out's temporary collections, and how many: never partial writes.
	OutTemp     int
	OutTempDocs int64
	ShedBy      []string // the nodes whose shed counter rose, sorted
}

// mergeCaseRows reads the valid trials' merge ops and groups those of the
// sharded cases (store.MergeOp.Case) by case and arm, in the workload's
// case order; none when the run was on a replica set.
func mergeCaseRows(a *Analysis) ([]mergeCaseRow, error) {
	rows := map[[2]string]*mergeCaseRow{}
	for _, arm := range a.In.Arms {
		for _, t := range a.In.Valid(arm) {
			ops, err := readOptional[store.MergeOp](filepath.Join(t.Dir, store.MergeFile))
			if err != nil {
				return nil, err
			}
			for _, o := range ops {
				if o.Case == "" {
					continue
				}
				k := [2]string{o.Case, arm}
				r := rows[k]
				if r == nil {
					r = &mergeCaseRow{Case: o.Case, Arm: arm}
					rows[k] = r
				}
				r.Ops++
				if o.Outcome == store.Shed {
					r.Shed++
				}
				if o.Unsafe {
					r.Unsafe++
					r.LeftDocs += o.Written
				}
				if o.OutTempDocs > 0 {
					r.OutTemp++
					r.OutTempDocs += o.OutTempDocs
				}
				for _, n := range o.ShedBy {
					if !slices.Contains(r.ShedBy, n) {
						r.ShedBy = append(r.ShedBy, n)
					}
				}
			}
		}
	}
	var out []mergeCaseRow
	for _, c := range store.MergeCases {
		for _, arm := range a.In.Arms {
			if r := rows[[2]string{c, arm}]; r != nil {
				slices.Sort(r.ShedBy)
				out = append(out, *r)
			}
		}
	}
	return out, nil
}

// mergeCaseTable is the sharded cases as rows: per case and arm, how
// many shard-side $merge/$out ops were shed after writing, what they left
// behind and which nodes shed them. A router has no shed counter, so a
// shed it did would show as a shed no node claims.
func mergeCaseTable(rows []mergeCaseRow) template.HTML {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	// A data table like the report's others: borders, numbers right-aligned
	// under their headers, the case, the arm and the nodes left-aligned
	// (the page's style for #merge-cases).
	b.WriteString(`<table class="data" id="merge-cases"><tr><th>case</th><th>arm</th><th>ops</th><th>shed</th><th>shed after writing into the target (unsafe)</th><th>documents left in the target</th>` +
		`<th>$out temp leftovers (ops, documents)</th><th>shed by</th></tr>`)
	for _, r := range rows {
		by := "none"
		if len(r.ShedBy) > 0 {
			by = strings.Join(r.ShedBy, ", ")
		} else if r.Shed > 0 {
			by = `<span title="the shards' shed counters did not rise: not a shard's shed">no shard</span>`
		}
		if len(r.ShedBy) > 0 {
			by = template.HTMLEscapeString(by)
		}
		temp := "–"
		if r.Case == store.MergeCaseOut {
			temp = fmt.Sprintf("%d, %d", r.OutTemp, r.OutTempDocs)
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>",
			template.HTMLEscapeString(r.Case), template.HTMLEscapeString(r.Arm), r.Ops, r.Shed, r.Unsafe, r.LeftDocs, temp, by)
	}
	b.WriteString("</table>")
	return template.HTML(b.String())
}
