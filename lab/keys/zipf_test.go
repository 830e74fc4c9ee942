package keys

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// exactZipf is the oracle: P(rank r) = (r+1)^-α / Σ_{j=1..n} j^-α, summed
// directly for small n and with an Euler–Maclaurin tail past m terms for
// large n (error far below the float64 rounding of the head sum). It
// shares no code with the sampler.
func exactZipf(alpha float64, n uint64, top int) []float64 {
	const m = 10000
	var sum float64
	for j := uint64(1); j <= min(n, m); j++ {
		sum += math.Pow(float64(j), -alpha)
	}
	if n > m {
		// Σ_{j=m+1..n} f(j) ≈ ∫_m^n f + (f(n) - f(m))/2 - (f'(n) - f'(m))/12... written for f = x^-α.
		a, b := float64(m), float64(n)
		var integral float64
		if alpha == 1 {
			integral = math.Log(b / a)
		} else {
			integral = (math.Pow(b, 1-alpha) - math.Pow(a, 1-alpha)) / (1 - alpha)
		}
		f := func(x float64) float64 { return math.Pow(x, -alpha) }
		df := func(x float64) float64 { return -alpha * math.Pow(x, -alpha-1) }
		sum += integral + (f(b)-f(a))/2 + (df(b)-df(a))/12
	}
	p := make([]float64, top)
	for r := range p {
		p[r] = math.Pow(float64(r+1), -alpha) / sum
	}
	return p
}

// chiSquare returns the statistic of observed counts against the exact
// probabilities of the first len(p) keys plus one cell for all the rest,
// and that test's critical value at p = 0.01.
func chiSquare(counts []uint64, draws uint64, p []float64) (stat, crit float64) {
	restP, restO := 1.0, float64(draws)
	for i, pi := range p {
		e := pi * float64(draws)
		d := float64(counts[i]) - e
		stat += d * d / e
		restP -= pi
		restO -= float64(counts[i])
	}
	df := len(p) - 1
	if e := restP * float64(draws); e >= 5 {
		d := restO - e
		stat += d * d / e
		df++
	}
	return stat, distuv.ChiSquared{K: float64(df)}.Quantile(0.99)
}

// drawTop draws from a zipf sampler and counts the first `top` ranks.
func drawTop(t *testing.T, alpha float64, n uint32, top int, draws uint64, seed uint64) []uint64 {
	t.Helper()
	s, err := New(Dist{Kind: Zipf, Alpha: alpha}, n, rand.New(rand.NewPCG(seed, 0x5eed)))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]uint64, top)
	for range draws {
		k := s.Next()
		if k >= n {
			t.Fatalf("zipf:%g over %d keys drew key %d", alpha, n, k)
		}
		if int(k) < top {
			counts[k]++
		}
	}
	return counts
}

// The test: zipf 0.9 and 1.4 over 500 keys, the top 10 keys'
// frequencies within the chi-square bound of the exact distribution at
// p = 0.01; then the same for more exponents and keyspaces, including the
// largest keyspace the workload allows.
func TestZipfMatchesExactProbabilities(t *testing.T) {
	cases := []struct {
		alpha float64
		n     uint32
		top   int
	}{
		{0.9, 500, 10},
		{1.4, 500, 10},
		{0.1, 500, 10},
		{0.5, 500, 10},
		{0.99, 500, 10},
		{1.0, 500, 10},
		{1.001, 500, 10},
		{2, 500, 10},
		{5, 500, 3}, // past rank 3 the expected counts fall under 5
		{10, 500, 2},
		{1e-6, 500, 10},
		{0.9, 2, 2},
		{1.4, 3, 3},
		{0.5, 1 << 30, 10},
		{1.0, 1 << 30, 10},
		{1.4, 1 << 30, 10},
	}
	const draws = 200_000
	for i, c := range cases {
		t.Run(fmt.Sprintf("alpha=%g/n=%d", c.alpha, c.n), func(t *testing.T) {
			p := exactZipf(c.alpha, uint64(c.n), c.top)
			counts := drawTop(t, c.alpha, c.n, c.top, draws, uint64(i+1))
			stat, crit := chiSquare(counts, draws, p)
			if stat > crit {
				t.Errorf("chi-square %.2f > %.2f (p = 0.01): observed %v, expected %v", stat, crit, counts, scale(p, draws))
			}
		})
	}
}

// Beyond the top ten: every key of a 500-key space whose expected count is
// at least 5 is a cell of its own, the rest one cell.
func TestZipfWholeKeyspace(t *testing.T) {
	const draws = 200_000
	for i, alpha := range []float64{0.1, 0.5, 0.9, 0.99, 1, 1.001, 1.4, 2} {
		p := exactZipf(alpha, 500, 500)
		top := 0
		for top < len(p) && p[top]*draws >= 5 {
			top++
		}
		counts := drawTop(t, alpha, 500, top, draws, uint64(100+i))
		stat, crit := chiSquare(counts, draws, p[:top])
		if stat > crit {
			t.Errorf("zipf:%g over 500 keys, %d cells: chi-square %.2f > %.2f (p = 0.01)", alpha, top, stat, crit)
		}
	}
}

// The test can fail: draws of zipf:0.9 judged against the exact
// probabilities of 0.95, and draws of 1.4 against 1.35, are refused.
func TestZipfChiSquareHasPower(t *testing.T) {
	const draws = 200_000
	for _, c := range []struct{ drawn, judged float64 }{{0.9, 0.95}, {1.4, 1.35}} {
		counts := drawTop(t, c.drawn, 500, 10, draws, 7)
		stat, crit := chiSquare(counts, draws, exactZipf(c.judged, 500, 10))
		if stat <= crit {
			t.Errorf("draws of zipf:%g passed as zipf:%g (chi-square %.2f <= %.2f): the test cannot tell them apart", c.drawn, c.judged, stat, crit)
		}
	}
}

// The squeeze keeps a candidate without the exact test; it is safe only if
// it never keeps what the exact test would reject: k - H⁻¹(H(k+½) - h(k))
// must be at least the squeeze for every k ≥ 2. Computed in float64 the
// bound carries an error of about ulp(H)/h(k) keys (H(k+½) - h(k) cancels),
// so each k is checked within that error, and the walk stops where the
// error passes 0.1 key: beyond, float64 cannot tell, and a key there has a
// chance below 1e-13 of the hottest one's.
func TestZipfSqueezeIsSafe(t *testing.T) {
	for _, alpha := range []float64{1e-6, 0.1, 0.5, 0.9, 0.99, 1, 1.001, 1.4, 2, 5, 10} {
		z := newZipf(alpha, 1<<30)
		k := 2.0
		for ; k <= 1<<30; k = math.Ceil(k * 1.05) {
			hk, bigH := z.h(k), z.bigH(k+0.5)
			tol := 1e-14*math.Abs(bigH)/hk + 1e-12
			if tol > 0.1 {
				break
			}
			if bound := k - z.bigHInv(bigH-hk); bound < z.squeeze-tol {
				t.Errorf("zipf:%g: at k=%g the exact bound %.15g is below the squeeze %.15g (tolerance %.3g)", alpha, k, bound, z.squeeze, tol)
				break
			}
		}
		if k < 10 {
			t.Errorf("zipf:%g: checked no further than k=%g", alpha, k)
		}
		t.Logf("zipf:%g: squeeze %.6f safe for k in 2..%g", alpha, z.squeeze, k)
	}
}

func scale(p []float64, n float64) []float64 {
	out := make([]float64, len(p))
	for i := range p {
		out[i] = math.Round(p[i] * n)
	}
	return out
}
