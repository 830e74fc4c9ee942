// Package metrics serves linerate's live figures as OpenMetrics for
// Prometheus (--metrics-listen): a bench's, a sweep's or a soak's running
// totals (Live, fed from lab's progress tick, never from the workers' hot
// loop) and a server host's sampler figures (Host, for `linerate agent`).
// Records stay the result; these are for watching a run as it goes.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/lab"
)

// The live metric families. Requests count in the phase they completed
// in, as in the record; rate() of the measure phase's payload bytes is the
// record's Gbps (÷ 1e9 × 8).
var (
	payloadDesc = prometheus.NewDesc("linerate_payload_bytes_total",
		"Value bytes of successful requests (delivered by GET, stored by SET), counted once as each request completes.",
		[]string{"cell", "phase", "op"}, nil)
	requestsDesc = prometheus.NewDesc("linerate_requests_total",
		"Completed requests by outcome: ok, miss (nil reply for a key never written) or the error kind.",
		[]string{"cell", "phase", "op", "status"}, nil)
	latencyDesc = prometheus.NewDesc("linerate_request_duration_seconds",
		"First byte sent to last byte received of successful requests (the record's percentiles come from HDR histograms).",
		[]string{"cell", "phase", "op"}, nil)
	cellDesc = prometheus.NewDesc("linerate_cell_info",
		"The cell being measured (empty for a plain bench) and the server version it runs against, as INFO says.",
		[]string{"version", "cell"}, nil)
	phaseDesc = prometheus.NewDesc("linerate_run_phase",
		"1 for the phase the run is in (prefill, warmup, measure, drain), 0 for the others.",
		[]string{"cell", "phase"}, nil)
)

// Live is a prometheus.Collector of one process's running totals: Update
// feeds it the latest tick, SetCell names the cell in flight. A scrape sees
// the latest tick; between ticks nothing is computed.
type Live struct {
	mu   sync.Mutex
	last *lab.Live
	cell string
}

// NewLive returns a Live with nothing measured yet.
func NewLive() *Live { return &Live{} }

// Update takes the run's latest tick (engine.Options.Live).
func (m *Live) Update(l *lab.Live) {
	m.mu.Lock()
	m.last = l
	m.mu.Unlock()
}

// SetCell names the cell whose load comes next; its figures start from
// nothing, so one cell's counts never run on under another's name.
func (m *Live) SetCell(cell string) {
	m.mu.Lock()
	m.cell, m.last = cell, nil
	m.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (m *Live) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{payloadDesc, requestsDesc, latencyDesc, cellDesc, phaseDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Live) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	last, cell := m.last, m.cell
	m.mu.Unlock()
	if last == nil {
		if cell != "" {
			ch <- prometheus.MustNewConstMetric(cellDesc, prometheus.GaugeValue, 1, "", cell)
		}
		return
	}
	ch <- prometheus.MustNewConstMetric(cellDesc, prometheus.GaugeValue, 1, last.Server, cell)
	for _, p := range []lab.Phase{lab.PhasePrefill, lab.PhaseWarmup, lab.PhaseMeasure, lab.PhaseDrain} {
		v := 0.0
		if p == last.Phase && !last.Final {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, v, cell, string(p))
	}
	for _, c := range last.Counts {
		ph, op := string(c.Phase), string(c.Op)
		ch <- prometheus.MustNewConstMetric(payloadDesc, prometheus.CounterValue, float64(c.PayloadBytes), cell, ph, op)
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(c.OK), cell, ph, op, "ok")
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(c.Misses), cell, ph, op, "miss")
		for kind, n := range c.Errors {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), cell, ph, op, string(kind))
		}
		if len(c.Latency) != len(lab.LiveLatencyBounds)+1 {
			continue // a tick from another build's bounds: no histogram rather than a wrong one
		}
		buckets := make(map[float64]uint64, len(lab.LiveLatencyBounds))
		var cum uint64
		for i, le := range lab.LiveLatencyBounds {
			cum += c.Latency[i]
			buckets[le] = cum
		}
		ch <- prometheus.MustNewConstHistogram(latencyDesc, c.OK, c.LatencySum, buckets, cell, ph, op)
	}
}
