package main

import (
	"context"
	"os"

	"github.com/linerate/linerate/sweeps"
)

func init() {
	register(command{name: "version", summary: "print linerate's version, the commit it was built from and its Go version", run: runVersion})
}

func runVersion(ctx context.Context, args []string) int {
	c := newCLI("version", helpText("version"))
	asJSON := c.Bool("json", false, "print JSON, as run directories store it (env.json's linerate block)")
	if code, done := c.parse(args, 0, -1, ""); done {
		return code
	}
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
