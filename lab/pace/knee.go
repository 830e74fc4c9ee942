package pace

import "github.com/linerate/linerate/lab"

// The knee rule's two thresholds (the package doc states the rule).
const (
	// KneeLatencyFactor: a step's p99 more than this many times the first
	// step's p99 is a knee.
	KneeLatencyFactor = 2.0
	// KneeShortfall: an achieved rate more than this fraction below the
	// offered rate is a knee.
	KneeShortfall = 0.05
)

// Knee is the first step of a ramp, in the order given, that broke the
// rule: p99 above KneeLatencyFactor times the first step's p99, or
// achieved below (1-KneeShortfall) times offered. Nil when none did.
func Knee(steps []lab.StepResult) *lab.Knee {
	if len(steps) == 0 {
		return nil
	}
	var base float64 // the first step's p99; 0 leaves the latency half out
	if l := steps[0].Latency; l != nil && l.P99 > 0 {
		base = l.P99
	}
	for _, s := range steps {
		k := lab.Knee{Step: s.Step, Offered: s.Offered}
		if base > 0 && s.Latency != nil {
			k.P99Ratio = s.Latency.P99 / base
			k.Latency = s.Latency.P99 > KneeLatencyFactor*base
		}
		if s.Offered > 0 {
			k.AchievedRatio = s.Achieved / s.Offered
			k.Rate = s.Achieved < (1-KneeShortfall)*s.Offered
		}
		if k.Latency || k.Rate {
			return &k
		}
	}
	return nil
}
