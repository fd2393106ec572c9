package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/ftdcimport"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/sweep"
	"github.com/qmlsab/qmlsab/workload"
)

// hasField reports whether the dotted path (after the type name) is a
// field of t, following structs and pointers to them.
func hasField(t reflect.Type, path []string) bool {
	for _, name := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return false
		}
		t = f.Type
	}
	return true
}

// takesFlags are the flags as written ("-n", "--arms") a command of the app takes.
func takesFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	flags, ok := commandFlags()[command]
	if !ok {
		t.Fatalf("no command %q", command)
	}
	out := map[string]bool{}
	for _, f := range flags {
		for _, n := range f.Names() {
			out[dashed(n)] = true
		}
	}
	return out
}

// Every row of the table names a field a library's errors name and a
// flag of the command that fills it: a field of a configuration type is
// one of that type's fields, and a parameter (a folder, a flag's value)
// one of the functions the command calls.
func TestFieldFlagsNameRealFieldsAndFlags(t *testing.T) {
	owners := map[string]struct {
		typ     reflect.Type // nil: a function's parameter
		command string
	}{
		"Spec":           {reflect.TypeFor[run.Spec](), "run"},
		"Exec":           {reflect.TypeFor[run.Exec](), "run"},
		"Given":          {reflect.TypeFor[run.Given](), "run"},
		"Run":            {nil, "run"},
		"Resume":         {nil, "run"},
		"Config":         {reflect.TypeFor[sweep.Config](), "sweep"},
		"EnsembleConfig": {reflect.TypeFor[sweep.EnsembleConfig](), "calibrate"},
		"MergeOptions":   {reflect.TypeFor[store.MergeOptions](), "merge"},
		"FromFlags":      {nil, "import ftdc"},
		"Import":         {nil, "import ftdc"},
		"Options":        {reflect.TypeFor[report.Options](), "report"},
	}
	for f, flag := range fieldFlags {
		parts := strings.Split(f, ".")
		o, ok := owners[parts[0]]
		switch {
		case !ok:
			t.Errorf("%s: no owner known", f)
			continue
		case o.typ != nil && !hasField(o.typ, parts[1:]):
			t.Errorf("%s names no field of %v", f, o.typ)
		}
		if !takesFlags(t, o.command)[flag] {
			t.Errorf("%s is qmlsab %s's field, but the command has no flag %s", f, o.command, flag)
		}
	}
}

// The libraries' own errors, as the commands show them, name the flags
// the user typed; a field no flag sets keeps the name its library gives.
func TestLibraryErrorsReadAsFlags(t *testing.T) {
	d, _ := arms.Lookup("D")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	_, _, mergeErr := store.MergeShards(context.Background(), store.MergeOptions{Expect: 0, Out: t.TempDir()})
	two, err := run.NewExperiment(run.Spec{Arms: []arms.Arm{d}, N: 2, Workload: spec})
	if err != nil {
		t.Fatal(err)
	}
	_, shardErr := run.Run(context.Background(), two, t.TempDir(), run.Exec{Shard: plan.Shard{Index: 1, Count: 3}})
	_, zeroErr := run.NewExperiment(run.Spec{Arms: []arms.Arm{d}, N: 0, Workload: spec})
	_, startErr := ftdcimport.FromFlags("D", "noon", ftdcimport.Phases{}, "", nil)
	for _, c := range []struct {
		err  error
		want string
	}{
		{zeroErr, "qmlsab run: -n 0: at least one trial per arm"},
		{shardErr, "qmlsab run: --shard 1/3: the plan has 2 units (one per trial of an arm, -n 2)"},
		{mergeErr, "qmlsab merge: --expect 0: the number of shards"},
		{startErr, `qmlsab import ftdc: --start "noon": want an RFC 3339 time`},
		{field.Errorf("Spec.Unflagged", 3, "as %v %d", field.Ref(run.FieldN), 2), "qmlsab run: Spec.Unflagged 3: as -n 2"},
	} {
		if c.err == nil {
			t.Errorf("no error; want %q", c.want)
			continue
		}
		command, _, _ := strings.Cut(c.want, ": ")
		var exit cli.ExitCoder
		got := refusal(command)("%v", c.err)
		if !strings.HasPrefix(got.Error(), c.want) || !errors.As(got, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%v shown as %q (exit %v); want exit 1 with %q…", c.err, got, exit, c.want)
		}
	}
}
