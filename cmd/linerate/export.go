package main

import (
	"context"
	"os"

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
	c := newCLI("export", exportUsage)
	format := c.String("format", string(export.CSV), "csv (a header line, then rows) or ndjson (one JSON object per line)")
	series := c.Bool("series", false, "one row per cell, operation and second of the measured window")
	if code, done := c.parse(args, 1, 1, "give one run directory, e.g. linerate export runs/local > local.csv"); done {
		return code
	}
	f, err := export.ParseFormat(*format)
	if err != nil {
		return c.bad("--format %v", err)
	}
	run, err := sweeps.ReadRun(c.Arg(0))
	if err != nil {
		return c.bad("%v", err)
	}
	c.warnUnreadable(run.Problems, "left out")
	c.input = is[*export.InputError]
	return c.exit(export.Write(os.Stdout, run, export.Options{Format: f, Series: *series}))
}
