package main

import (
	"context"
	"errors"
	"os"

	"github.com/linerate/linerate/infra/servers"
)

func init() {
	register(command{name: "servers", summary: "install server versions side by side (Debian builds, private store)", run: runServers})
}

const serversUsage = `Usage: linerate servers <available|install|list|remove|path> [NAME@VERSION...] [flags]

Keeps Valkey and Redis versions side by side in a private store, each with
its own libc, loader and jemalloc, unpacked from Debian's packages through a
private apt configuration. Nothing is installed on the system. The store is
$LINERATE_HOME (default: a linerate folder in your cache directory).

A selector NAME@VERSION picks the newest matching build: valkey@9.1,
valkey@8.1, valkey@8.0, redis@7.0, redis@8.0, or an exact version (9.1.2).

Examples:
  linerate servers available                  # what the mirror serves
  linerate servers install valkey@9.1 redis@7.0
  linerate servers install valkey@8.1 --runtime sid   # 8.1 code, sid's libc/jemalloc
  linerate servers list
  $(linerate servers path valkey@9.1) --port 7000 --save ''
  linerate servers remove redis@7.0

Flags:
`

func runServers(ctx context.Context, args []string) int {
	c := newCLI("servers", serversUsage)
	var r servers.Request
	c.StringVar(&r.Store, "store", "", "store directory (default $LINERATE_HOME or ~/.cache/linerate)")
	c.StringVar(&r.Runtime, "runtime", "", "install/path/remove: suite the libraries come from (bookworm, bookworm-backports, trixie, sid); default the build's own")
	c.StringVar(&r.Suite, "suite", "", "install: take the build from this suite only")
	c.BoolVar(&r.JSON, "json", false, "list/available/install: print JSON")
	c.BoolVar(&r.Quiet, "quiet", false, "install: no progress lines")
	if code, done := c.parse(args, 1, -1, "name an action: available, install, list, remove or path"); done {
		return code
	}
	r.Action, r.Selectors = c.Arg(0), c.Args()[1:]
	err := servers.Do(ctx, r, os.Stdout, os.Stderr)
	if ae := (*servers.ActionError)(nil); errors.As(err, &ae) {
		c.who, err = c.who+" "+ae.What, ae.Err
	}
	c.input = servers.IsInput
	return c.end(err)
}
