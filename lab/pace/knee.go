package pace

import "github.com/linerate/linerate/lab"

// The knee rule's thresholds (the package doc states the rule,
// docs/result-schema.md works an example).
const (
	// KneeLatencyFactor: a step's p99 more than this many times the
	// floor's p99 is a knee.
	KneeLatencyFactor = 2.0
	// KneeMedianFactor: a step's p50 more than this many times the
	// floor's p50 is a knee: the median request waits two of its own
	// service times, a single server past about 80 % busy (M/D/1).
	KneeMedianFactor = 3.0
	// KneeShortfall: an achieved rate more than this fraction below the
	// offered rate is a knee.
	KneeShortfall = 0.05
)

// floorSteps is how many of a ramp's first steps the floor is taken
// from: a third of them, at least two.
func floorSteps(n int) int { return min(n, max(2, (n+2)/3)) }

// Floor is the step whose latency the others are judged against: of
// the ramp's first third (at least its first two steps), the one with
// the lowest p99 (the first of equals). A single noisy step among the
// lightest loads cannot raise the baseline, as the first step alone
// did. -1 when none of them has a p99.
func Floor(steps []lab.StepResult) int {
	f := -1
	for i := range floorSteps(len(steps)) {
		l := steps[i].Latency
		if l == nil || l.P99 <= 0 {
			continue
		}
		if f < 0 || l.P99 < steps[f].Latency.P99 {
			f = i
		}
	}
	return f
}

// Knee is the first step of a ramp, in the order given, that broke the
// rule: after the floor step (Floor), a p99 above KneeLatencyFactor
// times the floor's or a p50 above KneeMedianFactor times the floor's;
// at any step, a queue that grew within it (its lateness slope above
// lab.MaxLatenessSlope) or an achieved rate below (1-KneeShortfall)
// times offered. Nil when none did.
func Knee(steps []lab.StepResult) *lab.Knee {
	if len(steps) == 0 {
		return nil
	}
	f := Floor(steps)
	var base lab.StepLatency
	if f >= 0 {
		base = *steps[f].Latency
	}
	for i, s := range steps {
		k := lab.Knee{Step: s.Step, Offered: s.Offered, FloorStep: -1, LatenessSlope: s.LatenessSlope}
		if f >= 0 {
			k.FloorStep, k.FloorP99, k.FloorP50 = steps[f].Step, base.P99, base.P50
			if l := s.Latency; l != nil {
				k.P99Ratio = l.P99 / base.P99
				if base.P50 > 0 {
					k.P50Ratio = l.P50 / base.P50
				}
				if i > f {
					k.Latency = l.P99 > KneeLatencyFactor*base.P99
					k.Median = base.P50 > 0 && l.P50 > KneeMedianFactor*base.P50
				}
			}
		}
		k.Queue = s.LatenessSlope > lab.MaxLatenessSlope
		if s.Offered > 0 {
			k.AchievedRatio = s.Achieved / s.Offered
			k.Rate = s.Achieved < (1-KneeShortfall)*s.Offered
		}
		if k.Latency || k.Median || k.Queue || k.Rate {
			return &k
		}
	}
	return nil
}
