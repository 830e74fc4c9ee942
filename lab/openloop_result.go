package lab

import (
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The record's open-loop parts (issue 13); docs/result-schema.md says what
// each figure counts. A paced request's latency runs from its intended
// send time (coordinated omission corrected); its service time from when
// it was really sent.

// OpenLoopResult is a --rate or --ramp run's pacing over the measured
// window: what was offered, what was sent and how late, what the server
// kept up with. Requests count by their intended send time.
type OpenLoopResult struct {
	Arrival    Arrival  `json:"arrival"`
	QueueLimit Duration `json:"queue_limit"`
	// Offered is the schedule's rate over the window (a ramp: the mean of
	// its steps); Achieved the successful requests completed in the
	// window per second of it (every op).
	Offered  float64 `json:"offered_ops_per_sec"`
	Achieved float64 `json:"achieved_ops_per_sec"`
	Sent     uint64  `json:"sent"`    // requests intended in the window that were sent
	Late     uint64  `json:"late"`    // of those, sent more than LateAfter after their intended time
	Dropped  uint64  `json:"dropped"` // not sent: they would have waited past the queue limit
	// Sustainable is false when any request was dropped: the server (or
	// the client) could not keep up with the offered rate, and the run
	// says so rather than quietly sending as fast as it could.
	Sustainable bool `json:"sustainable"`
}

// SizeResult is one size class of a value-size mix (SizeMix.Classes) in
// an op's window figures.
type SizeResult struct {
	Class        Size    `json:"class"` // the smallest size of the class
	Ops          uint64  `json:"ops"`
	PayloadBytes uint64  `json:"payload_bytes"`
	Gbps         float64 `json:"gbps"`
	Errors       uint64  `json:"errors"`
	// Latency (as the op's: from the intended send time when paced) from
	// a 256-bucket log histogram, within ±5%; absent when none completed.
	Latency *StepLatency `json:"latency_us,omitempty"`
}

// ProbeResult is the collateral probe (--probe): its GETs' latency beside
// the main load (the measured window) and alone (the warmup's first
// half), from the intended send time, and what the main load added.
type ProbeResult struct {
	Probe       Probe   `json:"probe"`
	Offered     float64 `json:"offered_ops_per_sec"`
	Connections int     `json:"connections"`

	Latency LatencySummary `json:"latency_us"`      // under load
	Service LatencySummary `json:"service_us"`      // under load, from the actual send
	Idle    LatencySummary `json:"idle_latency_us"` // alone
	// AddedP99 is Latency.P99 - Idle.P99; AddedLow and AddedHigh bound it
	// with each p99's 95% order-statistic interval (P99Interval): the
	// noise band of the difference. Zero when either side has no p99.
	AddedP99  float64 `json:"added_p99_us"`
	AddedLow  float64 `json:"added_p99_low_us"`
	AddedHigh float64 `json:"added_p99_high_us"`

	Sent    uint64 `json:"sent"` // in the window, by intended time
	Ops     uint64 `json:"ops"`
	Errors  uint64 `json:"errors"`
	Late    uint64 `json:"late"`
	Dropped uint64 `json:"dropped"`
	// Series is each second of the window: completed probe requests and
	// their p99 (256-bucket log histogram, within ±5%; absent when none).
	Series []ProbeSecond `json:"series"`
}

// ProbeSecond is one second of the probe in the window.
type ProbeSecond struct {
	Second int     `json:"second"`
	Ops    uint64  `json:"ops"`
	P99    float64 `json:"p99_us,omitempty"`
}

// P99Interval bounds h's p99 with 95% confidence from its samples alone:
// the values at ranks n·0.99 ∓ 1.96·sqrt(n·0.99·0.01), the order
// statistics between which the true 99th percentile lies (a distribution-
// free interval). Zero for an empty histogram.
func P99Interval(h *hdr.Histogram) (lo, hi float64) {
	n := float64(h.TotalCount())
	if n == 0 {
		return 0, 0
	}
	const p, z = 0.99, 1.96
	half := z * math.Sqrt(n*p*(1-p))
	q := func(rank float64) float64 {
		rank = min(max(rank, 1), n)
		return float64(h.ValueAtQuantile(100 * rank / n))
	}
	return q(math.Floor(n*p - half)), q(math.Ceil(n*p + half))
}
