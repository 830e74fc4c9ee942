// Command linerate measures how fast Valkey- and Redis-compatible servers move
// large objects. This file only dispatches to subcommands; each subcommand's
// file parses its flags and calls the packages that do the work.
package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/linerate/linerate/infra/stopsignal"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func usage(out *os.File) {
	fmt.Fprintf(out, "linerate measures how fast Valkey/Redis servers move large values (1-64 MB).\n\n")
	fmt.Fprintf(out, "Usage: linerate <command> [flags]   (linerate <command> --help for its flags)\n\nCommands:\n")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(out, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(out, `
Start here:
  make demo                                  # five versions, a local campaign, charts, report
  linerate bench -p 6379 -s 8MiB -d 5s       # one measurement against a running server
  linerate servers install valkey@9.1        # a server version, unpacked privately
  linerate sweep plan sweeps/campaigns/local.yaml
`)
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	switch name {
	case "--help", "-help", "-h", "help":
		usage(os.Stdout)
		return
	case "--version", "-version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "linerate: unknown command %q\n\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	// The first Ctrl-C, SIGTERM or hangup cancels the context so work stops
	// cleanly, records are written and what was started is torn down; the
	// teardown is abandoned only on a third within 10 s of a second.
	ctx := stopsignal.Context(context.Background(), os.Stderr, func() { os.Exit(130) })
	os.Exit(c.run(ctx, os.Args[2:]))
}
