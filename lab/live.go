package lab

import (
	"time"
)

// Live figures: what a run has done so far, read by the coordinator once a
// second (the progress tick) for the progress lines and live metrics
// (sweeps/metrics, --metrics-listen). Each worker counts into its own
// liveWorker, with no lock and no allocation; only the tick reads across
// workers. The record itself never comes from these counters: it is merged
// from the workers' own state after they stop, and the two must agree.

// LiveLatencyBounds are the upper bounds, in seconds, of the live latency
// histogram's buckets (1-2-5 steps from 100 µs to 50 s); a last bucket
// holds what is above. The record's percentiles come from HDR histograms.
var LiveLatencyBounds = []float64{
	0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
	0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50,
}

// Live is a run's running totals at one tick. Counts only grow within a
// run; each tick is a new value the receiver may keep.
type Live struct {
	At     time.Time   `json:"at"`
	Phase  Phase       `json:"phase"`            // the phase the run is in
	Server string      `json:"server,omitempty"` // name-version, as INFO says
	Final  bool        `json:"final,omitempty"`  // the run's last tick: the totals are complete
	Counts []LiveCount `json:"counts"`           // per phase and op, those with any request
}

// LiveCount is one phase and operation so far. Requests count in the
// phase they completed in, as in the record.
type LiveCount struct {
	Phase        Phase                `json:"phase"`
	Op           Op                   `json:"op"`
	OK           uint64               `json:"ok"`     // successful, value delivered or stored
	Misses       uint64               `json:"misses"` // nil replies for keys never written
	Errors       map[ErrorKind]uint64 `json:"errors,omitempty"`
	PayloadBytes uint64               `json:"payload_bytes"` // OK x value size
	// LatencySum (seconds) and Latency (counts per LiveLatencyBounds
	// bucket, not cumulative) cover the OK requests.
	LatencySum float64  `json:"latency_sum_s"`
	Latency    []uint64 `json:"latency"`
}

// Count is the figures of one phase and op, or nil.
func (l *Live) Count(p Phase, op Op) *LiveCount {
	for i := range l.Counts {
		if l.Counts[i].Phase == p && l.Counts[i].Op == op {
			return &l.Counts[i]
		}
	}
	return nil
}
