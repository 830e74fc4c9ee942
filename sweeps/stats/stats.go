// Package stats holds the few statistics linerate reports: median, spread,
// coefficient of variation, Welch's t-test, and drift over a long run.
package stats

import (
	"encoding/json"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes one sample.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	StdDev float64 `json:"stddev"` // sample standard deviation (n-1); 0 for n<2
	CV     float64 `json:"cv"`     // StdDev/Mean; 0 when undefined
}

// Describe summarises xs (which it does not modify).
func Describe(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	s.Median = Median(xs)
	s.Mean = Mean(xs)
	s.Min, s.Max = xs[0], xs[0]
	for _, x := range xs {
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.StdDev = math.Sqrt(Variance(xs))
	if s.Mean != 0 {
		s.CV = s.StdDev / math.Abs(s.Mean)
	}
	return s
}

// Mean is the arithmetic mean; NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Mean(xs, nil)
}

// Variance is the sample variance (divides by n-1); 0 for fewer than two.
func Variance(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return stat.Variance(xs, nil)
}

// Median is the middle value, the mean of the two middle ones for even n.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Welch is the outcome of Welch's unequal-variance t-test.
type Welch struct {
	T  float64 `json:"t"`
	DF float64 `json:"df"`
	P  float64 `json:"p"` // two-sided
}

// MarshalJSON writes NaN and ±Inf (no test possible, zero variance) as
// null, which JSON can carry and encoding/json otherwise refuses.
func (w Welch) MarshalJSON() ([]byte, error) {
	f := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	return json.Marshal(struct {
		T  any `json:"t"`
		DF any `json:"df"`
		P  any `json:"p"`
	}{f(w.T), f(w.DF), f(w.P)})
}

// WelchTest compares the means of x and y without assuming equal
// variances (seed 003, Algorithm 2): Welch's t and its Welch-Satterthwaite
// degrees of freedom, the p-value from gonum's t distribution. ok is false when either side has
// fewer than two values. Two samples with no variance at all give p=1 for
// equal means and p=0 otherwise.
func WelchTest(x, y []float64) (w Welch, ok bool) {
	if len(x) < 2 || len(y) < 2 {
		return Welch{P: math.NaN(), T: math.NaN(), DF: math.NaN()}, false
	}
	nx, ny := float64(len(x)), float64(len(y))
	mx, varx := stat.MeanVariance(x, nil)
	my, vary := stat.MeanVariance(y, nil)
	vx, vy := varx/nx, vary/ny
	diff := mx - my
	se := math.Sqrt(vx + vy)
	if se == 0 {
		if diff == 0 {
			return Welch{T: 0, DF: nx + ny - 2, P: 1}, true
		}
		return Welch{T: math.Copysign(math.Inf(1), diff), DF: nx + ny - 2, P: 0}, true
	}
	w.T = diff / se
	w.DF = (vx + vy) * (vx + vy) / (vx*vx/(nx-1) + vy*vy/(ny-1))
	w.P = StudentTTwoSided(w.T, w.DF)
	return w, true
}

// StudentTTwoSided is P(|T| >= |t|) for Student's t with df degrees of
// freedom (gonum's t distribution; df may be fractional, as Welch's is).
func StudentTTwoSided(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
}

// Mark is the significance mark for a p-value: *** below 0.001, ** below
// 0.01, * below alpha (0.05 by convention), "ns" otherwise, "n/a" when no
// test was possible.
func Mark(p float64, ok bool, alpha float64) string {
	switch {
	case !ok || math.IsNaN(p):
		return "n/a"
	case p < 0.001 && alpha > 0.001:
		return "***"
	case p < 0.01 && alpha > 0.01:
		return "**"
	case p < alpha:
		return "*"
	}
	return "ns"
}
