package main

import (
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/local"
	"github.com/linerate/linerate/sweeps/metrics"
)

const metricsListenHelp = "serve live OpenMetrics at http://ADDR/metrics while it runs, e.g. 127.0.0.1:9100 (off unless given; only on ADDR)"

// The live sinks bench feeds.
func liveLines(w io.Writer) func(*lab.Live)             { return local.LiveLines(w) }
func bothLive(sinks ...func(*lab.Live)) func(*lab.Live) { return metrics.Feed(sinks...) }

// startMetrics serves cs on addr when it is set. It returns nil and exit
// code 0 when addr is empty, and nil and 2 (printed) for an address that
// cannot be listened on.
func startMetrics(who, addr string, cs ...prometheus.Collector) (*metrics.Server, int) {
	if addr == "" {
		return nil, 0
	}
	s, err := metrics.Listen(addr, cs...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
		if is[*metrics.AddrError](err) {
			return nil, 2
		}
		return nil, 1
	}
	fmt.Fprintf(os.Stderr, "linerate %s: metrics at %s\n", who, s.URL())
	return s, 0
}

// startRunMetrics serves a sweep run's or soak's metrics on addr: nil when
// addr is empty, or (code non-zero, printed) when it cannot.
func startRunMetrics(who, addr string) (*metrics.Run, int) {
	r := metrics.NewRun()
	var code int
	if r.Server, code = startMetrics(who, addr, r.Collectors()...); r.Server == nil {
		return nil, code
	}
	return r, 0
}
