package texttable

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qmlsab/qmlsab/internal/units"
)

func sample() *Table {
	t := &Table{Columns: []Column{{Title: "NAME", Key: "name"}, {Title: "SIZE", Key: "size"},
		{Title: "DESCRIPTION", Key: "description", Wrap: true}, {Title: "EXTRA", Key: "extra", Wide: true}}}
	long := strings.Repeat("a long description of the row ", 6)
	t.Add(Text("first"), Number("1.5", 1.5), Text(long), Text("only-wide-1"))
	t.Add(Text("second"), Absent("–[1]"), Text("short"), Optional(""))
	return t
}

func write(t *testing.T, tab *Table, f Format) string {
	t.Helper()
	var b bytes.Buffer
	if err := tab.Write(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The default text keeps to Width by folding the wrapping column, shows
// no wide-only column, and loses no word of the folded value.
func TestTextFitsWidthAndFoldsInItsCell(t *testing.T) {
	out := write(t, sample(), Format{})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > Width {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	if strings.Contains(out, "EXTRA") || strings.Contains(out, "only-wide-1") {
		t.Errorf("a wide-only column in the default text:\n%s", out)
	}
	if len(lines) < 4 {
		t.Fatalf("the long description is not folded over several lines:\n%s", out)
	}
	// Every continuation line starts blank up to the description column.
	col := strings.Index(lines[0], "DESCRIPTION")
	var words []string
	for i, l := range lines[1:] {
		if i > 0 && strings.HasPrefix(l, "second") {
			break
		}
		if i > 0 && strings.TrimSpace(l[:col]) != "" {
			t.Errorf("continuation line %q writes outside its cell", l)
		}
		words = append(words, strings.Fields(l[col:])...)
	}
	if got, want := strings.Join(words, " "), strings.TrimSpace(strings.Repeat("a long description of the row ", 6)); got != want {
		t.Errorf("folded cell reads %q, want %q", got, want)
	}
}

// Wide shows every column, one line a row.
func TestWideShowsEveryColumnOnOneLine(t *testing.T) {
	out := write(t, sample(), Format{Wide: true})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two rows, got %d lines:\n%s", len(lines), out)
	}
	for _, title := range []string{"NAME", "SIZE", "DESCRIPTION", "EXTRA"} {
		if !strings.Contains(lines[0], title) {
			t.Errorf("header %q lacks %s", lines[0], title)
		}
	}
	if !strings.HasSuffix(lines[1], "only-wide-1") || !strings.HasSuffix(lines[2], "-") {
		t.Errorf("rows do not end with the wide column:\n%s", out)
	}
}

// JSON has every column, numbers as numbers and an absent value as null;
// CSV has every column and an absent value empty.
func TestMachineFormatsParse(t *testing.T) {
	var rows []map[string]any
	if err := json.Unmarshal([]byte(write(t, sample(), Format{Machine: JSON})), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["size"] != 1.5 || rows[0]["extra"] != "only-wide-1" {
		t.Errorf("JSON rows %v", rows)
	}
	if v, ok := rows[1]["size"]; !ok || v != nil {
		t.Errorf("absent size is %v (present %v), want null", v, ok)
	}
	if rows[1]["extra"] != "" {
		t.Errorf("an empty optional value is %q for machines, want \"\"", rows[1]["extra"])
	}
	recs, err := csv.NewReader(strings.NewReader(write(t, sample(), Format{Machine: CSV}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != "name,size,description,extra" || recs[1][1] != "1.5" || recs[2][1] != "" {
		t.Errorf("CSV records %q", recs)
	}
}

func TestFoldBreaksLongNamesAfterSeparators(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"sheds_minus_admissions_per_s", 16, []string{"sheds_minus_", "admissions_per_s"}},
		{"runner-1,runner-2,runner-3 (SIMULATED)", 18, []string{"runner-1,runner-2,", "runner-3", "(SIMULATED)"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"fits", 10, []string{"fits"}},
	} {
		if got := Fold(c.in, c.width); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Fold(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// A figure and its unit stay on one line at every width: "2^30 B" is
// never folded into "2^30" and "B".
func TestFoldNeverSplitsAFigureFromItsUnit(t *testing.T) {
	s := "rss GiB: peak RSS, 2^30 B. The disk writes 125 MiB/s; a storm of 30 s at 12 % CPU, 3 arms"
	for width := len("125 MiB/s;"); width <= 90; width++ {
		lines := Fold(s, width)
		if got := strings.Join(lines, " "); got != s {
			t.Fatalf("width %d: folded text reads %q", width, got)
		}
		for i := 1; i < len(lines); i++ {
			first := strings.TrimRight(strings.Fields(lines[i])[0], ".,;:)]")
			if endsInDigit(lines[i-1]) && slices.Contains(units.Symbols, first) {
				t.Errorf("width %d: %q | %q splits a figure from its unit", width, lines[i-1], lines[i])
			}
		}
	}
	if got := Fold("3 arms", 4); strings.Join(got, "|") != "3|arms" {
		t.Errorf("a word that is no unit still folds after a figure: %q", got)
	}
}

func TestCountSaysOneOrMany(t *testing.T) {
	if got := Count(1, "arm") + ", " + Count(2, "trial") + ", " + Count(0, "trial"); got != "1 arm, 2 trials, 0 trials" {
		t.Errorf("Count: %q", got)
	}
}
