package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// flagConcept is one thing a user tells qmlsab, the one flag name every
// command uses for it and, unless perCommand says why not, its one
// default.
type flagConcept struct {
	flag       string
	def        string   // the default every command shows (defaultText)
	perCommand string   // why commands' defaults differ; "" means they must not
	commands   []string // the commands that take it
}

// concepts is every visible flag of every command, by concept. A new flag
// must be added here, which is where a second name for a concept shows.
var concepts = map[string]flagConcept{
	"history store":       {"history-db", `"results/history.db"`, "", []string{"report", "history add", "history list", "history detect", "history export", "trend"}},
	"trials per arm":      {"n", "", "each command's own cost: a run 5, a sweep cell 3, calibrate 5", []string{"run", "sweep", "calibrate"}},
	"first seed":          {"seed", "1", "", []string{"run", "sweep", "calibrate"}},
	"phase lengths":       {"profile", `"default"`, "", []string{"run", "sweep", "calibrate"}},
	"trials at once":      {"parallel", "", "run on the wall clock measures the CPUs, so runs one at a time there", []string{"run", "sweep", "calibrate"}},
	"arms to compare":     {"arms", "", "each command's comparison: run D,E; sweep D,E,F; calibrate the investigation's arms", []string{"run", "sweep", "calibrate"}},
	"arms file":           {"arms-file", "", "", []string{"arms list", "arms show", "run", "sweep"}},
	"workload to run":     {"workload", `"spill_to_disk"`, "", []string{"run", "sweep"}},
	"where output goes":   {"out", "", "a folder for commands writing several files, a file for those writing one", []string{"run", "merge", "sweep", "report", "import ftdc", "trend", "history export", "calibrate"}},
	"output format":       {"format", "", "each command's own outputs", []string{"report", "ftdc dump", "history detect", "history export", "arms list", "workloads list", "sweep", "history list", "calibrate"}},
	"one shard":           {"shard", "", "", []string{"run", "calibrate"}},
	"every column":        {"wide", "false", "", []string{"arms list", "workloads list", "sweep", "run", "history list", "history detect"}},
	"unfinished runs":     {"allow-partial", "false", "", []string{"report", "merge", "history add"}},
	"run labels":          {"label", "", "", []string{"report", "history add", "history list", "history detect", "history export", "trend"}},
	"nights of workload":  {"workload", "", "", []string{"history list", "history detect", "history export", "trend"}},
	"newest nights":       {"last", "all", "", []string{"history list", "history detect", "history export", "trend"}},
	"arms to examine":     {"arms", "all", "", []string{"history detect", "history export", "trend"}},
	"metrics to examine":  {"metric", "", "detect examines every directed metric, trend draws the key ones", []string{"history detect", "history export", "trend"}},
	"results folder":      {"results", `"results"`, "", []string{"report", "trend"}},
	"significance level":  {"alpha", "0.05", "", []string{"report", "history detect"}},
	"list instead":        {"list", "false", "", []string{"sweep", "ftdc dump"}},
	"the imported arm":    {"arm", "", "", []string{"import ftdc"}},
	"shuffle seed":        {"seed", "1234", "", []string{"history detect"}},
	"sweep grid":          {"vary", "", "", []string{"sweep"}},
	"sweep fixed setting": {"set", "", "", []string{"sweep"}},
}

// single are flags only one command takes: nothing to agree with.
var single = map[string][]string{
	"run":            {"clock", "topology", "resume", "shards", "allow-remote", "verbose"},
	"merge":          {"expect"},
	"report":         {"baseline", "gates", "gate-predictions", "history"},
	"calibrate":      {"storm-rate", "storm", "fit", "space", "samples", "refine", "fit-seeds", "observed", "predict", "starts", "acceptable", "predict-points", "from", "merge"},
	"history detect": {"effect", "recent", "permutations", "min-segment", "baseline-nights", "min-shift", "no-tonight", "night"},
	"import ftdc":    {"spec", "start", "phases", "outcomes"},
	"ftdc dump":      {"paths"},
	"sim":            {"members", "election-timeout", "for"},
}

// commandFlags is every command's flags by its path (history detect).
func commandFlags() map[string][]cli.Flag {
	out := map[string][]cli.Flag{}
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := strings.TrimSpace(path + " " + c.Name)
			out[p] = c.Flags
			walk(p, c.Subcommands)
		}
	}
	walk("", newApp().Commands)
	return out
}

// One name per concept, one default per concept, and every flag accounted
// for: a command that names a concept its own way (--db for the history)
// has a flag no concept claims, and fails here.
func TestFlagsNameEachConceptOnceWithOneDefault(t *testing.T) {
	all := commandFlags()
	claimed := map[string]string{} // "cmd --flag" → concept
	claim := func(cmd, flag, concept string) {
		k := cmd + " " + dashed(flag)
		if prev, ok := claimed[k]; ok {
			t.Errorf("%s: claimed by %q and %q", k, prev, concept)
		}
		claimed[k] = concept
	}
	for concept, fc := range concepts {
		defaults := map[string][]string{}
		for _, cmd := range fc.commands {
			i := slices.IndexFunc(all[cmd], func(f cli.Flag) bool { return f.Names()[0] == fc.flag })
			if i < 0 {
				t.Errorf("%s: qmlsab %s has no %s", concept, cmd, dashed(fc.flag))
				continue
			}
			claim(cmd, fc.flag, concept)
			d := defaultText(all[cmd][i])
			defaults[d] = append(defaults[d], cmd)
			if fc.perCommand == "" && d != fc.def {
				t.Errorf("%s: qmlsab %s %s defaults to %q, want %q as everywhere", concept, cmd, dashed(fc.flag), d, fc.def)
			}
		}
		if fc.perCommand != "" && len(defaults) < 2 {
			t.Errorf("%s: all its commands now agree on %v; drop the exception %q", concept, defaults, fc.perCommand)
		}
	}
	for cmd, names := range single {
		for _, n := range names {
			claim(cmd, n, "single")
		}
	}
	for cmd, flags := range all {
		for _, f := range flags {
			name := f.Names()[0]
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				if renamedFlags[name] == "" || !slices.ContainsFunc(flags, func(g cli.Flag) bool { return g.Names()[0] == renamedFlags[name] }) {
					t.Errorf("qmlsab %s: hidden flag %s is not an old spelling of one of its flags", cmd, dashed(name))
				}
				continue
			}
			if _, ok := claimed[cmd+" "+dashed(name)]; !ok {
				t.Errorf("qmlsab %s %s: no concept claims it; add it to concepts (under the concept's one name) or single", cmd, dashed(name))
			}
		}
	}
	var names []string
	for k := range claimed {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		cmd, flag, _ := strings.Cut(k, " -")
		if flag = strings.TrimLeft(flag, "-"); !slices.ContainsFunc(all[cmd], func(f cli.Flag) bool { return f.Names()[0] == flag }) {
			t.Errorf("%s is claimed but not a flag", k)
		}
	}
}

// An old spelling still works, says so once on stderr, and gives what the
// new one gives.
func TestRenamedFlagsWorkWithADeprecationLine(t *testing.T) {
	missing := t.TempDir() + "/none.db"
	newOut, newCode := qmlsab(t, "history", "list", "--history-db", missing)
	oldOut, oldCode := qmlsab(t, "history", "list", "--db", missing)
	if oldCode != newCode || newCode != 1 {
		t.Fatalf("exit %d with --db, %d with --history-db; want both 1 (no history there)", oldCode, newCode)
	}
	if !strings.Contains(newOut, "no history there (a reader never creates one); qmlsab history add or report --history creates it") {
		t.Errorf("a missing history, as history list reads it: %s; want it to say which commands create one", newOut)
	}
	deprecation := "qmlsab history list: --db is deprecated and will be removed; use --history-db\n"
	if !strings.HasPrefix(oldOut, deprecation) || strings.TrimPrefix(oldOut, deprecation) != newOut {
		t.Errorf("--db output:\n%s\nwant the deprecation line, then --history-db's:\n%s", oldOut, newOut)
	}
	if strings.Contains(newOut, "deprecated") {
		t.Errorf("--history-db warns: %s", newOut)
	}
	// Written after the positional arguments too.
	out, _ := qmlsab(t, "history", "add", t.TempDir(), "--db", missing)
	if strings.Count(out, "--db is deprecated") != 1 {
		t.Errorf("trailing --db: want one deprecation line:\n%s", out)
	}
	for old, name := range renamedFlags {
		for cmd, flags := range commandFlags() {
			hasNew := slices.ContainsFunc(flags, func(f cli.Flag) bool { return f.Names()[0] == name })
			for _, f := range flags {
				if f.Names()[0] == old && hasNew && f.(cli.VisibleFlag).IsVisible() {
					t.Errorf("qmlsab %s: %s is an old spelling of %s but visible in help", cmd, dashed(old), dashed(name))
				}
			}
		}
	}
}

// A list flag's old spelling, repeated once per value, is the new
// comma-separated flag (--arm D --arm E is --arms D,E), and a float's old
// spelling sets the new flag (-p is --alpha); a flag of another command
// that has the old name as its own (import ftdc --arm) is not touched.
func TestRenamedListAndFloatFlags(t *testing.T) {
	db := tableHistory(t)
	args := []string{"history", "detect", "--history-db", db, "--metric", "availability", "--recent", "12", "--format", "json"}
	newOut, newCode := qmlsab(t, append(args, "--arms", "D", "--alpha", "0.01")...)
	oldOut, oldCode := qmlsab(t, append(args, "--arm", "D", "-p", "0.01")...)
	deprecation := "qmlsab history detect: --arm is deprecated and will be removed; use --arms\n" +
		"qmlsab history detect: -p is deprecated and will be removed; use --alpha\n"
	if oldCode != newCode || !strings.HasPrefix(oldOut, deprecation) || strings.TrimPrefix(oldOut, deprecation) != newOut {
		t.Errorf("--arm D -p 0.01: exit %d\n%s\nwant exit %d, the deprecation lines, then what --arms D --alpha 0.01 prints:\n%s", oldCode, oldOut, newCode, newOut)
	}
	// Both arms of a repeated old flag reach the new one: an arm the
	// history does not have is named whichever way it was given.
	for _, spelled := range [][]string{{"--arms", "D,Z"}, {"--arm", "D", "--arm", "Z"}} {
		out, code := qmlsab(t, append([]string{"history", "export", "--history-db", db}, spelled...)...)
		if code != 1 || !strings.Contains(out, `"Z"`) {
			t.Errorf("history export %s: exit %d, %s; want exit 1 naming arm Z", strings.Join(spelled, " "), code, out)
		}
	}
	if out, code := qmlsab(t, "trend", "--history-db", db, "--arms", "D", "--out", t.TempDir()+"/trend.html"); code != 0 || strings.Contains(out, "deprecated") {
		t.Errorf("trend --arms D: exit %d\n%s", code, out)
	}
}

// Help states each default once: never "(default: every CPU) (default: 0)"
// nor "(required) (default: 0)".
func TestHelpStatesEachDefaultOnce(t *testing.T) {
	for cmd := range commandFlags() {
		out, code := qmlsab(t, append(strings.Fields(cmd), "--help")...)
		if code != 0 {
			t.Fatalf("%s --help: exit %d\n%s", cmd, code, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Count(l, "(default:") > 1 || strings.Contains(l, "(required) (default") {
				t.Errorf("qmlsab %s --help: %q", cmd, strings.TrimSpace(l))
			}
		}
	}
	if out, _ := qmlsab(t, "merge", "--help"); !strings.Contains(out, "(required)\n") {
		t.Errorf("merge --help should say --expect is required, once:\n%s", out)
	}
	if got := fmt.Sprint(defaultText(&cli.StringFlag{Name: "x", Usage: "a (default: the (first) folder)"})); got != "the (first) folder" {
		t.Errorf("defaultText = %q", got)
	}
}
