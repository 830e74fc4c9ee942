package main

import (
	"context"
	"os"

	"github.com/linerate/linerate/sweeps"
)

func init() {
	register(command{name: "version", summary: "print linerate's version, the commit it was built from and its Go version", run: runVersion})
}

const versionUsage = `Usage: linerate version [--json]   (or linerate --version)

Prints this binary's version, the commit it was built from, whether the
tree had uncommitted changes then, and the Go version that built it: the
identity every bench record and run directory stores. The commit comes
from the build (go build -buildvcs in a git clone); make build stamps it,
while go test, go run and builds outside a clone have none, shown as
"unknown".

Flags:
`

func runVersion(ctx context.Context, args []string) int {
	c := newCLI("version", versionUsage)
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
