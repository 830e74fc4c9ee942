package engine

import (
	"math/rand"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/keys"
)

// chooser draws each request's operation and key from the workload's
// GET:SET ratio and key distribution. Every issuing unit owns one (a raw
// connection, a valkey-go worker), seeded from the workload's seed and the
// unit's index, so nothing is shared on the hot path and both engines given
// the same seed draw the same sequence. Keys come from the unit's own
// keys.Sampler (lab/keys: uniform, sequential, zipf for any α > 0,
// gaussian), which shares the unit's source with the op draw. Drawing
// allocates nothing.
type chooser struct {
	rng     *rand.Rand
	keys    keys.Sampler
	gets    int // the GET weight
	weights int // GET + SET weights; 0 when the mix has no SET

	base     uint32 // added to every key: the probe's keys follow the keyspace
	seq      uint32 // the next key of the prefill
	lo, hi   uint32 // the unit's share of the keyspace, to prefill
	keyspace uint32
	// A cluster connection's keys are off + stride·x of its sampler's x
	// (engine's route.clusterChooser); stride is 1 otherwise.
	off, stride uint32
}

// newChooser is the chooser of unit index of units: the raw engine's
// connections, or valkey-go's (connection, pipeline slot) workers. The
// workload is validated, so the sampler cannot be refused.
func newChooser(w *lab.Workload, index, units int) chooser {
	rng := rand.New(rand.NewSource(int64(w.Seed)*1_000_003 + int64(index)))
	c := chooser{rng: rng, gets: w.Ratio.Gets, keyspace: uint32(w.Keyspace), stride: 1}
	if w.Ratio.Sets > 0 {
		c.weights = w.Ratio.Gets + w.Ratio.Sets
	}
	s, err := keys.New(w.KeyDist, uint32(w.Keyspace), rng)
	if err != nil {
		panic("engine: key sampler of a validated workload: " + err.Error())
	}
	// Sequential units start spread over the keyspace; the prefill gives
	// each unit its own contiguous share, the last one shorter.
	s.Start(uint32((index * max(w.Keyspace/units, 1)) % w.Keyspace))
	c.keys = s
	per := (w.Keyspace + units - 1) / units
	lo := min(index*per, w.Keyspace)
	c.lo, c.hi = uint32(lo), uint32(min(lo+per, w.Keyspace))
	c.seq = c.lo
	return c
}

// next is the next request: in the prefill, a SET of the next key of the
// unit's share; otherwise an op drawn from the ratio and a key from the
// distribution, the op first.
func (c *chooser) next(prefill bool) (op int, key uint32) {
	if prefill {
		key = c.seq % c.keyspace // past its share (never, in the engines) it wraps
		c.seq++
		return opSet, c.base + c.off + c.stride*key
	}
	op = opGet
	if c.weights > 0 && c.rng.Intn(c.weights) >= c.gets {
		op = opSet
	}
	return op, c.base + c.off + c.stride*c.keys.Next()
}

// newProbeChooser is probe connection index's chooser: uniform GETs of
// the probe's keys, which follow the keyspace (lab.ProbeKeys of them).
func newProbeChooser(w *lab.Workload, index int) chooser {
	pw := lab.Workload{Keyspace: lab.ProbeKeys, Ratio: lab.Ratio{Gets: 1}, Seed: w.Seed ^ probeSeed,
		KeyDist: keys.Dist{Kind: keys.Uniform}}
	c := newChooser(&pw, index, lab.ProbeConnections)
	c.base = uint32(w.Keyspace)
	return c
}

// startPrefill points the chooser at the unit's share of the keyspace.
func (c *chooser) startPrefill() { c.seq = c.lo }

// prefilled says whether the unit has written its whole share.
func (c *chooser) prefilled() bool { return c.seq >= c.hi }

// endPrefill is the end of the unit's share; sequential access goes on
// from the unit's own start, which the prefill never moved.
func (c *chooser) endPrefill() {}
