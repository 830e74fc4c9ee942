package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/plots"
	"github.com/linerate/linerate/sweeps"
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
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SortFlags = false
	out := fs.String("out", "", "output file (default RUNDIR/report.html)")
	percentiles := fs.String("percentiles", "p99,p99.9", "latency percentiles to chart and tabulate beside Gbps, named as bench names them: "+lab.PercentilesForms)
	fs.Usage = func() { fmt.Fprint(os.Stderr, reportUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate report: %v (see linerate report --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate report: give one run directory, e.g. linerate report runs/local (see linerate report --help)")
		return 2
	}
	pct, err := plots.ParsePercentiles(*percentiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate report: --percentiles: %v\n", err)
		return 2
	}
	c, err := plots.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate report: %v\n", err)
		return 2
	}
	c.Percentiles = pct
	for _, p := range c.Problems {
		fmt.Fprintf(os.Stderr, "linerate report: warning: unreadable %s (listed in the report)\n", p)
	}
	path := *out
	if path == "" {
		path = filepath.Join(fs.Arg(0), "report.html")
	}
	var buf bytes.Buffer
	if err := plots.WriteReport(&buf, c, plots.ReportOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "linerate report: %v\n", err)
		return 1
	}
	if err := sweeps.WriteFileAtomic(path, buf.Bytes()); err != nil {
		fmt.Fprintf(os.Stderr, "linerate report: %v\n", err)
		return 1
	}
	fmt.Printf("report: %s (%d KiB)\n", path, (buf.Len()+1023)/1024)
	return 0
}
