package main

import (
	"context"
	"fmt"

	"github.com/linerate/linerate/plots"
)

func init() {
	register(command{name: "report", summary: "write a run's self-contained HTML report", run: runReport})
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
		return c.fail(err)
	}
	fmt.Printf("report: %s (%d KiB)\n", path, (size+1023)/1024)
	return 0
}
