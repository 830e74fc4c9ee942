package main

// The commands that read a run directory: compare, export, plot, report.

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/plots"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/export"
)

func newCompare() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("compare"), "compare versions in a run, or two runs, with Welch's t-test", bindCompare), positional(runDir, runDir)), map[string]cobra.CompletionFunc{
		"metric": words("gbps", "ops", "p95", "p99", "p99.9", "server-cpu-per-gb", "probe-p99", "probe-added-p99", "memory-overhead"),
	})
}

func bindCompare(c *cli) func(context.Context) int {
	var opt sweeps.CompareOptions
	c.StringVar(&opt.Metric, "metric", sweeps.MetricGbps, "gbps (payload), ops (ops/s), p95, p99, p99.9 or any pNN such as p99.99 (ms, the worst op's), server-cpu-per-gb (server CPU seconds per GB moved), probe-p99 or probe-added-p99 (ms: the --probe's p99 beside the load, and what the load added to it) or memory-overhead (% a key cost beyond its value)")
	c.StringVar(&opt.Baseline, "baseline", "", "one run: version to compare against, as in cell IDs (e.g. valkey-8.1.1)")
	c.Float64Var(&opt.Alpha, "alpha", 0.05, "significance level for the * mark")
	asJSON := c.Bool("json", false, "print JSON")
	return func(ctx context.Context) int {
		if c.NArg() < 1 || c.NArg() > 2 {
			return c.bad("give one run directory (versions within it) or two (run against run)")
		}
		if err := opt.Check(); err != nil {
			return c.bad("%v", err)
		}
		cmp, err := sweeps.CompareDirs(c.Args(), opt)
		switch {
		case err != nil:
			return c.bad("%v", err)
		case *asJSON:
			return c.json(cmp)
		}
		return c.end(sweeps.WriteComparison(os.Stdout, cmp))
	}
}

func newExport() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("export"), "a run's results as CSV or NDJSON rows, for spreadsheets and pandas", bindExport), positional(runDir)), map[string]cobra.CompletionFunc{
		"format": words("csv", "ndjson"),
	})
}

func bindExport(c *cli) func(context.Context) int {
	format := c.String("format", string(export.CSV), "csv (a header line, then rows) or ndjson (one JSON object per line)")
	series := c.Bool("series", false, "one row per cell, operation and second of the measured window")
	steps := c.Bool("steps", false, "one row per cell and step of a --ramp")
	sizes := c.Bool("sizes", false, "one row per cell, operation and size class of a value-size mix")
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, "give one run directory, e.g. linerate export runs/local > local.csv"); done {
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
}

func newPlot() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("plot"), "draw a run's charts (PNG, SVG) and Markdown tables", bindPlot), positional(runDir)), map[string]cobra.CompletionFunc{
		"format": words("png,svg", "png", "svg"),
		"out":    runDir,
	})
}

func bindPlot(c *cli) func(context.Context) int {
	format := c.String("format", "png,svg", "chart formats: png, svg or png,svg")
	out := c.String("out", "", "output `DIR` (default RUNDIR/charts)")
	tables := c.Bool("tables", false, "print the Markdown tables to stdout and draw nothing")
	percentiles := c.String("percentiles", "p99,p99.9", percentilesHelp)
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, "give one run directory, e.g. linerate plot runs/local"); done {
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

func newReport() *cobra.Command {
	return completeArgs(command(helpText("report"), "write a run's self-contained HTML report", bindReport), positional(runDir))
}

func bindReport(c *cli) func(context.Context) int {
	out := c.String("out", "", "output `FILE` (default RUNDIR/report.html)")
	percentiles := c.String("percentiles", "p99,p99.9", percentilesHelp)
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, "give one run directory, e.g. linerate report runs/local"); done {
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
}
