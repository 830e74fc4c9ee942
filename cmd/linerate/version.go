package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/sweeps"
)

func newVersion() *cobra.Command {
	return completeArgs(command(helpText("version"), "print linerate's version, the commit it was built from and its Go version", bindVersion), cobra.NoFileCompletions)
}

func bindVersion(c *cli) func(context.Context) int {
	asJSON := c.Bool("json", false, "print JSON, as run directories store it (env.json's linerate block)")
	return func(ctx context.Context) int {
		if c.NArg() > 0 {
			return c.usage("unexpected argument %q", c.Arg(0))
		}
		b := sweeps.ThisBuild()
		if *asJSON {
			return c.json(b)
		}
		b.WriteText(os.Stdout)
		return 0
	}
}
