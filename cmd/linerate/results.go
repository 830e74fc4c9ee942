package main

// The commands that read a run directory: compare, export, plot, report.

import (
	"context"
	"fmt"
	"os"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/plots"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/export"
)

func init() {
	register(command{name: "compare", summary: "compare versions in a run, or two runs, with Welch's t-test", run: runCompare})
	register(command{name: "export", summary: "a run's results as CSV or NDJSON rows, for spreadsheets and pandas", run: runExport})
	register(command{name: "plot", summary: "draw a run's charts (PNG, SVG) and Markdown tables", run: runPlot})
	register(command{name: "report", summary: "write a run's self-contained HTML report", run: runReport})
}

const compareUsage = `Usage: linerate compare RUNDIR [RUNDIR2] [flags]

With one run directory: every version against the baseline (the first
version of the campaign, or --baseline), cell by cell. With two: the same
cells (same version and workload) of the first run against the second.

Each side shows the median, min-max, coefficient of variation and count of
its repetitions; change is the difference of medians; p is Welch's t-test
(two-sided) and sig marks p<0.001 ***, p<0.01 **, p<alpha *, ns otherwise,
n/a with fewer than two repetitions a side. Client-limited repetitions are
left out (they measured the client) and counted as +Nc.

Examples:
  linerate compare runs/local
  linerate compare runs/local --baseline valkey-8.1.1 --metric p99
  linerate compare runs/study-monday runs/study-tuesday --json

Flags:
`

func runCompare(ctx context.Context, args []string) int {
	c := newCLI("compare", compareUsage)
	metric := c.String("metric", sweeps.MetricGbps, "gbps (payload), ops (ops/s), p95, p99, p99.9 or any pNN such as p99.99 (ms, the worst op's), server-cpu-per-gb (server CPU seconds per GB moved), probe-p99 or probe-added-p99 (ms: the --probe's p99 beside the load, and what the load added to it) or memory-overhead (% a key cost beyond its value)")
	baseline := c.String("baseline", "", "one run: version to compare against, as in cell IDs (e.g. valkey-8.1.1)")
	alpha := c.Float64("alpha", 0.05, "significance level for the * mark")
	asJSON := c.Bool("json", false, "print JSON")
	if code, done := c.parse(args, 0, -1, ""); done {
		return code
	}
	if c.NArg() < 1 || c.NArg() > 2 {
		return c.bad("give one run directory (versions within it) or two (run against run)")
	}
	if *alpha <= 0 || *alpha >= 1 {
		return c.bad("--alpha %g: use a level between 0 and 1 such as 0.05", *alpha)
	}
	if _, ok := sweeps.MetricByName(*metric); !ok {
		return c.bad("--metric %q: use %s", *metric, sweeps.MetricNames())
	}
	var runs []*sweeps.Run
	for _, d := range c.Args() {
		r, err := sweeps.ReadRun(d)
		if err != nil {
			return c.bad("%v", err)
		}
		runs = append(runs, r)
	}
	cmp, err := sweeps.Compare(runs, sweeps.CompareOptions{Metric: *metric, Baseline: *baseline, Alpha: *alpha})
	switch {
	case err != nil:
		return c.bad("%v", err)
	case *asJSON:
		return c.json(cmp)
	}
	return c.end(sweeps.WriteComparison(os.Stdout, cmp))
}

const exportUsage = `Usage: linerate export RUNDIR [--format csv|ndjson] [--series|--steps|--sizes] > FILE

Writes a sweeps run directory (linerate sweep run writes one) as flat rows
on standard output: one row per cell and operation with the campaign, the
server version, every workload field, the status, the limit label, Gbps,
ops/s, latency p50/p90/p95/p99/p99.9/max in ms, client CPU per GB and the
server's CPU by thread class (main, I/O, other), and for paced cells the
offered and achieved rates, service time, the knee, the probe's added
p99, memory per key, forks, NIC allowance counters and the link. --series
breaks each row down by second, --steps gives one row per ramp step,
--sizes one per size class of a value-size mix.

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
	steps := c.Bool("steps", false, "one row per cell and step of a --ramp")
	sizes := c.Bool("sizes", false, "one row per cell, operation and size class of a value-size mix")
	if code, done := c.parse(args, 1, 1, "give one run directory, e.g. linerate export runs/local > local.csv"); done {
		return code
	}
	f, err := export.ParseFormat(*format)
	if err != nil {
		return c.bad("--format %v", err)
	}
	opt := export.Options{Format: f, Series: *series, Steps: *steps, Sizes: *sizes}
	if !opt.OneView() {
		return c.bad("--series, --steps and --sizes are views of their own: give one")
	}
	run, err := sweeps.ReadRun(c.Arg(0))
	if err != nil {
		return c.bad("%v", err)
	}
	c.warnUnreadable(run.Problems, "left out")
	c.input = is[*export.InputError]
	return c.end(export.Write(os.Stdout, run, opt))
}

const plotUsage = `Usage: linerate plot RUNDIR [--format png,svg] [--out DIR] [--tables]

Draws every chart of a sweeps run directory (linerate sweep run writes one):
per operation, Gbps, p99 and p99.9 latency (--percentiles) and server CPU
seconds per GB moved against value size, with one line per server
version (median, min-max band over repetitions, ringed points for
client-limited cells, crosses for failed ones, squares for cells never
measured); each soak's Gbps per second against the campaign cell; and one
CPU-per-thread chart per cell (server main thread, I/O threads, client
workers). Each version keeps its colour in every chart. SVGs embed their
fonts. tables.md beside the charts holds the Markdown tables (value size
rows, version columns, significance marks from linerate compare).

Examples:
  linerate plot runs/local                      # into runs/local/charts
  linerate plot runs/study --format svg --out /tmp/study-charts
  linerate plot runs/study --tables             # print the Markdown tables only
  linerate plot runs/study --percentiles p95,p99,p99.9

Flags:
`

func runPlot(ctx context.Context, args []string) int {
	c := newCLI("plot", plotUsage)
	format := c.String("format", "png,svg", "chart formats: png, svg or png,svg")
	out := c.String("out", "", "output directory (default RUNDIR/charts)")
	tables := c.Bool("tables", false, "print the Markdown tables to stdout and draw nothing")
	percentiles := c.String("percentiles", "p99,p99.9", percentilesHelp)
	if code, done := c.parse(args, 1, 1, "give one run directory, e.g. linerate plot runs/local"); done {
		return code
	}
	formats, err := plots.ParseFormats(*format)
	if err != nil {
		return c.bad("--format: %v", err)
	}
	camp, code := c.loadRun(*percentiles, "left out")
	switch {
	case camp == nil:
		return code
	case *tables:
		return c.end(plots.WriteMarkdown(os.Stdout, plots.Tables(camp)))
	}
	w, err := plots.Render(camp, plots.Options{Out: *out, Formats: formats})
	if err != nil {
		return c.end(err)
	}
	fmt.Printf("%d charts (%d files) and %s in %s\n", len(w.Charts), len(w.Files)-1, plots.TablesFile, w.Dir)
	return 0
}

const percentilesHelp = "latency percentiles to chart and tabulate beside Gbps, named as bench names them: " + lab.PercentilesForms

// loadRun reads the run directory for charts, with its latency
// percentiles; nil and the exit code when it cannot, the error printed.
func (c *cli) loadRun(percentiles, problems string) (*plots.Campaign, int) {
	pct, err := plots.ParsePercentiles(percentiles)
	if err != nil {
		return nil, c.bad("--percentiles: %v", err)
	}
	camp, err := plots.Load(c.Arg(0))
	if err != nil {
		return nil, c.bad("%v", err)
	}
	camp.Percentiles = pct
	c.warnUnreadable(camp.Problems, problems)
	return camp, 0
}

const reportUsage = `Usage: linerate report RUNDIR [--out FILE]

Writes one HTML file that needs nothing else to be read, offline or sent as
an attachment: the charts inline, the Markdown tables as HTML tables with
their significance marks, the environment (hosts, kernels, NICs, server
versions and their INFO, tuning snapshot, linerate commit), failed and
missing cells with their reasons, every cell's limit label, and the exact
commands that rebuild the binary and rerun the campaign.

Examples:
  linerate report runs/local                    # runs/local/report.html
  linerate report runs/study --out /tmp/study.html

Flags:
`

func runReport(ctx context.Context, args []string) int {
	c := newCLI("report", reportUsage)
	out := c.String("out", "", "output file (default RUNDIR/report.html)")
	percentiles := c.String("percentiles", "p99,p99.9", percentilesHelp)
	if code, done := c.parse(args, 1, 1, "give one run directory, e.g. linerate report runs/local"); done {
		return code
	}
	camp, code := c.loadRun(*percentiles, "listed in the report")
	if camp == nil {
		return code
	}
	path, size, err := plots.SaveReport(camp, *out, plots.ReportOptions{})
	if err != nil {
		return c.end(err)
	}
	fmt.Printf("report: %s (%d KiB)\n", path, (size+1023)/1024)
	return 0
}
