package main

import "github.com/urfave/cli/v2"

// command is a command of the app: its name, what it does, the arguments
// it takes besides its flags ("": none), its action and its flags.
func command(name, usage, argsUsage string, action cli.ActionFunc, flags ...cli.Flag) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, ArgsUsage: argsUsage, Flags: flags, Action: action}
}

// group is a command made of subcommands.
func group(name, usage string, subcommands ...*cli.Command) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, Subcommands: subcommands}
}

// operands are a command's refusal (refusal, named so) and its
// arguments, which its flags may follow (trailingFlags); a misplaced flag
// is the error, already the command's refusal.
func operands(c *cli.Context, name string) (fail func(format string, args ...any) error, args []string, err error) {
	fail = refusal(name)
	if args, err = trailingFlags(c); err != nil {
		return fail, nil, fail("%v", err)
	}
	return fail, args, nil
}
