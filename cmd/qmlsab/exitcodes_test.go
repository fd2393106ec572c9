package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/store"
)

// The README's exit-code table is the code's, row for row, and so is the
// one `qmlsab --help` prints.
func TestExitCodeTableIsTheREADMEsAndTheHelps(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### Exit codes\n")
	if !ok {
		t.Fatal(`README.md has no "### Exit codes" section`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	var readme []exitCodeRow
	for _, line := range strings.Split(section, "\n") {
		// A row: | CODE | MEANING |
		inner, ok := strings.CutPrefix(line, "| ")
		inner, ok2 := strings.CutSuffix(inner, " |")
		code, meaning, ok3 := strings.Cut(inner, " | ")
		if ok && ok2 && ok3 && isDigits(code) && meaning != "" {
			n, _ := strconv.Atoi(code)
			readme = append(readme, exitCodeRow{n, meaning})
		}
	}
	if !slices.Equal(readme, exitCodes) {
		t.Errorf("README.md's exit codes:\n%v\nthe code's:\n%v", readme, exitCodes)
	}
	out, code := qmlsab(t, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
	// Help folds a long meaning over several lines (to 80 columns).
	_, codes, _ := strings.Cut(out, "EXIT CODES:\n")
	folded := strings.Join(strings.Fields(codes), " ")
	for _, e := range exitCodes {
		if !strings.Contains(" "+folded+" ", " "+strconv.Itoa(e.Code)+" "+e.Meaning+" ") {
			t.Errorf("--help lacks exit code %d (%s):\n%s", e.Code, e.Meaning, out)
		}
	}
	// The codes are distinct: each means one thing.
	seen := map[int]bool{}
	for _, e := range exitCodes {
		if seen[e.Code] {
			t.Errorf("exit code %d twice in the table", e.Code)
		}
		seen[e.Code] = true
	}
}

// commandPaths are every runnable command of the tree ("run", "history
// list"), and every command that only groups others.
func commandPaths() (leaves, groups [][]string) {
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(prefix), c.Name)
			if len(c.Subcommands) > 0 {
				groups = append(groups, p)
				walk(p, c.Subcommands)
			} else {
				leaves = append(leaves, p)
			}
		}
	}
	walk(nil, newApp().Commands)
	return leaves, groups
}

// Exit 2, in one line, for every command line that does not parse: an
// unknown command or subcommand, an unknown flag before or after a
// positional argument, a flag without its value; a near miss names what
// was meant.
func TestUsageErrorsExit2InOneLine(t *testing.T) {
	oneLine := func(args []string, want string) {
		t.Helper()
		out, code := qmlsab(t, args...)
		got := strings.TrimSpace(out)
		if code != exitUsage || strings.Contains(got, "\n") || !strings.HasPrefix(got, want) {
			t.Errorf("%v: exit %d:\n%s\nwant exit %d and one line starting %q", args, code, out, exitUsage, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reprot"}, `qmlsab: unknown command "reprot"; did you mean "report"?`},
		{[]string{"hsitory", "list"}, `qmlsab: unknown command "hsitory"; did you mean "history"?`},
		{[]string{"history", "lst"}, `qmlsab history: unknown command "lst"; did you mean "list"?`},
		{[]string{"history", "detcet", "--history-db", "x"}, `qmlsab history: unknown command "detcet"; did you mean "detect"?`},
		{[]string{"arms", "shwo", "F"}, `qmlsab arms: unknown command "shwo"; did you mean "show"?`},
		{[]string{"help", "reprot"}, `qmlsab: unknown help topic "reprot"; did you mean "report"?`},
		{[]string{"history", "help", "lst"}, `qmlsab history: unknown help topic "lst"; did you mean "list"?`},
		{[]string{"zzzzzz"}, `qmlsab: unknown command "zzzzzz" (known: version, sim, `},
		{[]string{"--arsm"}, `qmlsab: unknown flag "--arsm"`},
		{[]string{"run", "--arsm", "D"}, `qmlsab run: unknown flag "--arsm"; did you mean "--arms"?`},
		{[]string{"report", "somewhere", "--gtaes", "x"}, `qmlsab report: unknown flag "--gtaes"; did you mean "--gates"?`},
		{[]string{"history", "detect", "--recnet", "2"}, `qmlsab history detect: unknown flag "--recnet"; did you mean "--recent"?`},
		{[]string{"run", "--n"}, "qmlsab run: flag -n needs a value"},
		{[]string{"report", "somewhere", "--gates"}, "qmlsab report: flag --gates needs a value"},
		{[]string{"run", "--n", "three"}, `qmlsab run: invalid value "three" for flag -n`},
	} {
		oneLine(tc.args, tc.want)
	}
	// Every command, wherever the flag is written.
	leaves, groups := commandPaths()
	for _, p := range leaves {
		if p[len(p)-1] == "help" {
			continue
		}
		path := "qmlsab " + strings.Join(p, " ")
		oneLine(append(slices.Clone(p), "--no-such-flag"), path+`: unknown flag "--no-such-flag"`)
		oneLine(append(slices.Clone(p), "somewhere", "--no-such-flag"), path+`: unknown flag "--no-such-flag"`)
	}
	for _, p := range groups {
		oneLine(append(slices.Clone(p), "no-such-command"), "qmlsab "+strings.Join(p, " ")+`: unknown command "no-such-command"`)
	}
	for _, want := range [][]string{{"run"}, {"report"}, {"history", "detect"}, {"ftdc", "dump"}} {
		if !slices.ContainsFunc(leaves, func(p []string) bool { return slices.Equal(p, want) }) {
			t.Errorf("the walk of the command tree missed %v", want)
		}
	}
}

// A command that only groups others still shows its help, exit 0.
func TestGroupsWithoutASubcommandShowTheirHelp(t *testing.T) {
	_, groups := commandPaths()
	for _, p := range append(groups, []string{}) {
		out, code := qmlsab(t, p...)
		if code != exitOK || !strings.Contains(out, "COMMANDS:") {
			t.Errorf("qmlsab %s: exit %d, want 0 and the command list:\n%s", strings.Join(p, " "), code, out)
		}
	}
}

// Exit 0 and exit 1 for each top-level command: a command that works,
// and bad input that parses but is wrong. Exit 3 and 4 are pinned by the
// gate and history tests (TestReportGatesExitCodesFollowEachArmsExpectation,
// TestReportExitCodes, and history's), 130 by TestInterruptedRunExits130.
func TestExitCodesOfEachCommand(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"version"}, exitOK},
		{[]string{"--version"}, exitOK},
		{[]string{"--help"}, exitOK},
		{[]string{"report", "--help"}, exitOK},
		{[]string{"arms", "list"}, exitOK},
		{[]string{"arms", "show", "F"}, exitOK},
		{[]string{"workloads", "list"}, exitOK},
		{[]string{"arms", "show", "Q"}, exitFailed},
		{[]string{"workloads", "show", "nope"}, exitFailed},
		{[]string{"sim", "--members", "0"}, exitFailed},
		{[]string{"run", "--n", "0"}, exitFailed},
		{[]string{"report", filepath.Join(tmp, "none")}, exitFailed},
		{[]string{"merge"}, exitFailed},
		{[]string{"calibrate", "--arms", "Q"}, exitFailed},
		{[]string{"sweep"}, exitFailed},
		{[]string{"history", "detect", "--recent", "0"}, exitFailed},
		{[]string{"trend", "--history-db", filepath.Join(file, "h.db"), "--out", filepath.Join(tmp, "t")}, exitFailed},
		{[]string{"import", "ftdc", "--arm", "D", "--out", filepath.Join(tmp, "i")}, exitFailed},
		{[]string{"ftdc", "dump"}, exitFailed},
	} {
		if out, code := qmlsab(t, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d:\n%s", tc.args, code, tc.code, out)
		}
	}
}

// signalOnLine is an output that sends this process sig once a line
// holding trigger is written: a user pressing Ctrl-C at that point.
type signalOnLine struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	sig     syscall.Signal
	once    sync.Once
}

func (w *signalOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.trigger) {
		w.once.Do(func() { syscall.Kill(os.Getpid(), w.sig) })
	}
	return len(p), nil
}

func (w *signalOnLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A run stopped by SIGINT or SIGTERM exits 130 (not 1, a failed run),
// keeps the trials it finished and names the command that completes it;
// the resumed run then exits 0 with every trial valid.
func TestInterruptedRunExits130(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { interruptedRunExits130(t, sig) })
	}
}

func interruptedRunExits130(t *testing.T, sig syscall.Signal) {
	dir := filepath.Join(t.TempDir(), "run")
	app := newApp()
	// The second trial starts only once the first is done (one at a
	// time), so the signal comes with one trial finished.
	out := &signalOnLine{trigger: "trial E#2: started", sig: sig}
	app.Writer, app.ErrWriter = out, out
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.RunContext(context.Background(), []string{"qmlsab", "run", "--arms", "E", "--n", "4", "--profile", "quick", "--parallel", "1", "--out", dir})
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted run: %v, want exit %d\n%s", err, exitInterrupted, out)
	}
	if !strings.Contains(err.Error(), "qmlsab run --resume "+dir) {
		t.Errorf("the message does not name the resume command: %v", err)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	valid := stormtest.ValidTrials(r)
	if valid < 1 || valid >= 4 {
		t.Fatalf("%d of 4 trials valid after the interrupt; want the finished ones kept and the rest not run\n%s", valid, out)
	}
	msg, code := qmlsab(t, "run", "--resume", dir)
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, msg)
	}
	if r, err = store.Open(dir); err != nil || len(r.Trials["E"]) != 4 {
		t.Fatalf("after the resume: %v, %d valid trials, want 4", err, len(r.Trials["E"]))
	}
}

// sim ended by Ctrl-C (or kill) exits 130, as every command a signal
// stops; ended by --for, 0.
func TestInterruptedSimExits130(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			app := newApp()
			out := &signalOnLine{trigger: "members:", sig: sig}
			app.Writer, app.ErrWriter = out, out
			app.ExitErrHandler = func(*cli.Context, error) {}
			err := app.RunContext(context.Background(), []string{"qmlsab", "sim", "--members", "1"})
			var ec cli.ExitCoder
			if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted || !strings.Contains(err.Error(), "interrupted by "+signalName(sig)) {
				t.Fatalf("sim stopped by %v: %v, want exit %d saying so\n%s", sig, err, exitInterrupted, out)
			}
		})
	}
}
