package lab

import "encoding/json"

// Durations in a record are Go strings ("1m0s") for people and, since
// linerate.bench/v2, numbers of seconds beside them ("request_timeout_s":
// 60) for tools. The numbers are written from the same field and never
// read back: a v1 record, which lacks them, reads the same.

// Seconds is d in seconds, rounded once: 3999500µs is 3.9995, where
// time.Duration's Seconds adds two rounded parts (3.9995000000000003).
func (d Duration) Seconds() float64 { return float64(d) / 1e9 }

// MarshalJSON writes the window with its durations also in seconds.
func (w Window) MarshalJSON() ([]byte, error) {
	type plain Window
	return json.Marshal(struct {
		plain
		WarmupS    float64 `json:"warmup_s"`
		RequestedS float64 `json:"requested_s"`
		MeasuredS  float64 `json:"measured_s"`
	}{plain(w), w.Warmup.Seconds(), w.Requested.Seconds(), w.Measured.Seconds()})
}

// MarshalJSON writes the workload with its durations also in seconds. The
// queue limit's is left out with it, in closed loop.
func (w Workload) MarshalJSON() ([]byte, error) {
	type plain Workload
	var ql *float64
	if w.QueueLimit != 0 {
		s := w.QueueLimit.Seconds()
		ql = &s
	}
	return json.Marshal(struct {
		plain
		WarmupS         float64  `json:"warmup_s"`
		DurationS       float64  `json:"duration_s"`
		RequestTimeoutS float64  `json:"request_timeout_s"`
		QueueLimitS     *float64 `json:"queue_limit_s,omitempty"`
	}{plain(w), w.Warmup.Seconds(), w.Duration.Seconds(), w.RequestTimeout.Seconds(), ql})
}
