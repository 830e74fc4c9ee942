package lab

import (
	"encoding/json"
	"strings"
	"time"
)

// LateAfter is when an open-loop request counts as late: sent more than
// this after its intended send time (it waited for its connection).
const LateAfter = time.Millisecond

// StepResult is one step of an arrival-rate ramp (--ramp) in the record's
// steps[]. A request belongs to the step its intended send time falls in;
// docs/result-schema.md says what each figure counts.
type StepResult struct {
	Step   int      `json:"step"`     // 0-based
	Start  Duration `json:"start"`    // from the start of the ramp
	Length Duration `json:"duration"` // the ramp's step duration

	Offered  float64 `json:"offered_ops_per_sec"`  // the schedule's rate in this step
	Achieved float64 `json:"achieved_ops_per_sec"` // successful requests of the step per second of it
	Gbps     float64 `json:"gbps"`                 // their payload, as OpResult.Gbps counts it

	Sent   uint64 `json:"sent"`   // requests of the step that were sent
	Ops    uint64 `json:"ops"`    // of those, completed successfully
	Errors uint64 `json:"errors"` // of those, failed (any kind)
	Late   uint64 `json:"late"`   // of those, sent more than LateAfter after their intended time
	// Dropped: requests of the step never sent, as they would have waited
	// past the queue limit (--queue-limit) for their connection.
	Dropped uint64 `json:"dropped"`
	// Unsent: requests of the step still owed when the window ended.
	Unsent uint64 `json:"unsent"`
	// LatenessSlope is the step's queue growth: the slope of its
	// requests' lateness over their intended times (lab.LatenessSlope
	// over the step's LatenessBins parts), seconds per second.
	LatenessSlope float64 `json:"lateness_slope"`

	// Latency is from the intended send time to the last reply byte
	// (coordinated omission corrected); Service from the actual send.
	// Absent when no request of the step completed.
	Latency *StepLatency `json:"latency_us,omitempty"`
	Service *StepLatency `json:"service_us,omitempty"`
}

// StepLatency is a step's (or a size class's) latency percentiles in
// microseconds, read from a 256-bucket log histogram (within ±5%, as a
// second's p99): a worker keeps one per step and class without the
// memory of an HDR histogram each.
type StepLatency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// MarshalJSON writes the step with its durations also in seconds, as every
// duration of a v2 record is, and its edge bias (StepEdgeBiasOf) when its
// requests were long for it: judged from its figures, so every record
// written carries it and a reader of an older one can call the function.
func (s StepResult) MarshalJSON() ([]byte, error) {
	type plain StepResult
	return json.Marshal(struct {
		plain
		StartS   float64       `json:"start_s"`
		LengthS  float64       `json:"duration_s"`
		EdgeBias *StepEdgeBias `json:"edge_bias,omitempty"`
	}{plain(s), s.Start.Seconds(), s.Length.Seconds(), StepEdgeBiasOf(s)})
}

// Knee is where a ramp stopped keeping up: the first step that broke the
// rule pace.Knee states. Absent from a record when no step did.
type Knee struct {
	Step    int     `json:"step"`
	Offered float64 `json:"offered_ops_per_sec"`
	// FloorStep is the step the latency halves compare with (pace.Floor:
	// the lowest p99 of the ramp's first third), FloorP99 and FloorP50
	// its percentiles (µs); -1 and 0 when no step there has a p99.
	FloorStep int     `json:"floor_step"`
	FloorP99  float64 `json:"floor_p99_us"`
	FloorP50  float64 `json:"floor_p50_us"`
	// P99Ratio and P50Ratio are the step's percentiles over the floor's
	// (0 when either is not measured); AchievedRatio its achieved rate
	// over its offered rate; LatenessSlope its queue's growth.
	P99Ratio      float64 `json:"p99_ratio"`
	P50Ratio      float64 `json:"p50_ratio"`
	AchievedRatio float64 `json:"achieved_ratio"`
	LatenessSlope float64 `json:"lateness_slope"`
	// Which parts of the rule the step broke (several can): Latency its
	// p99, Median its p50, Queue its queue grew, Rate its achieved rate.
	Latency bool `json:"latency"`
	Median  bool `json:"p50"`
	Queue   bool `json:"queue"`
	Rate    bool `json:"rate"`
}

// By names the parts of the rule k broke, joined by "+": latency (the
// p99), p50, queue, rate.
func (k *Knee) By() string {
	var by []string
	for _, p := range []struct {
		on   bool
		name string
	}{{k.Latency, "latency"}, {k.Median, "p50"}, {k.Queue, "queue"}, {k.Rate, "rate"}} {
		if p.on {
			by = append(by, p.name)
		}
	}
	return strings.Join(by, "+")
}
