package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
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
	fs := pflag.NewFlagSet("plot", pflag.ContinueOnError)
	fs.SortFlags = false
	format := fs.String("format", "png,svg", "chart formats: png, svg or png,svg")
	out := fs.String("out", "", "output directory (default RUNDIR/charts)")
	tables := fs.Bool("tables", false, "print the Markdown tables to stdout and draw nothing")
	percentiles := fs.String("percentiles", "p99,p99.9", "latency percentiles to chart and tabulate beside Gbps, named as bench names them: "+lab.PercentilesForms)
	fs.Usage = func() { fmt.Fprint(os.Stderr, plotUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate plot: %v (see linerate plot --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate plot: give one run directory, e.g. linerate plot runs/local (see linerate plot --help)")
		return 2
	}
	formats, err := plots.ParseFormats(*format)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate plot: --format: %v\n", err)
		return 2
	}
	pct, err := plots.ParsePercentiles(*percentiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate plot: --percentiles: %v\n", err)
		return 2
	}
	c, err := plots.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate plot: %v\n", err)
		return 2
	}
	c.Percentiles = pct
	for _, p := range c.Problems {
		fmt.Fprintf(os.Stderr, "linerate plot: warning: unreadable %s (left out)\n", p)
	}
	if *tables {
		if err := plots.WriteMarkdown(os.Stdout, plots.Tables(c)); err != nil {
			fmt.Fprintf(os.Stderr, "linerate plot: %v\n", err)
			return 1
		}
		return 0
	}
	w, err := plots.Render(c, plots.Options{Out: *out, Formats: formats})
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate plot: %v\n", err)
		return 1
	}
	fmt.Printf("%d charts (%d files) and %s in %s\n", len(w.Charts), len(w.Files)-1, plots.TablesFile, w.Dir)
	return 0
}
