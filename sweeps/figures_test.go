package sweeps

import (
	"math"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

func TestCellFigure(t *testing.T) {
	h := hdr.New(1, 3600*1000*1000, 3)
	for v := int64(1); v <= 1000; v++ {
		h.RecordValue(v * 100) // 100 µs .. 100 ms
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	lat := func(p99, p999 float64) lab.LatencySummary {
		return lab.LatencySummary{Count: 1000, P99: p99, P999: p999, Histogram: string(enc)}
	}
	// A GET and a SET: 2 GB and 1 GB moved in 10 s; the server's threads
	// 0.9 + 0.3 + 0.05 busy over the 10 s: 12.5 CPU-s for 3 GB.
	full := &CellRecord{Status: StatusDone, Result: &lab.Result{Ops: map[lab.Op]*lab.OpResult{
		lab.OpGet: {Gbps: 1.6, OpsPerSec: 20, PayloadBytes: 2e9, Latency: lat(5000, 9000)},
		lab.OpSet: {Gbps: 0.8, OpsPerSec: 10, PayloadBytes: 1e9, Latency: lat(7000, 8000)},
	}}, Host: &hostmetrics.Window{Seconds: 10, Server: &hostmetrics.ProcWindow{Threads: []hostmetrics.ThreadBusy{{Busy: 0.9}, {Busy: 0.3}, {Busy: 0.05}}}}}
	noHost := &CellRecord{Status: StatusDone, Result: full.Result}
	idle := &CellRecord{Status: StatusDone, Result: &lab.Result{Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {}}}, Host: full.Host}
	probe := func(alone, load float64, n int64) *CellRecord {
		return &CellRecord{Status: StatusDone, Result: &lab.Result{Ops: full.Result.Ops, Probe: &lab.ProbeResult{
			Idle: lab.LatencySummary{Count: n, P99: alone}, Latency: lab.LatencySummary{Count: n, P99: load}, AddedP99: load - alone}}}
	}
	probed, probedIdle, probeNone := probe(400, 6500, 100), probe(600, 400, 100), probe(0, 0, 0)
	for _, tc := range []struct {
		rec    *CellRecord
		metric string
		want   float64 // NaN: not held
	}{
		{full, MetricGbps, 2.4},
		{full, MetricOps, 30},
		{full, MetricP99, 7},    // the worst op's, ms
		{full, MetricP999, 9},   // GET's is worse here
		{full, MetricP95, 95.0}, // read from the histogram: 95 ms
		{full, "p99.99", 100},   // any percentile, from the histogram
		{full, "p50", 50},
		{full, "99.9", math.NaN()}, // metrics are named as the tables name them: p99.9
		{full, "p101", math.NaN()},
		{full, MetricServerCPUPerGB, 12.5 / 3},
		{noHost, MetricServerCPUPerGB, math.NaN()},
		{idle, MetricServerCPUPerGB, math.NaN()}, // nothing moved
		{idle, MetricP99, math.NaN()},            // nothing completed: no latency, not zero
		{idle, MetricGbps, 0},                    // a measured zero
		{&CellRecord{Status: StatusFailed}, MetricGbps, math.NaN()},
		{full, "speed", math.NaN()},
		{probed, MetricProbeP99, 6.5},        // under load, ms
		{probed, MetricProbeAdded, 6.1},      // under load minus alone
		{probedIdle, MetricProbeAdded, -0.2}, // can be below zero: noise
		{full, MetricProbeP99, math.NaN()},   // no probe
		{probeNone, MetricProbeP99, math.NaN()},
		{probeNone, MetricProbeAdded, math.NaN()},
	} {
		got, ok := CellFigure(tc.rec, tc.metric)
		switch {
		case math.IsNaN(tc.want) && ok:
			t.Errorf("%s: %g, want none", tc.metric, got)
		case !math.IsNaN(tc.want) && (!ok || math.Abs(got-tc.want) > math.Abs(tc.want)*0.001+1e-9):
			t.Errorf("%s: %g (ok %v), want %g", tc.metric, got, ok, tc.want)
		}
	}
}

// Done repetitions without the figure are counted apart, not as zeros.
func TestCompareCountsUnmeasured(t *testing.T) {
	run := writeRun(t, t.TempDir(), map[string]map[string][]float64{
		"valkey-8.1.8": {"GET/8MiB": {33, 32}}, "valkey-9.1.0": {"GET/8MiB": {200, 201}},
	}, nil)
	c, err := Compare([]*Run{run}, CompareOptions{Metric: MetricServerCPUPerGB})
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Rows[0].A; a.Unmeasured != 2 || a.Stats.N != 0 || c.Rows[0].Mark != "n/a" {
		t.Errorf("side without host metrics: %+v mark %s", a, c.Rows[0].Mark)
	}
	if _, err := Compare([]*Run{run}, CompareOptions{Metric: "p101"}); err == nil || err.Error() != `metric "p101": use gbps, ops, p95, p99, p99.9 (or any pNN such as p99.99), server-cpu-per-gb, probe-p99, probe-added-p99 or memory-overhead` {
		t.Errorf("unknown metric: %v", err)
	}
}
