// Command linerate measures how fast Valkey- and Redis-compatible servers move
// large objects. This file builds the command tree (spf13/cobra); each
// subcommand's file binds its flags and calls the packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/sweeps"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:]))
}

// exitCode is how a command ends: cobra hands it back from Execute and
// main exits with it. Every message has been printed by then.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ended is the error that ends a command with code: none for 0.
func ended(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}

// run runs the command line args and returns the process exit code.
func run(ctx context.Context, args []string) int {
	// The single-dash forms the old dispatcher took.
	if len(args) > 0 && (args[0] == "-help" || args[0] == "-version") {
		args = append([]string{"-" + args[0]}, args[1:]...)
	}
	root := newRoot(args)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	// What cobra itself refuses (a shell completion does not know, say).
	who := strings.TrimPrefix(cmd.CommandPath(), "linerate")
	fmt.Fprintf(os.Stderr, "linerate%s: %v (see %s --help)\n", who, err, cmd.CommandPath())
	return 2
}

// rootUsage is the top-level usage line, printed alone (with where help
// is) after an error.
const rootUsage = "Usage: linerate <command> [flags]"

// newRoot is the command tree; args is the command line, for commands that
// record how they were called.
func newRoot(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "linerate <command> [flags]",
		Short:         "measure how fast Valkey/Redis servers move large values (1-64 MB)",
		Long:          rootIntro + "\n\n" + startHere,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		// A near miss (bnech) is suggested.
		SuggestionsMinimumDistance: 2,
	}
	showVersion := root.Flags().BoolP("version", "v", false, "print the version, as linerate version does")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *showVersion {
			sweeps.ThisBuild().WriteText(os.Stdout)
			return nil
		}
		shortUsage(os.Stderr, cmd)
		return exitCode(2)
	}
	root.SetFlagErrorFunc(flagError)
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { writeHelp(cmd.OutOrStdout(), cmd) })
	root.SetHelpCommand(helpCommand())
	root.AddCommand(
		newAgent(), newBench(argsAfter(args, "bench")), newCompare(), newExport(), newInfra(),
		newLink(), newPlot(), newReport(), newServers(), newSink(), newSoak(), newSweep(),
		newTune(), newVersion(),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "print the shell completion script: bash, zsh, fish or powershell"
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				shortUsage(os.Stderr, cmd) // no shell named
				return exitCode(2)
			}
		}
	}
	return root
}

// argsAfter is what follows the first name in args: a command's own
// arguments as given.
func argsAfter(args []string, name string) []string {
	for i, a := range args {
		if a == name {
			return args[i+1:]
		}
	}
	return nil
}

// unknownCommand refuses arguments to linerate itself: they name no command.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	fmt.Fprintf(os.Stderr, "linerate: unknown command %q\n", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		fmt.Fprintf(os.Stderr, "Did you mean %s?\n", strings.Join(s, " or "))
	}
	shortUsage(os.Stderr, cmd)
	return exitCode(2)
}

// shortUsage is what follows an error: the command's own usage line and
// where its help is.
func shortUsage(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintln(w, usageLines(cmd)[0])
	fmt.Fprintf(w, "Run '%s --help' for more.\n", cmd.CommandPath())
}

// flagError says what is wrong with a flag in one line that says where
// help is, and ends the command with 2.
func flagError(cmd *cobra.Command, err error) error {
	hint := ""
	if cmd.Name() == "bench" && strings.Contains(err.Error(), "in -h") {
		hint = "; -h is the host, as in the study's client, and help is --help"
	}
	who := strings.TrimPrefix(cmd.CommandPath(), "linerate")
	fmt.Fprintf(os.Stderr, "linerate%s: %v%s (see %s --help)\n", who, err, hint, cmd.CommandPath())
	return exitCode(2)
}

// helpCommand is "linerate help [command]": that command's help on stdout.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "print a command's help, as linerate COMMAND --help does",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range cmd.Root().Commands() {
				if c.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				fmt.Fprintf(os.Stderr, "linerate help: unknown command %q\n", strings.Join(args, " "))
				shortUsage(os.Stderr, cmd.Root())
				return exitCode(2)
			}
			writeHelp(os.Stdout, target)
			return nil
		},
	}
}
