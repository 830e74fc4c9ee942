package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/sweeps/agent"
	"github.com/linerate/linerate/sweeps/local"
)

func init() {
	register(command{name: "agent", summary: "serve a sweep coordinator on a remote host (sweep run starts it over SSH)", run: runAgent})
}

const agentUsage = `Usage: linerate agent [--state-dir DIR] [--store DIR] [--docker CMD]

Runs on each host of an ssh or aws pair (and in each namespace of a netns
pair), started by 'linerate sweep run' or 'soak' on the coordinator; there
is no need to start it by hand. It reads one JSON request per line on
standard input and answers on standard output: start and stop server
versions on this host (store versions missing here are installed first, as
'linerate servers install' would), FLUSHALL them, sample /proc for the cell
windows, apply, verify and revert the tuning profile.

When its input ends (the run finished, crashed or lost its connection) it
cancels what it is doing, stops the servers it started and reverts the
tuning. The tuning snapshot is also kept in --state-dir: the next agent to
apply a profile here reverts a snapshot left by one that was killed, and by
hand:
  sudo linerate tune revert --snapshot DIR/` + local.SnapshotFile + `

Flags:
`

func runAgent(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	stateDir := fs.String("state-dir", ".cache/linerate/agent", "where the tuning snapshot is kept on this host")
	store := fs.String("store", "", "server-version store on this host (default $LINERATE_HOME or the cache directory)")
	docker := fs.String("docker", "docker", "command that runs image versions (podman takes the same arguments)")
	metricsAddr := fs.String("metrics-listen", "", "serve this host's sampler figures (CPUs, interfaces, each server's threads) as OpenMetrics at http://ADDR/metrics (off unless given; only on ADDR)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, agentUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate agent: %v (see linerate agent --help)\n", err)
		return 2
	}
	// A coordinator that is gone closes our output: main's signal handling
	// makes that an error (and a stop) the agent handles — stop servers,
	// revert tuning — not a SIGPIPE that ends the process first.
	a := &agent.Agent{Starter: &local.Starter{StoreDir: *store, Install: true, DockerCommand: *docker}, StateDir: *stateDir}
	msrv, code := startMetrics("agent", *metricsAddr, a.HostMetrics())
	if code != 0 {
		return code
	}
	if msrv != nil {
		defer msrv.Close()
	}
	if err := a.Serve(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "linerate agent: %v\n", err)
		return 1
	}
	return 0
}
