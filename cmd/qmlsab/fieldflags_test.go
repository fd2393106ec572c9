package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/arms"
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

// Every row of the table names a field of a library's configuration and
// a flag of the command that fills that configuration; a field name two
// configurations share maps to a flag both commands take.
func TestFieldFlagsNameRealFieldsAndFlags(t *testing.T) {
	owners := map[string][]struct {
		typ     reflect.Type
		command string
	}{
		"Config":       {{reflect.TypeFor[run.Config](), "run"}, {reflect.TypeFor[sweep.Config](), "sweep"}},
		"MergeOptions": {{reflect.TypeFor[store.MergeOptions](), "merge"}},
	}
	for ref, flag := range fieldFlags {
		parts := strings.Split(ref, ".")
		if !fieldRef.MatchString(ref) || fieldRef.FindString(ref) != ref {
			t.Errorf("%s: not a reference inFlags recognises", ref)
		}
		found := false
		for _, o := range owners[parts[0]] {
			if !hasField(o.typ, parts[1:]) {
				continue
			}
			found = true
			if !takesFlags(t, o.command)[flag] {
				t.Errorf("%s is %s's field, but qmlsab %s has no flag %s", ref, o.typ, o.command, flag)
			}
		}
		if !found {
			t.Errorf("%s names no field of %v", ref, owners[parts[0]])
		}
	}
}

// A reference is rewritten only where it stands alone and has a row;
// anything else in the message, field-like or not, is left as it was.
func TestInFlagsRewritesWholeReferencesOnly(t *testing.T) {
	for in, want := range map[string]string{
		"Config.N 0: at least one trial per arm":                                     "-n 0: at least one trial per arm",
		"Config.Clock x: r was started with Config.Clock y (leave Config.Clock out)": "--clock x: r was started with --clock y (leave --clock out)",
		"use Config.Resume d or another Config.Dir.":                                 "use --resume d or another --out.",
		"Config.Name and Config.Nope stay":                                           "Config.Name and Config.Nope stay",
		"/tmp/myConfig.N/x and Config.Ns":                                            "/tmp/myConfig.N/x and Config.Ns",
		"Config.Base.Hardware: no row, kept":                                         "Config.Base.Hardware: no row, kept",
	} {
		if got := inFlags(in); got != want {
			t.Errorf("inFlags(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// The libraries' own errors, as the commands show them, name the flags
// the user typed.
func TestLibraryErrorsReadAsFlags(t *testing.T) {
	d, _ := arms.Lookup("D")
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	_, _, mergeErr := store.MergeShards(context.Background(), store.MergeOptions{Expect: 0, Out: t.TempDir()})
	for _, c := range []struct {
		err  error
		want string
	}{
		{run.Config{Arms: []arms.Arm{d}, N: 0, Workload: spec}.Validate(), "qmlsab run: -n 0: at least one trial per arm"},
		{run.Config{Arms: []arms.Arm{d}, N: 2, Workload: spec, Shard: store.Shard{Index: 1, Count: 3}}.Validate(),
			"qmlsab run: --shard 1/3: the plan has 2 units (one per trial of an arm, -n 2)"},
		{mergeErr, "qmlsab merge: --expect 0: the number of shards"},
	} {
		if c.err == nil {
			t.Errorf("no error; want %q", c.want)
			continue
		}
		command, _, _ := strings.Cut(c.want, ": ")
		var exit cli.ExitCoder
		got := refusal(command)("%v", c.err)
		if !strings.HasPrefix(got.Error(), c.want) || !asExit(got, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%v shown as %q (exit %v); want exit 1 with %q…", c.err, got, exit, c.want)
		}
	}
}

func asExit(err error, exit *cli.ExitCoder) bool {
	e, ok := err.(cli.ExitCoder)
	*exit = e
	return ok
}
