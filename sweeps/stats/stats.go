// Package stats holds the few statistics linerate reports: median, spread,
// coefficient of variation, Welch's t-test, and drift over a long run.
package stats

import (
	"encoding/json"
	"math"
	"sort"
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
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Variance is the sample variance (divides by n-1); 0 for fewer than two.
func Variance(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(xs)-1)
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
// variances (seed 003, Algorithm 2). ok is false when either side has
// fewer than two values. Two samples with no variance at all give p=1 for
// equal means and p=0 otherwise.
func WelchTest(x, y []float64) (w Welch, ok bool) {
	if len(x) < 2 || len(y) < 2 {
		return Welch{P: math.NaN(), T: math.NaN(), DF: math.NaN()}, false
	}
	nx, ny := float64(len(x)), float64(len(y))
	vx, vy := Variance(x)/nx, Variance(y)/ny
	diff := Mean(x) - Mean(y)
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
// freedom: I_{df/(df+t²)}(df/2, 1/2).
func StudentTTwoSided(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return RegIncBeta(df/2, 0.5, df/(df+t*t))
}

// StudentTCDF is P(T <= t).
func StudentTCDF(t, df float64) float64 {
	p := StudentTTwoSided(t, df) / 2
	if t > 0 {
		return 1 - p
	}
	return p
}

// RegIncBeta is the regularized incomplete beta function I_x(a, b), by its
// continued fraction evaluated with the modified Lentz method; the symmetry
// I_x(a,b) = 1 - I_{1-x}(b,a) keeps the fraction in its fast-converging range.
func RegIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	lnFront := a*math.Log(x) + b*math.Log1p(-x) - lnBeta(a, b)
	if x > (a+1)/(a+b+2) {
		return 1 - math.Exp(lnFront)*betaFraction(b, a, 1-x)/b
	}
	return math.Exp(lnFront) * betaFraction(a, b, x) / a
}

func lnBeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// betaFraction evaluates 1/(1+ d1/(1+ d2/(1+ …))) where
// d_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and
// d_{2m}   =  m(b-m)x / ((a+2m-1)(a+2m)).
func betaFraction(a, b, x float64) float64 {
	const (
		tiny    = 1e-300
		eps     = 1e-15
		maxIter = 500
	)
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1.0; m <= maxIter; m++ {
		// even step
		num := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		f *= d * c
		// odd step
		num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
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
