package main

import (
	"context"
	"fmt"
	"os"

	"github.com/linerate/linerate/plots"
)

func init() {
	register(command{name: "plot", summary: "draw a run's charts (PNG, SVG) and Markdown tables", run: runPlot})
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
		return c.exit(plots.WriteMarkdown(os.Stdout, plots.Tables(camp)))
	}
	w, err := plots.Render(camp, plots.Options{Out: *out, Formats: formats})
	if err != nil {
		return c.fail(err)
	}
	fmt.Printf("%d charts (%d files) and %s in %s\n", len(w.Charts), len(w.Files)-1, plots.TablesFile, w.Dir)
	return 0
}

const percentilesHelp = "latency percentiles to chart and tabulate beside Gbps: any of p95, p99, p99.9"

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
