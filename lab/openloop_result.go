package lab

import (
	"fmt"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The record's open-loop parts; docs/result-schema.md says what
// each figure counts. A paced request's latency runs from its intended
// send time (coordinated omission corrected); its service time from when
// it was really sent.

// OpenLoopResult is a --rate or --ramp run's pacing over the measured
// window: what was offered, what became of every request due in it, how
// late they went, and the verdict. Requests count by their intended send
// time: each one due in the window is exactly one of Completed, Failed,
// Dropped or Unsent, and those four sum to Due.
type OpenLoopResult struct {
	Arrival    Arrival  `json:"arrival"`
	QueueLimit Duration `json:"queue_limit"`
	// Offered is the schedule's rate over the window (a ramp: the mean of
	// its steps); Achieved the successful requests completed in the
	// window per second of it (every op).
	Offered  float64 `json:"offered_ops_per_sec"`
	Achieved float64 `json:"achieved_ops_per_sec"`
	Due      uint64  `json:"due"`  // requests the schedule meant to send in the window
	Sent     uint64  `json:"sent"` // of those, sent: Completed + Failed
	// Completed: sent and answered without an error (a GET's nil reply is
	// an answer); Failed: sent and failed (an error reply, a timeout, a
	// reset connection) or still unanswered when the drain ended.
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Late      uint64 `json:"late"`    // of those sent, sent more than LateAfter after their intended time
	Dropped   uint64 `json:"dropped"` // not sent: they would have waited past the queue limit
	Unsent    uint64 `json:"unsent"`  // not sent: still owed when the window ended
	// LatenessSlope is how fast the queue grew: the least-squares slope of
	// the requests' lateness (send, drop or window end minus intended
	// time) over their intended times, in seconds per second of window
	// (LatenessSlope the function).
	LatenessSlope float64 `json:"lateness_slope"`
	// Sustainable is the verdict (JudgeOpenLoop): achieved at least
	// MinAchievedShare of offered, the queue not growing (LatenessSlope at
	// most MaxLatenessSlope) and nothing dropped. ShortOfOffered and
	// QueueGrew say which of the first two failed; Dropped the third.
	Sustainable    bool `json:"sustainable"`
	ShortOfOffered bool `json:"short_of_offered"`
	QueueGrew      bool `json:"queue_grew"`
}

// The open-loop verdict's bounds (docs/result-schema.md derives them).
const (
	// MinAchievedShare: a sustained rate completes at least this share of
	// what was offered.
	MinAchievedShare = 0.95
	// MaxLatenessSlope: a queue whose requests' lateness grows s seconds
	// per second is served at (1-s) of the offered rate; a sustained rate
	// keeps s at most 1 %: the server kept 99 % of the pace.
	MaxLatenessSlope = 0.01
)

// JudgeOpenLoop sets o's verdict from its figures: Sustainable when
// achieved is at least MinAchievedShare of offered, the lateness slope at
// most MaxLatenessSlope and nothing was dropped.
func JudgeOpenLoop(o *OpenLoopResult) {
	o.ShortOfOffered = o.Achieved < MinAchievedShare*o.Offered
	o.QueueGrew = o.LatenessSlope > MaxLatenessSlope
	o.Sustainable = !o.ShortOfOffered && !o.QueueGrew && o.Dropped == 0
}

// Why says, with the figures, each condition o's verdict failed; nothing
// when it is sustainable.
func (o *OpenLoopResult) Why() []string {
	var out []string
	if o.ShortOfOffered {
		share := 0.0
		if o.Offered > 0 {
			share = o.Achieved / o.Offered
		}
		out = append(out, fmt.Sprintf("achieved %.4g requests/s, %.1f %% of the %.4g offered (at least %.0f %% sustains)",
			o.Achieved, 100*share, o.Offered, 100*MinAchievedShare))
	}
	if o.QueueGrew {
		out = append(out, fmt.Sprintf("the queue grew: lateness rose %.3g s per second of the window (at most %.2g sustains); %d requests still owed at its end",
			o.LatenessSlope, MaxLatenessSlope, o.Unsent))
	}
	if o.Dropped > 0 {
		out = append(out, fmt.Sprintf("%d requests dropped: they would have waited more than --queue-limit %s", o.Dropped, o.QueueLimit))
	}
	return out
}

// LatenessBins is how many equal parts of the window (and of each ramp
// step) a paced run's lateness is averaged over for its slope.
const LatenessBins = 10

// LatenessBin is the requests intended in one part of a span: how many,
// and the sum of their lateness in nanoseconds.
type LatenessBin struct {
	N   uint64
	Sum float64
}

// LatenessSlope is the least-squares slope of the bins' mean lateness
// over their middles, each bin weighted by its count, the bins dividing
// span equally: seconds of lateness gained per second. ok is false when
// fewer than two bins hold requests.
func LatenessSlope(bins []LatenessBin, span time.Duration) (slope float64, ok bool) {
	if len(bins) == 0 || span <= 0 {
		return 0, false
	}
	width := span.Seconds() / float64(len(bins))
	var n, sx, sy float64
	filled := 0
	for i, b := range bins {
		if b.N == 0 {
			continue
		}
		filled++
		w := float64(b.N)
		n += w
		sx += w * (float64(i) + 0.5) * width
		sy += b.Sum / 1e9
	}
	if filled < 2 {
		return 0, false
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i, b := range bins {
		if b.N == 0 {
			continue
		}
		w := float64(b.N)
		dx := (float64(i)+0.5)*width - mx
		sxy += w * dx * (b.Sum/1e9/w - my)
		sxx += w * dx * dx
	}
	return sxy / sxx, true
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
	// IdleLength is how long the probe ran alone (Workload.ProbePhases);
	// IdleShort says its idle p99 rests on fewer than ProbeIdleSamples
	// GETs (a note says why).
	IdleLength Duration `json:"idle_duration"`
	IdleShort  bool     `json:"idle_short,omitempty"`
	// AddedLow and AddedHigh bound Latency.P99 - Idle.P99 with each
	// p99's 95% order-statistic interval (P99Interval): the noise band of
	// the difference. AddedP99 is that difference when the band lies
	// above zero, and 0 with NoEffect when the band holds zero (or lies
	// below it): the main load added no latency the samples can show.
	// All zero when either side has no p99.
	AddedP99  float64 `json:"added_p99_us"`
	AddedLow  float64 `json:"added_p99_low_us"`
	AddedHigh float64 `json:"added_p99_high_us"`
	NoEffect  bool    `json:"no_measurable_effect,omitempty"`

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

// AddedP99 is what a main load added to a probe's p99: under load minus
// alone, with its noise band [lo, hi] from each p99's P99Interval. A
// band that holds zero (or lies below it) is no measurable effect: added
// is then 0 and measurable false, never a negative latency.
func AddedP99(loadP99, loadLo, loadHi, idleP99, idleLo, idleHi float64) (added, lo, hi float64, measurable bool) {
	lo, hi = loadLo-idleHi, loadHi-idleLo
	if lo <= 0 {
		return 0, lo, hi, false
	}
	return loadP99 - idleP99, lo, hi, true
}
