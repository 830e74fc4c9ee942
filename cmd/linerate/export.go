package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/export"
)

func init() {
	register(command{name: "export", summary: "a run's results as CSV or NDJSON rows, for spreadsheets and pandas", run: runExport})
}

const exportUsage = `Usage: linerate export RUNDIR [--format csv|ndjson] [--series] > FILE

Writes a sweeps run directory (linerate sweep run writes one) as flat rows
on standard output: one row per cell and operation with the campaign, the
server version, every workload field, the status, the limit label, Gbps,
ops/s, latency p50/p90/p95/p99/p99.9/max in ms, client CPU per GB and the
server's CPU by thread class (main, I/O, other). With --series, one row per
cell, operation and second of the measured window instead.

Numbers are numbers: durations in seconds, latencies in ms. A value not
measured is an empty CSV field (null in NDJSON). A failed cell is a row
with status failed, its reason, and empty figures. Columns:
docs/result-schema.md, "Flat exports".

Examples:
  linerate export runs/local > local.csv
  linerate export runs/local --format ndjson --series > local-seconds.ndjson
  python3 -c 'import pandas as pd; print(pd.read_csv("local.csv").groupby(["op","value_size","version"]).gbps.median())'
  duckdb -c "SELECT version, op, value_size_text, median(gbps) FROM 'local.csv' WHERE status='done' GROUP BY ALL"

Flags:
`

func runExport(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("export", pflag.ContinueOnError)
	fs.SortFlags = false
	format := fs.String("format", string(export.CSV), "csv (a header line, then rows) or ndjson (one JSON object per line)")
	series := fs.Bool("series", false, "one row per cell, operation and second of the measured window")
	fs.Usage = func() { fmt.Fprint(os.Stderr, exportUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate export: %v (see linerate export --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate export: give one run directory, e.g. linerate export runs/local > local.csv (see linerate export --help)")
		return 2
	}
	f, err := export.ParseFormat(*format)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate export: --format %v\n", err)
		return 2
	}
	run, err := sweeps.ReadRun(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate export: %v\n", err)
		return 2
	}
	for _, p := range run.Problems {
		fmt.Fprintf(os.Stderr, "linerate export: warning: unreadable %s (left out)\n", p)
	}
	if err := export.Write(os.Stdout, run, export.Options{Format: f, Series: *series}); err != nil {
		fmt.Fprintf(os.Stderr, "linerate export: %v\n", err)
		if ie := (*export.InputError)(nil); errors.As(err, &ie) {
			return 2
		}
		return 1
	}
	return 0
}
