package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/sweeps/agent"
	"github.com/linerate/linerate/sweeps/start"
)

func newAgent() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("agent"), "serve a sweep coordinator on a remote host (sweep run starts it over SSH)", bindAgent), cobra.NoFileCompletions), map[string]cobra.CompletionFunc{
		"store":     runDir,
		"state-dir": runDir,
	})
}

func bindAgent(c *cli) func(context.Context) int {
	// In the order --help has always listed them.
	docker := c.String("docker", "docker", "command that runs image versions (podman takes the same arguments)")
	metricsAddr := c.String("metrics-listen", "", "serve this host's sampler figures (CPUs, interfaces, each server's threads) as OpenMetrics at http://ADDR/metrics (off unless given; only on ADDR)")
	stateDir := c.String("state-dir", ".cache/linerate/agent", "where the tuning snapshot is kept on this host")
	store := c.String("store", "", "server-version store on this host (default $LINERATE_HOME or the cache directory)")
	return func(ctx context.Context) int {
		// A coordinator that is gone closes our output: main's signal handling
		// makes that an error (and a stop) the agent handles — stop servers,
		// revert tuning — not a SIGPIPE that ends the process first.
		a := &agent.Agent{Starter: &start.Starter{StoreDir: *store, Install: true, DockerCommand: *docker}, StateDir: *stateDir}
		msrv, code := startMetrics("agent", *metricsAddr, a.HostMetrics())
		if code != 0 {
			return code
		}
		defer msrv.Close()
		if err := a.Serve(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
			return c.end(err)
		}
		return 0
	}
}
