package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/sink"
	"github.com/spf13/pflag"
)

func init() {
	register(command{name: "sink", summary: "a built-in RESP target, to measure the client's own ceiling", run: runSink})
}

const sinkUsage = `Usage: linerate sink [flags]

Serves RESP as cheaply as a server can: GET returns the pre-built value for
the key (valid for --verify), SET payloads are dropped in the kernel. A bench
run against the sink measures the client's own ceiling on this host pair;
pass its JSON to 'linerate bench --ceiling' to judge later runs.

Example:
  linerate sink -p 7000 -s 8MiB &
  linerate bench -p 7000 -s 8MiB -c 8 -d 10s --json ceiling.json

Flags:
`

func runSink(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("sink", pflag.ContinueOnError)
	bind := fs.StringP("bind", "b", "127.0.0.1", "address to listen on")
	port := fs.IntP("port", "p", 7000, "port to listen on")
	size := lab.DefaultValueSize
	fs.VarP(&size, "value-size", "s", "size of the value GET returns: "+lab.SizeForms)
	keyspace := fs.IntP("keyspace", "n", lab.DefaultKeyspace, "what DBSIZE reports")
	seed := fs.Uint64("seed", 1, "value pattern seed; must match the bench's --seed for --verify")
	fs.Usage = func() { fmt.Fprint(os.Stderr, sinkUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate sink: %v (see linerate sink --help)\n", err)
		return lab.ExitUsage
	}
	// The value is built whole before listening: bound it as bench does.
	switch {
	case size < 1 || size > lab.MaxValueSize:
		fmt.Fprintf(os.Stderr, "linerate sink: -s/--value-size %s: use 1B to %s\n", size, lab.MaxValueSize)
		return lab.ExitUsage
	case *keyspace < 1 || *keyspace > lab.MaxKeyspace:
		fmt.Fprintf(os.Stderr, "linerate sink: -n/--keyspace %d: use 1-%d\n", *keyspace, lab.MaxKeyspace)
		return lab.ExitUsage
	case *port < 0 || *port > 65535:
		fmt.Fprintf(os.Stderr, "linerate sink: -p/--port %d: use 0-65535 (0: any free port)\n", *port)
		return lab.ExitUsage
	}
	addr := *bind + ":" + strconv.Itoa(*port)
	l, err := sink.Listen(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sink: listen on %s: %v\n", addr, err)
		return lab.ExitSetupFailed
	}
	s := &sink.Server{Layout: lab.NewValueLayout(int64(size), *seed), Keyspace: *keyspace}
	fmt.Fprintf(os.Stderr, "linerate sink: serving %s values on %s (Ctrl-C stops)\n", size, l.Addr())
	if err := s.Serve(ctx, l); err != nil {
		fmt.Fprintf(os.Stderr, "linerate sink: %v\n", err)
		return 1
	}
	return 0
}
