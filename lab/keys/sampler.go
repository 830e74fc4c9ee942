package keys

import (
	"fmt"
	"math"
	"math/bits"
)

// Rand is the random source a Sampler draws from. *math/rand.Rand and
// *math/rand/v2.Rand both satisfy it; a worker owns its source, so nothing
// is shared or locked per draw.
type Rand interface {
	Uint64() uint64
	Float64() float64     // in [0, 1)
	NormFloat64() float64 // standard normal
}

// maxTries bounds the rejection loops of zipf and gaussian. With a real
// source they accept within a few tries (see each); the bound only keeps a
// broken source from spinning a worker forever.
const maxTries = 1000

type kind uint8

const (
	kUniform kind = iota
	kSequential
	kZipf
	kGaussian
)

// Sampler draws key numbers in [0, n) for one worker. Build one per worker
// (or per connection) with New; Next does not allocate. A Sampler is a
// value so an engine can keep it inside its connection state.
type Sampler struct {
	kind kind
	n    uint32
	next uint32 // sequential: the next key
	rng  Rand
	z    zipf
	// gaussian, in keys: centre and standard deviation scaled by n
	mean, sd float64
}

// New builds the sampler of d over keys 0..n-1. The zipf constants are
// computed here, once; memory does not grow with n.
func New(d Dist, n uint32, rng Rand) (Sampler, error) {
	if err := d.Validate(); err != nil {
		return Sampler{}, err
	}
	if n == 0 {
		return Sampler{}, fmt.Errorf("key sampler %s: the keyspace is empty", d)
	}
	if rng == nil && d.Kind != Sequential {
		return Sampler{}, fmt.Errorf("key sampler %s: no random source", d)
	}
	s := Sampler{n: n, rng: rng}
	switch d.Kind {
	case Uniform:
		s.kind = kUniform
	case Sequential:
		s.kind = kSequential
	case Zipf:
		s.kind = kZipf
		s.z = newZipf(d.Alpha, n)
	case Gaussian:
		s.kind = kGaussian
		s.mean, s.sd = d.Mean*float64(n), d.SD*float64(n)
	}
	return s, nil
}

// Start sets the key a sequential sampler gives next (taken modulo n), so
// connections can start their walks at different places. Other kinds ignore
// it.
func (s *Sampler) Start(k uint32) { s.next = k % s.n }

// Next returns the next key number, in [0, n).
func (s *Sampler) Next() uint32 {
	switch s.kind {
	case kSequential:
		k := s.next
		if s.next++; s.next == s.n {
			s.next = 0
		}
		return k
	case kZipf:
		return s.z.next(s.rng)
	case kGaussian:
		return s.gaussian()
	}
	return s.uniform()
}

// uniform is Lemire's multiply-shift with its rejection step, so every key
// has exactly the same chance (a plain modulo would favour low keys).
func (s *Sampler) uniform() uint32 {
	n := uint64(s.n)
	hi, lo := bits.Mul64(s.rng.Uint64(), n)
	if lo < n {
		for thresh := -n % n; lo < thresh; {
			hi, lo = bits.Mul64(s.rng.Uint64(), n)
		}
	}
	return uint32(hi)
}

// gaussian draws from the normal truncated to the keyspace: a draw outside
// is redrawn, not clamped, because clamping would pile the outside mass
// onto the first and last keys and make them the hottest. With the mean
// inside and SD at most the keyspace, a draw lands inside with probability
// at least 0.34; after maxTries misses (never, with a real source) the last
// draw is clamped.
func (s *Sampler) gaussian() uint32 {
	n := float64(s.n)
	var x float64
	for range maxTries {
		x = s.mean + s.sd*s.rng.NormFloat64()
		if x >= 0 && x < n {
			return uint32(x)
		}
	}
	return uint32(math.Min(math.Max(x, 0), n-1))
}
