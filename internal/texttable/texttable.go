// Package texttable writes tables for people and for machines. A command
// that prints a table builds a Table (its columns, each essential or wide-only, and its rows) and
// writes it in the form its flags ask for:
//
//   - text (the default): the essential columns, sized for an 80-column
//     terminal: a column marked wrap folds its long values over several
//     lines within its cell, as benchstat and mongostat keep to a screen;
//   - --wide: every column, one line a row, however long;
//   - --format json: an array of objects, one a row, every column, with
//     numbers as numbers and absent values as null;
//   - --format csv: a header and one record a row, every column, an
//     absent value as an empty field.
package texttable

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qmlsab/qmlsab/internal/units"
)

// Width is the width the default tables fit.
const Width = 80

// columnGap is the spaces between two columns.
const columnGap = 2

// minWrapWidth is the narrowest a wrapping column is folded to.
const minWrapWidth = 10

// Column is one column: its header, its machine name (the JSON key
// and CSV header), whether only --wide shows it, and whether its values
// may fold over several lines to fit the terminal.
type Column struct {
	Title string
	Key   string
	Wide  bool
	Wrap  bool
}

// Cell is what a row shows in a column: text for people, and for
// machines the value itself (a number, say) when it differs from the
// text. An absent cell is null in JSON and empty in CSV.
type Cell struct {
	Text   string
	Value  any
	Absent bool
}

// Text is a cell whose text is its value.
func Text(s string) Cell { return Cell{Text: s, Value: s} }

// Number is a cell that shows text to people; machines get v.
func Number(text string, v float64) Cell { return Cell{Text: text, Value: v} }

// Optional is a string that may be empty: "-" to people, "" to
// machines.
func Optional(s string) Cell { return Cell{Text: dash(s), Value: s} }

// Int is a cell holding a whole number.
func Int(n int) Cell { return Cell{Text: strconv.Itoa(n), Value: n} }

// Absent is a cell for a value the source did not report: text says so ("–",
// "–[2]" with a note), machines see null.
func Absent(text string) Cell { return Cell{Text: text, Absent: true} }

// Table is a table's columns and its rows, one cell per column.
type Table struct {
	Columns []Column
	Rows    [][]Cell
}

// Add appends a row, one cell per column; a row of another length is a
// programming error and panics.
func (t *Table) Add(cells ...Cell) {
	if len(cells) != len(t.Columns) {
		panic(fmt.Sprintf("table row of %d cells for %d columns", len(cells), len(t.Columns))) // a programming error, not an outcome
	}
	t.Rows = append(t.Rows, cells)
}

// Format is how a table is written.
type Format struct {
	Machine string // "", "json" or "csv"
	Wide    bool
}

// Machine formats.
const (
	JSON = "json"
	CSV  = "csv"
)

// Write writes the table in format f.
func (t *Table) Write(w io.Writer, f Format) error {
	switch f.Machine {
	case JSON:
		return t.writeJSON(w)
	case CSV:
		return t.writeCSV(w)
	}
	return t.writeText(w, f.Wide)
}

func (t *Table) writeJSON(w io.Writer) error {
	rows := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		obj := map[string]any{}
		for i, col := range t.Columns {
			if r[i].Absent {
				obj[col.Key] = nil
			} else {
				obj[col.Key] = r[i].Value
			}
		}
		rows = append(rows, obj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("writing the table as JSON: %w", err)
	}
	return nil
}

func (t *Table) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, col := range t.Columns {
		head = append(head, col.Key)
	}
	cw.Write(head)
	for _, r := range t.Rows {
		rec := make([]string, len(r))
		for i, c := range r {
			switch v := c.Value.(type) {
			case float64:
				rec[i] = strconv.FormatFloat(v, 'g', -1, 64)
			case string, int, bool:
				rec[i] = fmt.Sprint(v)
			default: // no value, or one with no one field's form: the text
				rec[i] = c.Text
			}
			if c.Absent {
				rec[i] = ""
			}
		}
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the table as CSV: %w", err)
	}
	return nil
}

// writeText writes the columns a person reads: every column in one line
// a row when wide, else the essential ones within Width, the
// wrapping columns folded to the room the others leave.
func (t *Table) writeText(w io.Writer, wide bool) error {
	var shown []int
	for i, col := range t.Columns {
		if wide || !col.Wide {
			shown = append(shown, i)
		}
	}
	width := make([]int, len(shown))
	for j, i := range shown {
		width[j] = textWidth(t.Columns[i].Title)
		for _, r := range t.Rows {
			width[j] = max(width[j], textWidth(r[i].Text))
		}
	}
	if !wide {
		fitWidths(width, func(j int) bool { return t.Columns[shown[j]].Wrap })
	}
	line := func(cells []string) error {
		var b strings.Builder
		for j, s := range cells {
			if j > 0 {
				b.WriteString(strings.Repeat(" ", columnGap))
			}
			b.WriteString(s)
			if j < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", width[j]-textWidth(s)))
			}
		}
		_, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		return err
	}
	write := func(texts []string) error {
		folded := make([][]string, len(texts))
		lines := 1
		for j, s := range texts {
			folded[j] = fold(s, width[j])
			lines = max(lines, len(folded[j]))
		}
		for k := 0; k < lines; k++ {
			cells := make([]string, len(texts))
			for j := range texts {
				if k < len(folded[j]) {
					cells[j] = folded[j][k]
				}
			}
			if err := line(cells); err != nil {
				return err
			}
		}
		return nil
	}
	head := make([]string, len(shown))
	for j, i := range shown {
		head[j] = t.Columns[i].Title
	}
	if err := write(head); err != nil {
		return err
	}
	for _, r := range t.Rows {
		texts := make([]string, len(shown))
		for j, i := range shown {
			texts[j] = r[i].Text
		}
		if err := write(texts); err != nil {
			return err
		}
	}
	return nil
}

// fitWidths narrows the wrapping columns so that the line fits
// Width, sharing the room the other columns leave evenly (a
// column narrower than its share keeps its width and leaves the rest to
// the others), never below minWrapWidth.
func fitWidths(width []int, wraps func(int) bool) {
	fixed, total := 0, 0
	var wrapping []int
	for j, w := range width {
		total += w
		if wraps(j) {
			wrapping = append(wrapping, j)
		} else {
			fixed += w
		}
	}
	gaps := columnGap * (len(width) - 1)
	if total+gaps <= Width || len(wrapping) == 0 {
		return
	}
	room := Width - fixed - gaps
	for len(wrapping) > 0 {
		share := room / len(wrapping)
		var wider []int
		for _, j := range wrapping {
			if width[j] <= share {
				room -= width[j]
			} else {
				wider = append(wider, j)
			}
		}
		if len(wider) == len(wrapping) {
			for _, j := range wider {
				width[j] = max(share, minWrapWidth)
			}
			return
		}
		wrapping = wider
	}
}

// dash is s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Fold breaks s into lines of at most width characters at spaces (a word
// longer than a line is cut).
func Fold(s string, width int) []string { return fold(s, width) }

func fold(s string, width int) []string {
	if textWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, word := range words(s) {
		for textWidth(word) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(word)
			cut := width
			// Break a long name after a separator in it when there is
			// one: server_sheds_minus_ / admissions_per_s, runner-1, / runner-2.
			for k := width; k > width/2; k-- {
				if strings.ContainsRune("_.,/-", r[k-1]) {
					cut = k
					break
				}
			}
			lines, word = append(lines, string(r[:cut])), string(r[cut:])
		}
		switch {
		case cur == "":
			cur = word
		case textWidth(cur)+1+textWidth(word) <= width:
			cur += " " + word
		default:
			lines, cur = append(lines, cur), word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// words are s's words, a figure and the unit after it taken as one
// ("2^30 B.", "125 MiB/s"), so that no line ends in a figure whose unit
// starts the next.
func words(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		if n := len(out); n > 0 && endsInDigit(out[n-1]) && slices.Contains(units.Symbols, strings.TrimRight(w, ".,;:)]")) {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

func endsInDigit(w string) bool {
	r, _ := utf8.DecodeLastRuneInString(w)
	return unicode.IsDigit(r)
}

// textWidth is the columns s takes on a terminal (one a character: the
// tables hold no double-width ones).
func textWidth(s string) int { return utf8.RuneCountInString(s) }

// FoldParagraph writes prose folded to Width: its first line
// after first, the others after rest (a hanging indent, say).
func FoldParagraph(w io.Writer, s, first, rest string) {
	lines := fold(s, Width-textWidth(first))
	if len(lines) > 1 {
		lines = append(lines[:1], fold(strings.Join(lines[1:], " "), Width-textWidth(rest))...)
	}
	for k, l := range lines {
		indent := rest
		if k == 0 {
			indent = first
		}
		fmt.Fprintln(w, indent+l)
	}
}

// Count is n and a noun, plural unless n is 1: "1 trial", "2 trials"
// (for nouns whose plural adds an s).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
