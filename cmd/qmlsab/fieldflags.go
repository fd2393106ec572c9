package main

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/qmlsab/qmlsab/ftdcimport"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/sweep"
)

// fieldFlags maps the fields that library errors concern (each a
// *field.Error naming its package's field: run's Spec, Exec and folders,
// sweep.Config, store.MergeOptions, ftdcimport's flags and folder,
// report.Options) to the flag that sets each, so that the user reads
// "-n 0: …". It is the one place a field meets its flag: a library names
// its own fields, and a new flag that sets a checked field adds its row
// here (TestFieldFlagsNameRealFieldsAndFlags checks each row's flag).
var fieldFlags = map[string]string{
	// qmlsab run
	run.FieldArms:     "--arms",
	run.FieldDefined:  "--arms-file",
	run.FieldN:        "-n",
	run.FieldParallel: "--parallel",
	run.FieldClock:    "--clock",
	run.FieldTopology: "--topology",
	run.FieldShard:    "--shard",
	run.FieldProfile:  "--profile",
	run.FieldWorkload: "--workload",
	run.FieldSeed:     "--seed",
	run.FieldResume:   "--resume",
	run.FieldDir:      "--out",
	// qmlsab sweep
	sweep.FieldArms:     "--arms",
	sweep.FieldSeeds:    "-n",
	sweep.FieldAxes:     "--vary",
	sweep.FieldFixed:    "--set",
	sweep.FieldParallel: "--parallel",
	// qmlsab calibrate --fit
	sweep.FieldStarts: "--starts",
	// qmlsab merge
	store.FieldExpect:       "--expect",
	store.FieldOut:          "--out",
	store.FieldAllowPartial: "--allow-partial",
	// qmlsab import ftdc
	ftdcimport.FieldArm:      "--arm",
	ftdcimport.FieldStart:    "--start",
	ftdcimport.FieldPhases:   "--phases",
	ftdcimport.FieldOutcomes: "--outcomes",
	ftdcimport.FieldDir:      "--out",
	// qmlsab report
	report.FieldBaseline: "--baseline",
}

// flagOf is the flag that sets a field ("" for a field no flag sets,
// which a message then names as its library does).
func flagOf(f string) string { return fieldFlags[f] }

// userText formats a message as fmt.Sprintf does, each error among the
// arguments with the fields it names called by their flags.
func userText(format string, args ...any) string {
	args = slices.Clone(args)
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = field.Text(err, flagOf)
		}
	}
	return fmt.Sprintf(format, args...)
}

// refusal is how a command refuses its input or reports a failure: exit
// 1 with the command's name and the message, the fields of the library
// errors in it named by their flags (userText).
func refusal(command string) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return cli.Exit(command+": "+userText(format, args...), 1)
	}
}
