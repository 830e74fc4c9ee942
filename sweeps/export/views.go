package export

import (
	"github.com/linerate/linerate/lab"
)

// The ramp-step and size-class views: tidy tables, one row per thing a
// pandas user groups by, rather than a column per step or size (whose
// number differs from cell to cell).

// Cell × ramp step (Options.Steps): a step holds every op of the cell's
// mix, so op is empty for a mixed cell.
var stepColumns = []column{
	col("step", Int, "the ramp's step, from 0", func(r *row) any { return int64(r.step.Step) }),
	col("step_start_s", Float, "its start from the start of the ramp, seconds", func(r *row) any { return r.step.Start.Seconds() }),
	col("step_duration_s", Float, "its length, seconds", func(r *row) any { return r.step.Length.Seconds() }),
	col("offered_ops_per_sec", Float, "the schedule's rate in the step", func(r *row) any { return r.step.Offered }),
	col("achieved_ops_per_sec", Float, "the step's successful requests (by intended time) per second of it", func(r *row) any { return r.step.Achieved }),
	col("gbps", Float, "their payload Gbit/s", func(r *row) any { return r.step.Gbps }),
	col("sent", Int, "the step's requests sent", func(r *row) any { return r.step.Sent }),
	col("ops", Int, "of those, completed successfully", func(r *row) any { return r.step.Ops }),
	col("errors", Int, "of those, failed", func(r *row) any { return r.step.Errors }),
	col("late", Int, "of those, sent more than 1 ms after their intended time", func(r *row) any { return r.step.Late }),
	col("dropped", Int, "the step's requests never sent (past --queue-limit)", func(r *row) any { return r.step.Dropped }),
	col("p50_ms", Float, "latency from the intended send time, p50, ms, within ±5%", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Latency }, p50)),
	col("p95_ms", Float, "the same, p95", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Latency }, p95Of)),
	col("p99_ms", Float, "the same, p99", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Latency }, p99)),
	col("service_p50_ms", Float, "service time (from the real send), p50, ms", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Service }, p50)),
	col("service_p95_ms", Float, "the same, p95", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Service }, p95Of)),
	col("service_p99_ms", Float, "the same, p99", stepMs(func(s *lab.StepResult) *lab.StepLatency { return s.Service }, p99)),
	col("knee", Bool, "this step is the ramp's knee (pace.Knee's rule)", func(r *row) any {
		k := r.rec.Result.Knee
		return k != nil && k.Step == r.step.Step
	}),
}

// Cell × op × size class of a value-size mix (Options.Sizes).
var sizeColumns = []column{
	col("size_class", Int, "the class's smallest size, bytes", func(r *row) any { return int64(r.size.Class) }),
	col("size_class_text", String, "the same as people write it (16MiB)", func(r *row) any { return r.size.Class.String() }),
	col("ops", Int, "successful requests of the class in the window", func(r *row) any { return r.size.Ops }),
	col("payload_bytes", Int, "their value bytes", func(r *row) any { return r.size.PayloadBytes }),
	col("gbps", Float, "their payload Gbit/s over the window", func(r *row) any { return r.size.Gbps }),
	col("errors", Int, "failed requests of the class", func(r *row) any { return r.size.Errors }),
	col("p50_ms", Float, "latency p50, ms (as the op's: from the intended send time when paced), within ±5%", sizeMs(p50)),
	col("p95_ms", Float, "the same, p95", sizeMs(p95Of)),
	col("p99_ms", Float, "the same, p99", sizeMs(p99)),
}

func p50(l *lab.StepLatency) float64   { return l.P50 }
func p95Of(l *lab.StepLatency) float64 { return l.P95 }
func p99(l *lab.StepLatency) float64   { return l.P99 }

func stepMs(pick func(s *lab.StepResult) *lab.StepLatency, at func(*lab.StepLatency) float64) func(r *row) any {
	return func(r *row) any { return latencyMs(pick(r.step), at) }
}

func sizeMs(at func(*lab.StepLatency) float64) func(r *row) any {
	return func(r *row) any { return latencyMs(r.size.Latency, at) }
}

func latencyMs(l *lab.StepLatency, at func(*lab.StepLatency) float64) any {
	if l == nil || l.Count == 0 {
		return nil
	}
	return ms(at(l))
}
