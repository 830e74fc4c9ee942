package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps/local"
	"github.com/linerate/linerate/sweeps/metrics"
	"github.com/spf13/pflag"
)

func init() {
	register(command{name: "bench", summary: "measure one server: GET/SET of large values over many connections", run: runBench})
}

const benchUsage = `Usage: linerate bench [flags]

Drives a Valkey/Redis server with large GET/SET values over many connections
and reports Gbps, ops/s and latency (first byte sent to last byte received).
Every GET reply is checked (--verify); a wrong reply is an error, never
throughput. -h is the host, as in the reference study's client; help is --help.

Examples:
  # the reference study's GET cell, as written (needs CPUs 4-19):
  linerate bench -h 10.0.0.2 -c 32 -P 1 -t 16 --cpu-list 4-19 -n 500 -r 100:0 \
      --prefill --warmup 5s -d 15s -s 8388608 --key-size 16
  # a short local SET run, record to a file:
  linerate bench -s 8MiB -r 0:100 -c 8 -t 2 -d 5s --json set.json
  # latency as HdrHistogram files (plot the .hgrm files together at
  # hdrhistogram.github.io/HdrHistogram/plotFiles.html):
  linerate bench -p 6379 -s 8MiB -d 10s --hgrm-dir hgrm/
  # load from two client hosts at once (sweep run does this for clients: N):
  # each waits for the same moment (Unix ns on its own clock), then connects
  linerate bench -h 10.0.0.2 -c 16 -s 8MiB --start-at 1767225600000000000
  # the client's own ceiling: run against the built-in sink
  linerate sink -p 7000 -s 8MiB &  linerate bench -p 7000 -s 8MiB --prefill=false

Open loop: --rate sends on a schedule whatever the replies do; a request
whose connection is busy waits in that connection's queue, and its latency
runs from when the schedule meant to send it (service time, from the real
send, is recorded beside it). One past --queue-limit is dropped. The run is
sustained only when it achieved 95 % of the rate, its queue did not grow
and nothing was dropped; the summary names what failed.
  # 300 GETs/s of 1 MiB, or 2 Gbit/s of payload, spread as poisson arrivals:
  linerate bench -s 1MiB --prefill --rate 300 -d 30s
  linerate bench -s 1MiB --prefill --rate 2Gbps --arrival poisson -d 30s
  # where does the server stop keeping up: 8 steps of 10 s, 50 to 800/s,
  # each step's figures and the knee in one record (the steps are the window):
  linerate bench -s 1MiB --prefill --ramp 50:800:8:10s
  # a mix of sizes (weights), or a log-uniform range; per-size results:
  linerate bench -s 1MiB:60,16MiB:30,64MiB:10 --prefill -d 20s
  linerate bench -s 1MiB-64MiB --prefill -d 20s
  # what 64 MiB GETs cost 100-byte GETs beside them: the probe's p99 under
  # load minus its p99 alone (in the warmup, until 1,000 of its GETs are in):
  linerate bench -s 64MiB --prefill --probe 100B@200 --warmup 4s -d 20s

Exit codes: 0 completed; 1 completed with failed requests; 2 bad flags;
3 setup failed (connect, auth, prefill); 4 server lost mid-run; 130 interrupted.
The JSON record (--json) is written in every case that got past the flags
(and past the --start-at wait: Ctrl-C during it writes none).

Flags:
`

func runBench(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SortFlags = false
	b := local.BenchRun{Percentiles: lab.DefaultPercentiles, Stdout: os.Stdout, Stderr: os.Stderr}
	fields.BindFlags(fs, &b.Workload)
	fs.StringVar(&b.JSON, "json", "", "write the JSON record to FILE, or - for stdout (then the summary goes to stderr)")
	quiet := fs.Bool("quiet", false, "no per-second progress lines")
	metricsAddr := fs.String("metrics-listen", "", metricsListenHelp)
	linger := fs.Duration("metrics-linger", metrics.DefaultLinger, metricsLingerHelp)
	liveJSON := fs.Bool("live-json", false, "write the live totals once a second to stderr, one JSON line each starting \"live \" (how sweep run follows a bench on another host)")
	fs.StringVar(&b.Ceiling, "ceiling", "", "a JSON record of a run against linerate sink: say how near this run came to the client's own ceiling")
	fs.Var(&b.Percentiles, "percentiles", "latency percentiles to print and to keep in the record's summaries (p95 is always kept): "+lab.PercentilesForms)
	fs.StringVar(&b.StartAt, "start-at", "", fmt.Sprintf("wait until this time (Unix nanoseconds, this host's clock, within %s of now) before connecting: how sweep run starts the benches of several client hosts together", lab.MaxStartAhead))
	fs.StringVar(&b.HgrmDir, "hgrm-dir", "", "write HdrHistogram files to DIR: RUNID.OP.hgrm (percentile distribution, ms) and RUNID.OP.hlog (interval log, one histogram per second)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, benchUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		hint := ""
		if strings.Contains(err.Error(), "in -h") {
			hint = "; -h is the host, as in the study's client, and help is --help"
		}
		fmt.Fprintf(os.Stderr, "linerate bench: %v%s (see linerate bench --help)\n", err, hint)
		return lab.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "linerate bench: unexpected argument %q (see linerate bench --help)\n", fs.Arg(0))
		return lab.ExitUsage
	}
	err := fields.FinishFlags(fs, &b.Workload)
	if err == nil {
		err = b.Check(time.Now())
	}
	if err == nil {
		err = metrics.CheckLinger(*linger)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate bench: %v\n", err)
		return lab.ExitUsage
	}
	live := metrics.NewLive()
	msrv, code := startMetrics("bench", *metricsAddr, live)
	if code != 0 {
		return code
	}
	var toMetrics, toLines func(*lab.Live)
	if msrv != nil {
		defer lingerMetrics(ctx, "bench", msrv, *linger)
		toMetrics = live.Update
	}
	if *liveJSON {
		toLines = local.LiveLines(os.Stderr)
	}
	b.Engine = engine.Options{Given: append([]string{"linerate", "bench"}, fields.RedactPassword(args)...), Live: metrics.Feed(toMetrics, toLines)}
	if !*quiet {
		b.Engine.Progress = os.Stderr
	}
	code, err = b.Run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate bench: %v\n", err)
	}
	return code
}
