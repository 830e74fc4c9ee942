package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/sink"
	"github.com/spf13/cobra"
)

func newSink() *cobra.Command {
	return completeArgs(command(helpText("sink"), "a built-in RESP target, to measure the client's own ceiling", bindSink), cobra.NoFileCompletions)
}

func bindSink(c *cli) func(context.Context) int {
	fs := c.FlagSet
	bind := fs.StringP("bind", "b", "127.0.0.1", "address to listen on")
	port := fs.IntP("port", "p", 7000, "port to listen on")
	size := lab.OneSize(lab.DefaultValueSize)
	fs.VarP(&size, "value-size", "s", "size of the value GET returns, the bench's -s: "+lab.SizeMixForms)
	keyspace := fs.IntP("keyspace", "n", lab.DefaultKeyspace, "what DBSIZE reports (the probe's keys come after)")
	seed := fs.Uint64("seed", 1, "value pattern seed; must match the bench's --seed for --verify (and for a mix, each key's size)")
	var probe lab.Probe
	fs.Var(&probe, "probe", "the bench's --probe: its keys are served at its size (its rate is the bench's business)")
	link := fs.Bool("link", false, "GET replies are the link's load, not values: one small block repeated, cheap to send (how linerate link measures the link); bench with --verify none")
	delay := fs.Duration("delay", 0, fmt.Sprintf("hold every reply back this long (0-%s): a slow server", sink.MaxDelay))
	return func(ctx context.Context) int {
		// The value is built whole before listening: bound it as bench does.
		switch {
		case *delay < 0 || *delay > sink.MaxDelay:
			fmt.Fprintf(os.Stderr, "linerate sink: --delay %s: use 0s to %s\n", *delay, sink.MaxDelay)
			return exitcode.Usage
		case *keyspace < 1 || *keyspace > fields.MaxKeyspace:
			fmt.Fprintf(os.Stderr, "linerate sink: -n/--keyspace %d: use 1-%d\n", *keyspace, fields.MaxKeyspace)
			return exitcode.Usage
		case *port < 0 || *port > 65535:
			fmt.Fprintf(os.Stderr, "linerate sink: -p/--port %d: use 0-65535 (0: any free port)\n", *port)
			return exitcode.Usage
		}
		addr := *bind + ":" + strconv.Itoa(*port)
		l, err := sink.Listen(addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate sink: listen on %s: %v\n", addr, err)
			return exitcode.SetupFailed
		}
		s := sink.New(size, *seed, *keyspace, probe.Size)
		s.Delay, s.Link = *delay, *link
		fmt.Fprintf(os.Stderr, "linerate sink: serving %s values on %s (Ctrl-C stops)\n", size, l.Addr())
		if err := s.Serve(ctx, l); err != nil {
			fmt.Fprintf(os.Stderr, "linerate sink: %v\n", err)
			return 1
		}
		return 0
	}
}
