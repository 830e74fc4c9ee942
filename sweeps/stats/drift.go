package stats

import (
	"encoding/json"
	"math"
)

// DriftOptions tune AnalyzeDrift. Zero values take the defaults.
type DriftOptions struct {
	// MinChange is the relative change that matters (default 0.03, 3%):
	// smaller shifts are reported but do not make a verdict.
	MinChange float64
	// Alpha is the significance level for the tests (default 0.001: the
	// seconds of one run are correlated, so p-values are optimistic and the
	// bar is set high).
	Alpha float64
	// MinSegment is the fewest seconds either side of a step (default 5).
	MinSegment int
}

func (o DriftOptions) withDefaults() DriftOptions {
	if o.MinChange <= 0 {
		o.MinChange = 0.03
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.001
	}
	if o.MinSegment <= 0 {
		o.MinSegment = 5
	}
	return o
}

// Verdicts of AnalyzeDrift.
const (
	DriftStable   = "stable"
	DriftTrend    = "drift" // the last third differs from the first
	DriftNoisy    = "noisy" // the thirds differ by MinChange or more, but within the noise
	DriftStep     = "step"  // the level changed at one point
	DriftTooShort = "too-short"
)

// Drift is a per-second series judged for stability.
type Drift struct {
	N          int     `json:"n"`
	Verdict    string  `json:"verdict"`
	FirstThird Summary `json:"first_third"`
	LastThird  Summary `json:"last_third"`
	// Change is (last third mean - first third mean) / first third mean.
	Change float64 `json:"change"`
	Test   Welch   `json:"test"` // first vs last third
	Step   *Step   `json:"step,omitempty"`
}

// Step is the most likely single change of level.
type Step struct {
	At     int     `json:"at"` // index of the first sample at the new level
	Before float64 `json:"before_mean"`
	After  float64 `json:"after_mean"`
	Change float64 `json:"change"` // (after-before)/before
	Test   Welch   `json:"test"`
}

// AnalyzeDrift compares the first and last thirds of a series and looks
// for one step change: the split that best separates two flat levels.
// A steady ramp is reported as drift, not as a step, because neither side
// of its best split is flat.
func AnalyzeDrift(xs []float64, opt DriftOptions) Drift {
	opt = opt.withDefaults()
	d := Drift{N: len(xs), Verdict: DriftStable}
	if len(xs) < 3*2 || len(xs) < 2*opt.MinSegment {
		d.Verdict = DriftTooShort
		return d
	}
	third := len(xs) / 3
	first, last := xs[:third], xs[len(xs)-third:]
	d.FirstThird, d.LastThird = Describe(first), Describe(last)
	d.Change = relChange(d.FirstThird.Mean, d.LastThird.Mean)
	d.Test, _ = WelchTest(last, first)
	if math.Abs(d.Change) >= opt.MinChange {
		// A large change that the test cannot tell from noise is not
		// "stable": the series is too short or too noisy to say.
		d.Verdict = DriftNoisy
		if d.Test.P < opt.Alpha {
			d.Verdict = DriftTrend
		}
	}

	// The best split maximises Welch's |t|; prefix sums keep the scan linear
	// so a day-long soak (86400 seconds) is judged at once.
	n := len(xs)
	sum, sq := make([]float64, n+1), make([]float64, n+1)
	for i, x := range xs {
		sum[i+1] = sum[i] + x
		sq[i+1] = sq[i] + x*x
	}
	varOf := func(lo, hi int) (mean, v float64) {
		k := float64(hi - lo)
		mean = (sum[hi] - sum[lo]) / k
		v = (sq[hi] - sq[lo] - k*mean*mean) / (k - 1)
		return mean, math.Max(v, 0)
	}
	best, bestT := -1, 0.0
	for k := opt.MinSegment; k <= n-opt.MinSegment; k++ {
		ml, vl := varOf(0, k)
		mr, vr := varOf(k, n)
		se := math.Sqrt(vl/float64(k) + vr/float64(n-k))
		t := math.Inf(1)
		if se > 0 {
			t = math.Abs(mr-ml) / se
		} else if mr == ml {
			t = 0
		}
		if t > bestT {
			best, bestT = k, t
		}
	}
	if best < 0 {
		return d
	}
	left, right := xs[:best], xs[best:]
	w, _ := WelchTest(right, left)
	s := &Step{At: best, Before: Mean(left), After: Mean(right), Test: w}
	s.Change = relChange(s.Before, s.After)
	if math.Abs(s.Change) >= opt.MinChange && w.P < opt.Alpha &&
		flat(left, opt.MinChange/2) && flat(right, opt.MinChange/2) {
		d.Step = s
		d.Verdict = DriftStep
	}
	return d
}

// flat says whether a segment's halves differ by less than tol.
func flat(xs []float64, tol float64) bool {
	if len(xs) < 4 {
		return true
	}
	h := len(xs) / 2
	return math.Abs(relChange(Mean(xs[:h]), Mean(xs[h:]))) < tol
}

func relChange(from, to float64) float64 {
	if from == 0 {
		if to == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (to - from) / math.Abs(from)
}

// finite is x, or nil (JSON null) when x is NaN or infinite, as a change
// from a zero level is.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes a change from a zero level as null.
func (d Drift) MarshalJSON() ([]byte, error) {
	type plain Drift
	return json.Marshal(struct {
		plain
		Change *float64 `json:"change"`
	}{plain(d), finite(d.Change)})
}

// MarshalJSON writes a change from a zero level as null.
func (s Step) MarshalJSON() ([]byte, error) {
	type plain Step
	return json.Marshal(struct {
		plain
		Change *float64 `json:"change"`
	}{plain(s), finite(s.Change)})
}
