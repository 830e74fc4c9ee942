package labtest

import "gonum.org/v1/gonum/stat/distuv"

// ChiSquare is Pearson's statistic of observed counts against expected
// probabilities (summing to 1), and the statistic's 0.99 quantile for
// len-1 degrees of freedom: a statistic above bound says the counts do not
// follow the probabilities (p < 0.01). Tests of seeded draws (value-size
// mixes, poisson gaps) compare the two instead of a hand-picked tolerance.
func ChiSquare(observed []int, prob []float64) (stat, bound float64) {
	n := 0
	for _, o := range observed {
		n += o
	}
	for i, o := range observed {
		e := prob[i] * float64(n)
		stat += (float64(o) - e) * (float64(o) - e) / e
	}
	return stat, distuv.ChiSquared{K: float64(len(observed) - 1)}.Quantile(0.99)
}
