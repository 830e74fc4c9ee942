package engine

import (
	"math/rand"

	"github.com/linerate/linerate/lab"
)

// chooser draws each request's operation and key from the workload's
// GET:SET ratio and key distribution. Every issuing unit owns one (a raw
// connection, a valkey-go worker), seeded from the workload's seed and the
// unit's index, so nothing is shared on the hot path and both engines given
// the same seed draw the same sequence. Drawing allocates nothing.
type chooser struct {
	rng        *rand.Rand
	zipf       *rand.Zipf // nil unless keys are zipf-distributed
	gets       int        // the GET weight
	weights    int        // GET + SET weights; 0 when the mix has no SET
	keyspace   int
	sequential bool

	base   uint32 // added to every key: the probe's keys follow the keyspace
	start  uint32 // the unit's first key in sequential order
	seq    uint32 // the next key in sequential order (or of the prefill)
	lo, hi uint32 // the unit's share of the keyspace, to prefill
}

// newChooser is the chooser of unit index of units: the raw engine's
// connections, or valkey-go's (connection, pipeline slot) workers.
func newChooser(w *lab.Workload, index, units int) chooser {
	rng := rand.New(rand.NewSource(int64(w.Seed)*1_000_003 + int64(index)))
	c := chooser{rng: rng, gets: w.Ratio.Gets, keyspace: w.Keyspace, sequential: w.KeyDist.Kind == lab.KeySequential}
	if w.Ratio.Sets > 0 {
		c.weights = w.Ratio.Gets + w.Ratio.Sets
	}
	if w.KeyDist.Kind == lab.KeyZipf {
		c.zipf = rand.NewZipf(rng, w.KeyDist.Alpha, 1, uint64(w.Keyspace-1))
	}
	// Sequential units start spread over the keyspace; the prefill gives
	// each unit its own contiguous share, the last one shorter.
	c.start = uint32((index * max(w.Keyspace/units, 1)) % w.Keyspace)
	c.seq = c.start
	per := (w.Keyspace + units - 1) / units
	lo := min(index*per, w.Keyspace)
	c.lo, c.hi = uint32(lo), uint32(min(lo+per, w.Keyspace))
	return c
}

// newProbeChooser is probe connection index's chooser: uniform GETs of
// the probe's keys, which follow the keyspace (lab.ProbeKeys of them).
func newProbeChooser(w *lab.Workload, index int) chooser {
	pw := lab.Workload{Keyspace: lab.ProbeKeys, Ratio: lab.Ratio{Gets: 1}, Seed: w.Seed ^ probeSeed,
		KeyDist: lab.KeyDist{Kind: lab.KeyUniform}}
	c := newChooser(&pw, index, lab.ProbeConnections)
	c.base = uint32(w.Keyspace)
	return c
}

// next is the next request: in the prefill, a SET of the next key of the
// unit's share; otherwise an op drawn from the ratio and a key from the
// distribution, the op first.
func (c *chooser) next(prefill bool) (op int, key uint32) {
	op = opGet
	if prefill || (c.weights > 0 && c.rng.Intn(c.weights) >= c.gets) {
		op = opSet
	}
	switch {
	case prefill || c.sequential:
		key = c.seq % uint32(c.keyspace)
		c.seq++
	case c.zipf != nil:
		key = uint32(c.zipf.Uint64())
	default:
		key = uint32(c.rng.Intn(c.keyspace))
	}
	return op, c.base + key
}

// startPrefill points the chooser at the unit's share of the keyspace.
func (c *chooser) startPrefill() { c.seq = c.lo }

// prefilled says whether the unit has written its whole share.
func (c *chooser) prefilled() bool { return c.seq >= c.hi }

// endPrefill puts sequential access back at the unit's own start.
func (c *chooser) endPrefill() { c.seq = c.start }
