package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/sweeps"
)

func init() {
	register(command{name: "compare", summary: "compare versions in a run, or two runs, with Welch's t-test", run: runCompare})
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
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	fs.SortFlags = false
	metric := fs.String("metric", sweeps.MetricGbps, "gbps (payload), ops (ops/s), p95, p99, p99.9 or any pNN such as p99.99 (ms, the worst op's) , server-cpu-per-gb (server CPU seconds per GB moved) or memory-overhead (% a key cost beyond its value)")
	baseline := fs.String("baseline", "", "one run: version to compare against, as in cell IDs (e.g. valkey-8.1.1)")
	alpha := fs.Float64("alpha", 0.05, "significance level for the * mark")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { fmt.Fprint(os.Stderr, compareUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate compare: %v (see linerate compare --help)\n", err)
		return 2
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(os.Stderr, "linerate compare: give one run directory (versions within it) or two (run against run)")
		return 2
	}
	if *alpha <= 0 || *alpha >= 1 {
		fmt.Fprintf(os.Stderr, "linerate compare: --alpha %g: use a level between 0 and 1 such as 0.05\n", *alpha)
		return 2
	}
	if _, ok := sweeps.MetricByName(*metric); !ok {
		fmt.Fprintf(os.Stderr, "linerate compare: --metric %q: use %s\n", *metric, sweeps.MetricNames())
		return 2
	}
	var runs []*sweeps.Run
	for _, d := range fs.Args() {
		r, err := sweeps.ReadRun(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate compare: %v\n", err)
			return 2
		}
		runs = append(runs, r)
	}
	c, err := sweeps.Compare(runs, sweeps.CompareOptions{Metric: *metric, Baseline: *baseline, Alpha: *alpha})
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate compare: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return 1
		}
		return 0
	}
	if err := sweeps.WriteComparison(os.Stdout, c); err != nil {
		return 1
	}
	return 0
}
