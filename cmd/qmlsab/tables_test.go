package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/texttable"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/workload"
)

// checkFits fails for every line of out wider than a terminal, except
// those naming skip (a temporary folder's path, whose length is the
// machine's).
func checkFits(t *testing.T, what, out, skip string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > texttable.Width && (skip == "" || !strings.Contains(l, skip)) {
			t.Errorf("%s: a %d-column line: %q", what, n, l)
		}
	}
}

// tableHistory is a history of twelve nights of arm D whose availability
// falls after the sixth, with labels and a long host name.
func tableHistory(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	for n := 0; n < 12; n++ {
		avail := 0.98
		if n >= 6 {
			avail = 0.60
		}
		r := history.Run{ID: fmt.Sprintf("20250301T020000Z-night%02d", n+1), Started: start.Add(time.Duration(n) * 24 * time.Hour),
			Workload: "spill_to_disk", Arms: []history.Arm{{Name: "D", Build: "472d159296b6"}}, Simulated: true,
			Labels: map[string]string{"branch": "main", "commit": "0123456789abcdef0123456789abcdef01234567"},
			Host:   history.Host{Name: "runner-1,runner-2,runner-3"}}
		for i := 1; i <= 3; i++ {
			r.Trials = append(r.Trials, history.Trial{Arm: "D", Index: i, Metrics: map[string]float64{
				"availability": avail + 0.001*float64(i), "rss_peak_bytes": 23.3e9 + 1e8*float64(i) + 4e9*float64(n/6)}})
		}
		if _, err := st.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// Every default table fits 80 columns for the built-in arms and
// workloads, the sweep's names, a 3-arm run and a history; --wide shows
// every column; --format json and csv parse with every column.
func TestDefaultTablesFitATerminal(t *testing.T) {
	db := tableHistory(t)
	dir := filepath.Join(t.TempDir(), "run")
	runOut, code := qmlsab(t, "run", "--arms", "D,E,F", "--n", "1", "--profile", "quick", "--parallel", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, runOut)
	}
	cases := []struct {
		args []string
		wide []string // headers only --wide shows
	}{
		{[]string{"arms", "list"}, []string{"ADDRESS", "PARAMETERS", "ACTORS"}},
		{[]string{"workloads", "list"}, []string{"KIND"}},
		{[]string{"sweep", "--list"}, []string{"VALUES", "MEANING"}},
		{[]string{"history", "list", "--history-db", db}, []string{"LABELS"}},
		{[]string{"history", "detect", "--history-db", db, "--arms", "D", "--metric", "availability", "--metric", "rss_peak_bytes", "--recent", "12"}, []string{"RUN", "DATE", "SERIES"}},
	}
	for _, c := range cases {
		what := strings.Join(c.args, " ")
		out, code := qmlsab(t, c.args...)
		if code != 0 && !(c.args[1] == "detect" && code == exitRegression) {
			t.Fatalf("%s: exit %d\n%s", what, code, out)
		}
		checkFits(t, what, out, "")
		wide, _ := qmlsab(t, append(c.args, "--wide")...)
		for _, h := range c.wide {
			if !slices.ContainsFunc(strings.Split(wide, "\n"), func(l string) bool { return l != "" && !unicode.IsSpace([]rune(l)[0]) && hasWord(l, h) }) {
				t.Errorf("%s --wide lacks column %s:\n%s", what, h, wide)
			}
			if slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
				f := strings.Fields(l)
				return len(f) > 0 && (f[0] == "NAME" || f[0] == "NIGHT") && strings.HasPrefix(l, f[0]) && hasWord(l[len(f[0]):], h)
			}) {
				t.Errorf("%s shows the wide column %s by default", what, h)
			}
		}
	}
	if out, _ := qmlsab(t, "history", "detect", "--history-db", db, "--arms", "D", "--metric", "rss_peak_bytes", "--recent", "12"); !hasDigitBefore(out, " GiB") || strings.Contains(out, "e+") {
		t.Errorf("history detect does not write bytes in GiB:\n%s", out)
	}

	// The run's trial table: the essential columns in 80, every one wide.
	checkFits(t, "run", runOut, dir)
	for _, arm := range []string{"D", "E", "F"} {
		if lineWithFields(runOut, arm+"#1", "valid") == "" {
			t.Errorf("run output lacks arm %s's trial row:\n%s", arm, runOut)
		}
	}
	wideRun, code := qmlsab(t, "run", "--arms", "D,E,F", "--n", "1", "--profile", "quick", "--parallel", "1", "--wide", "--out", filepath.Join(t.TempDir(), "wide"))
	if code != 0 {
		t.Fatalf("run --wide: exit %d\n%s", code, wideRun)
	}
	head := lineWithFields(wideRun, "trial", "status")
	for _, col := range run.TrialTableColumns(workload.KindSpillToDisk) {
		if !strings.Contains(head, col.Title) {
			t.Errorf("run --wide header %q lacks %q", head, col.Title)
		}
		if col.Wide && strings.Contains(lineWithFields(runOut, "trial", "status"), col.Title) {
			t.Errorf("run shows the wide column %q by default", col.Title)
		}
	}
	// Every outcome of the storm's queries is in the default table:
	// failed ones are a crash loop's headline.
	if f := strings.Fields(lineWithFields(runOut, "trial", "status")); !strings.Contains(" "+strings.Join(f, " ")+" ", " ok shed killed failed ") {
		t.Errorf("the default run table lacks a storm outcome (ok, shed, killed, failed):\n%s", runOut)
	}

	// Machines: every column, every row.
	for _, c := range []struct {
		args []string
		rows int
		keys []string
	}{
		{[]string{"arms", "list"}, 6, []string{"name", "target", "build", "description", "address", "parameters", "actors"}},
		{[]string{"workloads", "list"}, 2, []string{"name", "kind", "length", "description"}},
		{[]string{"sweep", "--list"}, 0, []string{"name", "D", "E", "F", "values", "meaning"}},
		{[]string{"history", "list", "--history-db", db}, 12, []string{"night", "started", "run", "workload", "arms", "trials", "host", "labels"}},
	} {
		what := strings.Join(c.args, " ")
		out, code := qmlsab(t, append(c.args, "--format", "json")...)
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil {
			t.Fatalf("%s --format json: exit %d, %v\n%s", what, code, err, out)
		}
		if c.rows > 0 && len(rows) < c.rows || len(rows) == 0 {
			t.Errorf("%s --format json: %d rows, want at least %d", what, len(rows), max(c.rows, 1))
		}
		for _, k := range c.keys {
			if _, ok := rows[0][k]; !ok {
				t.Errorf("%s --format json: row %v lacks %q", what, rows[0], k)
			}
		}
		out, code = qmlsab(t, append(c.args, "--format", "csv")...)
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if code != 0 || err != nil || len(recs) != len(rows)+1 || strings.Join(recs[0], ",") != strings.Join(c.keys, ",") {
			t.Errorf("%s --format csv: exit %d, %v, %d records for %d JSON rows, header %q", what, code, err, len(recs), len(rows), recs[0])
		}
	}
	if out, code := qmlsab(t, "arms", "list", "--format", "yaml"); code != 1 || !strings.Contains(out, `--format "yaml": want text, json or csv`) {
		t.Errorf("arms list --format yaml: exit %d, %q", code, out)
	}
	if rows := historyRows(t, db); rows["20250301T020000Z-night01"]["labels"] == nil {
		t.Errorf("history list JSON lacks the labels: %v", rows)
	}
}

func historyRows(t *testing.T, db string) map[string]map[string]any {
	out, _ := qmlsab(t, "history", "list", "--history-db", db, "--format", "json")
	var rows []map[string]any
	json.Unmarshal([]byte(out), &rows)
	byRun := map[string]map[string]any{}
	for _, r := range rows {
		byRun[fmt.Sprint(r["run"])] = r
	}
	return byRun
}

// No output for people calls a binary size "MB" (or GB, KB): sizes are
// MiB/GiB with their true names in the terminal, Markdown and HTML.
func TestNoOutputSaysMBForABinarySize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var outs []string
	out, code := qmlsab(t, "run", "--arms", "D,E,F", "--n", "1", "--profile", "quick", "--parallel", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	outs = append(outs, out)
	out, code = qmlsab(t, "report", "--format", "html,md", dir)
	if code != 0 && code != exitGateFailed {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	outs = append(outs, out)
	for _, f := range []string{"summary.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		// The page's text, without the charting library's code.
		outs = append(outs, withoutScripts(string(b)))
	}
	db := tableHistory(t)
	for _, args := range [][]string{{"arms", "list", "--wide"}, {"workloads", "show", "spill_to_disk"}, {"sweep", "--list"},
		{"history", "detect", "--history-db", db, "--arms", "D", "--recent", "12"}, {"history", "detect", "--history-db", db, "--arms", "D", "--recent", "12", "--format", "md"}} {
		out, _ := qmlsab(t, args...)
		outs = append(outs, out)
	}
	// A decimal unit after a number, or as a column's unit: "23 MB", "(MB)", "rss MB".
	for i, o := range outs {
		if m := decimalUnit(o); m != "" {
			k := strings.Index(o, m)
			t.Errorf("output %d says %q for a binary size: …%s…", i, m, o[max(0, k-80):min(len(o), k+80)])
		}
	}
}

// hasDigitBefore reports whether s holds suffix right after a digit.
func hasDigitBefore(s, suffix string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], suffix)
		if j < 0 {
			return false
		}
		if k := i + j; k > 0 && s[k-1] >= '0' && s[k-1] <= '9' {
			return true
		}
		i += j + 1
	}
}

// withoutScripts is a page's text without its <script> elements.
func withoutScripts(page string) string {
	return replaceEach(page, "<script", "</script>", func(string) string { return "" })
}

// decimalUnit is the first decimal size unit (KB, MB, GB or TB as a
// word's end) in o written after a number ("23 MB", "23MB"), as a
// column's unit ("(MB)") or after a memory word ("rss MB"); "" when none.
func decimalUnit(o string) string {
	for k := 0; k+2 <= len(o); k++ {
		unit := o[k : k+2]
		if unit != "KB" && unit != "MB" && unit != "GB" && unit != "TB" {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(o[k+2:]); k+2 < len(o) && isWordRune(r) {
			continue
		}
		pre := o[:k]
		last, n := utf8.DecodeLastRuneInString(pre)
		switch {
		case last == '(' || unicode.IsDigit(last):
			return o[k-n : k+2]
		case unicode.IsSpace(last):
			before := pre[:len(pre)-n]
			if r, m := utf8.DecodeLastRuneInString(before); unicode.IsDigit(r) {
				return o[k-n-m : k+2]
			}
			for _, w := range []string{"rss", "peak", "resident", "memory", "size"} {
				if strings.HasSuffix(before, w) {
					if r, _ := utf8.DecodeLastRuneInString(before[:len(before)-len(w)]); !isWordRune(r) {
						return o[len(before)-len(w) : k+2]
					}
				}
			}
		}
	}
	return ""
}
