package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/infra/servers"
)

func newServers() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("servers"), "install server versions side by side (Debian builds, private store)", bindServers), serversArgs), map[string]cobra.CompletionFunc{
		"store":   runDir,
		"runtime": words(suites...),
		"suite":   words(suites...),
	})
}

func bindServers(c *cli) func(context.Context) int {
	var r servers.Request
	c.StringVar(&r.Store, "store", "", "store directory (default $LINERATE_HOME or ~/.cache/linerate)")
	c.StringVar(&r.Runtime, "runtime", "", "install/path/remove: suite the libraries come from (bookworm, bookworm-backports, trixie, sid); default the build's own")
	c.StringVar(&r.Suite, "suite", "", "install: take the build from this suite only")
	c.BoolVar(&r.JSON, "json", false, "list/available/install: print JSON")
	c.BoolVar(&r.Quiet, "quiet", false, "install: no progress lines")
	return func(ctx context.Context) int {
		if code, done := c.want(1, -1, "name an action: available, install, list, remove or path"); done {
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
}
