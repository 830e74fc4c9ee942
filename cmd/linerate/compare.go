package main

import (
	"context"
	"os"

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
	c := newCLI("compare", compareUsage)
	metric := c.String("metric", sweeps.MetricGbps, "gbps (payload), ops (ops/s), p95, p99, p99.9 (ms, the worst op's) or server-cpu-per-gb (server CPU seconds per GB moved)")
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
	return c.exit(sweeps.WriteComparison(os.Stdout, cmp))
}
