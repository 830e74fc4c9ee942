package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps/metrics"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newBench(given []string) *cobra.Command {
	cmd := command(helpText("bench"), "measure one server: GET/SET of large values over many connections", func(c *cli) func(context.Context) int {
		return bindBench(c.FlagSet, given)
	})
	// -h is the host, as in the study's client: help is --help alone.
	cmd.Flags().Bool("help", false, "this help")
	return completeArgs(completeFlags(cmd, map[string]cobra.CompletionFunc{
		"verify":  words("none", "header", "full"),
		"engine":  words("raw", "valkey-go"),
		"arrival": words("constant", "poisson"),
		"command": words("get", "set", "mget", "mset"),
	}), cobra.NoFileCompletions)
}

// bindBench binds bench's flags on fs and returns what runs it; given is
// its command line, kept in the record.
func bindBench(fs *pflag.FlagSet, given []string) func(context.Context) int {
	b := bench.BenchRun{Percentiles: lab.DefaultPercentiles, Stdout: os.Stdout, Stderr: os.Stderr}
	fields.BindFlags(fs, &b.Workload)
	fs.StringVar(&b.JSON, "json", "", "write the JSON record to `FILE`, or - for stdout (then the summary goes to stderr)")
	quiet := fs.Bool("quiet", false, "no per-second progress lines")
	metricsAddr := fs.String("metrics-listen", "", metricsListenHelp)
	linger := fs.Duration("metrics-linger", metrics.DefaultLinger, metricsLingerHelp)
	liveJSON := fs.Bool("live-json", false, "write the live totals once a second to stderr, one JSON line each starting \"live \" (how sweep run follows a bench on another host)")
	fs.StringVar(&b.Ceiling, "ceiling", "", "a JSON record of a run against linerate sink: say how near this run came to the client's own ceiling")
	fs.Var(&b.Percentiles, "percentiles", "latency percentiles to print and to keep in the record's summaries (p95 is always kept): "+lab.PercentilesForms)
	fs.StringVar(&b.StartAt, "start-at", "", fmt.Sprintf("wait until this time (Unix nanoseconds, this host's clock, within %s of now) before connecting: how sweep run starts the benches of several client hosts together", shortDuration(fields.MaxStartAhead)))
	fs.StringVar(&b.HgrmDir, "hgrm-dir", "", "write HdrHistogram files to `DIR`: RUNID.OP.hgrm (percentile distribution, ms) and RUNID.OP.hlog (interval log, one histogram per second)")
	return func(ctx context.Context) int {
		if fs.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "linerate bench: unexpected argument %q (see linerate bench --help)\n", fs.Arg(0))
			return exitcode.Usage
		}
		b.Engine = engine.Options{Given: append([]string{"linerate", "bench"}, fields.RedactPassword(given)...),
			MemAvailable: kernel.FS{}.MemAvailable}
		return runBench(ctx, fs, &b, benchOutput{quiet: *quiet, metricsAddr: *metricsAddr, linger: *linger, liveJSON: *liveJSON})
	}
}

// benchOutput is where a bench shows itself beside its record.
type benchOutput struct {
	quiet, liveJSON bool
	metricsAddr     string
	linger          time.Duration
}

func runBench(ctx context.Context, fs *pflag.FlagSet, b *bench.BenchRun, o benchOutput) int {
	err := fields.FinishFlags(fs, &b.Workload)
	if err == nil {
		err = b.Check(time.Now())
	}
	if err == nil {
		err = metrics.CheckLinger(o.linger)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate bench: %v\n", err)
		return exitcode.Usage
	}
	live := metrics.NewLive()
	msrv, code := startMetrics("bench", o.metricsAddr, live)
	if code != 0 {
		return code
	}
	var toMetrics, toLines func(*lab.Live)
	if msrv != nil {
		defer lingerMetrics(ctx, "bench", msrv, o.linger)
		toMetrics = live.Update
	}
	if o.liveJSON {
		toLines = bench.LiveLines(os.Stderr)
	}
	b.Engine.Live = metrics.Feed(toMetrics, toLines)
	if !o.quiet {
		b.Engine.Progress = os.Stderr
	}
	code, err = b.Run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate bench: %v\n", err)
	}
	return code
}
