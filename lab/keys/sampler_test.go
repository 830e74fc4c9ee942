package keys

import (
	"fmt"
	"math"
	mrand "math/rand"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func mustNew(t testing.TB, d Dist, n uint32, seed uint64) Sampler {
	t.Helper()
	s, err := New(d, n, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every kind stays inside the keyspace, for keyspaces of one key, a few,
// and the largest the workload allows.
func TestNextStaysInKeyspace(t *testing.T) {
	dists := []Dist{{Kind: Uniform}, {Kind: Sequential}, {Kind: Zipf, Alpha: 1e-9}, {Kind: Zipf, Alpha: 0.9},
		{Kind: Zipf, Alpha: 10}, {Kind: Gaussian, Mean: 0, SD: 1}, {Kind: Gaussian, Mean: 1, SD: 1e-9},
		{Kind: Gaussian, Mean: 1, SD: 0.5}}
	for _, d := range dists {
		for _, n := range []uint32{1, 2, 7, 1 << 30, math.MaxUint32} {
			s := mustNew(t, d, n, 3)
			for range 20_000 {
				if k := s.Next(); k >= n {
					t.Fatalf("%s over %d keys drew %d", d, n, k)
				}
			}
		}
	}
}

func TestUniformIsUniform(t *testing.T) {
	const n, draws = 100, 200_000
	s := mustNew(t, Dist{Kind: Uniform}, n, 11)
	counts := make([]float64, n)
	for range draws {
		counts[s.Next()]++
	}
	var stat float64
	for _, c := range counts {
		stat += (c - draws/n) * (c - draws/n) / (draws / n)
	}
	if crit := (distuv.ChiSquared{K: n - 1}).Quantile(0.99); stat > crit {
		t.Errorf("uniform over %d keys: chi-square %.1f > %.1f (p = 0.01)", n, stat, crit)
	}
}

func TestSequentialWalksAndWraps(t *testing.T) {
	s := mustNew(t, Dist{Kind: Sequential}, 5, 0)
	s.Start(13) // 13 mod 5
	var got []uint32
	for range 7 {
		got = append(got, s.Next())
	}
	if want := []uint32{3, 4, 0, 1, 2, 3, 4}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sequential from 13 over 5 keys = %v, want %v", got, want)
	}
	// A sequential sampler needs no random source.
	if _, err := New(Dist{Kind: Sequential}, 5, nil); err != nil {
		t.Errorf("sequential without a source: %v", err)
	}
}

// The gaussian is truncated, not clamped: centred on the first key, the
// keys follow a half-normal (mean sd·√(2/π)); clamping would have put half
// the draws on key 0 and a mean of half that.
func TestGaussianMoments(t *testing.T) {
	const n, draws = 1_000_000, 200_000
	cases := []struct {
		d        Dist
		mean, sd float64 // of key/n, exact for the truncated normal
	}{
		{Dist{Kind: Gaussian, Mean: 0.5, SD: 0.1}, 0.5, 0.1}, // truncation at ±5 sd: negligible
		{Dist{Kind: Gaussian, Mean: 0.3, SD: 0.05}, 0.3, 0.05},
		{Dist{Kind: Gaussian, Mean: 0, SD: 0.2}, 0.2 * math.Sqrt(2/math.Pi), 0.2 * math.Sqrt(1-2/math.Pi)},
	}
	for i, c := range cases {
		s := mustNew(t, c.d, n, uint64(20+i))
		var sum, sum2 float64
		var zero int
		for range draws {
			k := s.Next()
			if k == 0 {
				zero++
			}
			x := (float64(k) + 0.5) / n
			sum += x
			sum2 += x * x
		}
		mean := sum / draws
		sd := math.Sqrt(sum2/draws - mean*mean)
		// 5 standard errors: a wrong shape is off by far more.
		if se := c.sd / math.Sqrt(draws); math.Abs(mean-c.mean) > 5*se {
			t.Errorf("%s: mean %.5f, want %.5f ± %.5f", c.d, mean, c.mean, 5*se)
		}
		if math.Abs(sd-c.sd) > 0.02*c.sd {
			t.Errorf("%s: sd %.5f, want %.5f ± 2 %%", c.d, sd, c.sd)
		}
		if zero > draws/100 {
			t.Errorf("%s: key 0 drawn %d times of %d: the edge is piling up", c.d, zero, draws)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		d   Dist
		n   uint32
		rng Rand
	}{
		{Dist{Kind: Uniform}, 0, r},
		{Dist{Kind: Uniform}, 10, nil},
		{Dist{Kind: Zipf, Alpha: 0}, 10, r},
		{Dist{Kind: Zipf, Alpha: math.NaN()}, 10, r},
		{Dist{Kind: Gaussian, Mean: 0.5, SD: math.Inf(1)}, 10, r},
		{Dist{Kind: "pareto"}, 10, r},
	} {
		if _, err := New(c.d, c.n, c.rng); err == nil {
			t.Errorf("New(%+v, %d) took it", c.d, c.n)
		}
	}
}

// Next is on every request's path: no allocation, with either math/rand.
func TestNextDoesNotAllocate(t *testing.T) {
	for _, d := range []Dist{{Kind: Uniform}, {Kind: Sequential}, {Kind: Zipf, Alpha: 0.9},
		{Kind: Zipf, Alpha: 1.4}, {Kind: Gaussian, Mean: 0.5, SD: 0.1}} {
		for name, rng := range map[string]Rand{"v1": mrand.New(mrand.NewSource(1)), "v2": rand.New(rand.NewPCG(1, 2))} {
			s, err := New(d, 1<<20, rng)
			if err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(1000, func() { s.Next() }); a != 0 {
				t.Errorf("%s with math/rand %s: %v allocations per Next", d, name, a)
			}
		}
	}
}

var sink uint32

func BenchmarkNext(b *testing.B) {
	for _, d := range []Dist{{Kind: Uniform}, {Kind: Sequential}, {Kind: Zipf, Alpha: 0.9},
		{Kind: Zipf, Alpha: 1.4}, {Kind: Gaussian, Mean: 0.5, SD: 0.1}} {
		b.Run(d.String(), func(b *testing.B) {
			s := mustNew(b, d, 1<<20, 1)
			for b.Loop() {
				sink += s.Next()
			}
		})
	}
	// What the engines use today, for comparison (α > 1 only).
	b.Run("go-rand.Zipf:1.4", func(b *testing.B) {
		z := mrand.NewZipf(mrand.New(mrand.NewSource(1)), 1.4, 1, 1<<20-1)
		for b.Loop() {
			sink += uint32(z.Uint64())
		}
	})
}
