package main

import (
	"fmt"
	"regexp"

	"github.com/urfave/cli/v2"
)

// fieldFlags maps the configuration fields that library errors name
// (run.Config, sweep.Config, store.MergeOptions: "Config.N 0: at least
// one trial per arm") to the flag that sets each, so that the user reads
// "-n 0: …". It is the one place a field meets its flag: a library
// speaks in its own fields, and a new flag that sets a checked field adds
// its row here. The keys are the type and field as the libraries write
// them; the same field name in two libraries' Config types must mean the
// same flag (TestFieldFlagsNameRealFieldsAndFlags checks both sides).
var fieldFlags = map[string]string{
	// run.Config (qmlsab run)
	"Config.Arms":     "--arms",
	"Config.N":        "-n",
	"Config.Parallel": "--parallel",
	"Config.Clock":    "--clock",
	"Config.Topology": "--topology",
	"Config.Shard":    "--shard",
	"Config.Profile":  "--profile",
	"Config.Workload": "--workload",
	"Config.Seed":     "--seed",
	"Config.Resume":   "--resume",
	"Config.Dir":      "--out",
	// sweep.Config (qmlsab sweep)
	"Config.Seeds": "-n",
	"Config.Axes":  "--vary",
	"Config.Fixed": "--set",
	// store.MergeOptions (qmlsab merge)
	"MergeOptions.Expect":       "--expect",
	"MergeOptions.Out":          "--out",
	"MergeOptions.AllowPartial": "--allow-partial",
}

// fieldRef is a field reference as the libraries write one: a
// configuration type and a dotted field path, not part of a longer word.
var fieldRef = regexp.MustCompile(`\b(?:Config|MergeOptions)(?:\.[A-Z][A-Za-z0-9]*)+\b`)

// inFlags rewrites the field references in a message (an error a library
// returned, as a command prints it) to the flags that set those fields.
// A reference with no row in fieldFlags is left as it is: a field no
// flag sets is still named, not hidden.
func inFlags(msg string) string {
	return fieldRef.ReplaceAllStringFunc(msg, func(ref string) string {
		if flag, ok := fieldFlags[ref]; ok {
			return flag
		}
		return ref
	})
}

// refusal is how a command refuses its input or reports a failure: exit
// 1 with the command's name and the message, the field references of the
// library errors in it shown as flags (inFlags).
func refusal(command string) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return cli.Exit(inFlags(fmt.Sprintf(command+": "+format, args...)), 1)
	}
}
