package sweeps

import (
	"math"
	"strings"

	"github.com/linerate/linerate/lab"
)

// Metrics Compare compares and plots charts and tabulates.
const (
	MetricGbps = "gbps"  // payload Gbps, all ops of the cell; higher is better
	MetricOps  = "ops"   // operations per second; higher is better
	MetricP95  = "p95"   // p95 latency in ms, worst op of the cell (from the stored histogram in records before p95 was kept); lower is better
	MetricP99  = "p99"   // p99 latency in ms, worst op of the cell; lower is better
	MetricP999 = "p99.9" // p99.9 latency in ms, worst op of the cell; lower is better
	// MetricServerCPUPerGB is the server process's CPU seconds (every
	// thread) over the measured window per GB of payload moved: what a
	// version spends on a gigabyte. Lower is better.
	MetricServerCPUPerGB = "server-cpu-per-gb"
	// The collateral probe's (--probe) p99 in ms beside the main load, and
	// what the load added to it (p99 under load minus p99 alone; noise can
	// make it negative). Lower is better.
	MetricProbeP99   = "probe-p99"
	MetricProbeAdded = "probe-added-p99"
	// MetricMemoryOverhead is what a key cost the server beyond its
	// value, in percent of the value size (CellRecord.Memory: INFO
	// used_memory per key added). Lower is better.
	MetricMemoryOverhead = "memory-overhead"
)

// MetricInfo says what a metric measures.
type MetricInfo struct {
	Name   string
	Unit   string // as a table heading or axis names it
	Higher bool   // higher is better
}

// Metrics lists every metric, in the order help texts name them.
var Metrics = []MetricInfo{
	{MetricGbps, "payload Gbps", true},
	{MetricOps, "ops/s", true},
	{MetricP95, "p95 ms", false},
	{MetricP99, "p99 ms", false},
	{MetricP999, "p99.9 ms", false},
	{MetricServerCPUPerGB, "server CPU-s per GB", false},
	{MetricProbeP99, "probe p99 ms", false},
	{MetricProbeAdded, "probe p99 added ms", false},
	{MetricMemoryOverhead, "memory per key over the value, %", false},
}

// MetricByName finds a metric: one of Metrics, or any latency percentile
// named as tables name it (p50, p99.99; LatencyPercentile).
func MetricByName(name string) (MetricInfo, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	if LatencyPercentile(name) > 0 {
		return MetricInfo{name, name + " ms", false}, true
	}
	return MetricInfo{}, false
}

// MetricNames is "gbps, ops, …, p99.9 (or any pNN …) or
// server-cpu-per-gb", for messages.
func MetricNames() string {
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = m.Name
		if m.Name == MetricP999 {
			names[i] += " (or any pNN such as p99.99)"
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// LatencyPercentile is the percentile a latency metric reads (95 for
// p95, 99.99 for p99.99: any percentile lab.ParsePercentiles reads, named
// as lab.PercentileName names it), or 0 for a metric that is not a
// latency.
func LatencyPercentile(metric string) float64 {
	if !strings.HasPrefix(metric, "p") {
		return 0
	}
	ps, err := lab.ParsePercentiles(metric)
	if err != nil || len(ps) != 1 || lab.PercentileName(ps[0]) != metric {
		return 0
	}
	return ps[0]
}

// CellFigure reads a cell's figure: Gbps and ops summed over the cell's
// ops, latencies the worst op's in milliseconds, server CPU per GB from the
// host metrics. ok is false when the record does not hold it: no result,
// no completed request for a latency, no server thread metrics or no
// payload for CPU per GB.
func CellFigure(r *CellRecord, metric string) (v float64, ok bool) {
	if r.Result == nil {
		return 0, false
	}
	switch metric {
	case MetricGbps, MetricOps:
		for _, o := range r.Result.Ops {
			if metric == MetricGbps {
				v += o.Gbps
			} else {
				v += o.OpsPerSec
			}
		}
		return v, true
	case MetricServerCPUPerGB:
		var payload uint64
		for _, o := range r.Result.Ops {
			payload += o.PayloadBytes
		}
		cpu, measured := r.Host.ServerCPUSeconds()
		if !measured || payload == 0 {
			return 0, false
		}
		return cpu / (float64(payload) / 1e9), true
	case MetricProbeP99, MetricProbeAdded:
		p := r.Result.Probe
		switch {
		case p == nil || p.Latency.Count == 0:
			return 0, false
		case metric == MetricProbeP99:
			return p.Latency.P99 / 1000, true
		case p.Idle.Count == 0:
			return 0, false
		}
		return p.AddedP99 / 1000, true
	case MetricMemoryOverhead:
		if r.Memory == nil || r.Memory.BytesPerKey <= 0 {
			return 0, false
		}
		return r.Memory.Overhead * 100, true
	}
	q := LatencyPercentile(metric)
	if q == 0 {
		return 0, false
	}
	for _, o := range r.Result.Ops {
		l := o.Latency
		if l.Count == 0 {
			continue
		}
		us, err := l.At(q) // a field, else the stored histogram
		if err != nil {
			continue
		}
		v, ok = math.Max(v, us/1000), true
	}
	return v, ok
}
