package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/pflag"

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
	fs := pflag.NewFlagSet("version", pflag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON, as run directories store it (env.json's linerate block)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, versionUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate version: %v (see linerate version --help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "linerate version: unexpected argument %q (see linerate version --help)\n", fs.Arg(0))
		return 2
	}
	b := sweeps.ThisBuild()
	if *asJSON {
		return printJSON(b)
	}
	writeVersion(os.Stdout, b)
	return 0
}

// writeVersion prints one fact a line, name first, for people and grep.
func writeVersion(w io.Writer, b sweeps.Build) {
	commit, modified := b.Commit, fmt.Sprint(b.Modified)
	if commit == "" {
		commit, modified = "unknown (built without VCS information)", "unknown"
	}
	fmt.Fprintf(w, "linerate %s\ncommit   %s\nmodified %s\ngo       %s %s/%s\n",
		b.Version, commit, modified, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}
