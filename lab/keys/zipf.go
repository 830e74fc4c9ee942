package keys

import "math"

// zipf draws rank r in [0, n) with probability (r+1)^-α / Σ_{j=1..n} j^-α
// for any α > 0, by rejection-inversion (W. Hörmann and G. Derflinger,
// "Rejection-inversion to generate variates from monotone discrete
// distributions", ACM TOMACS 6(3), 1996). It keeps five numbers whatever n
// is, where an inverse-CDF table over 2^30 keys would take 8 GiB, and it
// needs no α > 1 as Go's rand.Zipf does.
//
// The method: with h(x) = x^-α and its integral H, each key k in 1..n owns
// the interval (H(k-½), H(k+½)] of u-space, at least h(k) long because h is
// convex. A uniform u over the union, mapped back by H⁻¹ and rounded, gives
// a candidate k; it is kept when u falls in the last h(k) of k's interval,
// so every key is kept with weight exactly h(k). Key 1's interval is cut to
// exactly h(1), so it is never rejected.
//
// Ranks are not scrambled across the keyspace: rank 0 is key 0, the hottest.
// The server hashes key names (its dict, and CRC16 for cluster slots), so
// neighbouring key numbers share no bucket, page or shard and scrambling
// would change nothing it sees; unscrambled, "key 0 is the hottest" can be
// read off a record and tested exactly, as the engines' rand.Zipf did.
type zipf struct {
	q       float64 // the exponent α
	n       float64 // number of keys
	uLo     float64 // H(1.5) - h(1): where key 1's interval starts
	uHi     float64 // H(n+½): where key n's interval ends
	squeeze float64 // k - x below this is always kept (see newZipf)
}

func newZipf(alpha float64, n uint32) zipf {
	z := zipf{q: alpha, n: float64(n)}
	z.uLo = z.bigH(1.5) - 1
	z.uHi = z.bigH(z.n + 0.5)
	// k is kept when x ≥ H⁻¹(H(k+½) - h(k)); the paper shows k minus that
	// bound is smallest at k = 2, so k - x ≤ 2 - H⁻¹(H(2.5) - h(2)) keeps
	// without computing H: most draws skip the log and exp of the exact test.
	z.squeeze = 2 - z.bigHInv(z.bigH(2.5)-z.h(2))
	return z
}

func (z *zipf) next(rng Rand) uint32 {
	var k float64
	for range maxTries {
		u := z.uHi + rng.Float64()*(z.uLo-z.uHi)
		x := z.bigHInv(u)
		k = math.Min(math.Max(math.Floor(x+0.5), 1), z.n)
		if k-x <= z.squeeze || u >= z.bigH(k+0.5)-z.h(k) {
			break
		}
	}
	return uint32(k) - 1
}

// h is the unnormalised weight x^-α.
func (z *zipf) h(x float64) float64 { return math.Exp(-z.q * math.Log(x)) }

// bigH is ∫_1^x t^-α dt = (x^(1-α) - 1)/(1-α), or log x at α = 1, written
// as log x · expm1(t)/t with t = (1-α) log x so it stays exact near α = 1.
func (z *zipf) bigH(x float64) float64 {
	lx := math.Log(x)
	return expm1OverX((1-z.q)*lx) * lx
}

// bigHInv inverts bigH: x = exp(y · log1p(t)/t) with t = (1-α) y.
func (z *zipf) bigHInv(y float64) float64 {
	t := math.Max((1-z.q)*y, -1) // rounding may step past the pole at -1
	return math.Exp(log1pOverX(t) * y)
}

// expm1OverX is expm1(t)/t, continuous through t = 0.
func expm1OverX(t float64) float64 {
	if math.Abs(t) > 1e-8 {
		return math.Expm1(t) / t
	}
	return 1 + t/2*(1+t/3)
}

// log1pOverX is log1p(t)/t, continuous through t = 0.
func log1pOverX(t float64) float64 {
	if math.Abs(t) > 1e-8 {
		return math.Log1p(t) / t
	}
	return 1 - t*(0.5-t/3)
}
