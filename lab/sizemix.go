package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// SizeMix is -s/--value-size: one size (8MiB, today's behaviour, printed
// and stored exactly as a Size), weighted sizes (1MiB:60,16MiB:30,64MiB:10)
// or a log-uniform range (1MiB-64MiB). Every key has one size, a pure
// function of the seed and the key (SizeFor), so a GET knows the length
// it must read and a prefill writes each key at its size.
type SizeMix struct {
	// Parts is a single size (one part) or the weighted sizes, in the
	// order given, each size once. Empty for a range.
	Parts []SizePart
	// Lo and Hi bound a range (Lo < Hi); zero otherwise.
	Lo, Hi Size
}

// SizePart is one size of a mix and its weight.
type SizePart struct {
	Size   Size `json:"size"`
	Weight int  `json:"weight"`
}

// Bounds on a mix: more sizes than 64 cannot be told apart in per-size
// results; weights are relative, and finer than one in a million mean
// nothing over a keyspace of at most 2^30 keys. Sizes have Size's bounds
// (1 B to MaxValueSize).
const (
	MaxMixParts  = 64
	MaxMixWeight = 1_000_000
)

// SizeMixForms is the help text for SizeMix.
const SizeMixForms = "one size (8MiB), weighted sizes SIZE:WEIGHT,... (1MiB:60,16MiB:30,64MiB:10; at most 64 sizes, weights 1-1000000) or a log-uniform range MIN-MAX (1MiB-64MiB); sizes are " + SizeForms

// OneSize is the mix of one size: what -s meant before mixes.
func OneSize(s Size) SizeMix { return SizeMix{Parts: []SizePart{{Size: s, Weight: 1}}} }

// ParseSizeMix reads -s. Each error names the part that is wrong.
func ParseSizeMix(s string) (SizeMix, error) {
	bad := func(format string, a ...any) (SizeMix, error) {
		return SizeMix{}, fmt.Errorf("value sizes %s: %s", quoteShort(s), fmt.Sprintf(format, a...))
	}
	if len(s) > maxFlagLen {
		return bad("longer than %d characters; use %s", maxFlagLen, SizeMixForms)
	}
	t := strings.TrimSpace(s)
	if lo, hi, isRange := strings.Cut(t, "-"); isRange {
		a, err := parseMixSize(lo)
		if err != nil {
			return bad("range MIN: %v", err)
		}
		b, err := parseMixSize(hi)
		if err != nil {
			return bad("range MAX: %v", err)
		}
		m := SizeMix{Lo: a, Hi: b}
		if err := m.Validate(); err != nil {
			return bad("%v", err)
		}
		return m, nil
	}
	if !strings.Contains(t, ":") && !strings.Contains(t, ",") {
		// One size reads, and is refused, as -s always was.
		one, err := parseMixSize(t)
		if err != nil {
			return SizeMix{}, err
		}
		m := OneSize(one)
		if err := m.Validate(); err != nil {
			return SizeMix{}, err
		}
		return m, nil
	}
	if n := strings.Count(t, ",") + 1; n > MaxMixParts {
		return bad("%d sizes; a mix has at most %d", n, MaxMixParts)
	}
	var m SizeMix
	for i, part := range strings.Split(t, ",") {
		sz, w, ok := strings.Cut(part, ":")
		if !ok {
			return bad("part %d %s: want SIZE:WEIGHT", i+1, quoteShort(part))
		}
		size, err := parseMixSize(sz)
		if err != nil {
			return bad("part %d %s: %v", i+1, quoteShort(part), err)
		}
		weight, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || weight < 1 || weight > MaxMixWeight {
			return bad("part %d %s: weight %s: use a whole number 1-%d", i+1, quoteShort(part), quoteShort(w), MaxMixWeight)
		}
		m.Parts = append(m.Parts, SizePart{Size: size, Weight: weight})
	}
	if len(m.Parts) == 1 { // 8MiB:100 is 8MiB
		m = OneSize(m.Parts[0].Size)
	}
	if err := m.Validate(); err != nil {
		return bad("%v", err)
	}
	return m, nil
}

// maxSizeText is how long a size's text may be before its error quotes
// only a cut of it (ParseSize quotes what it refuses whole). What ParseSize
// accepts is accepted however long it is: one size reads as it always did.
const maxSizeText = 40

func parseMixSize(s string) (Size, error) {
	v, err := ParseSize(s)
	if err != nil && len(s) > maxSizeText {
		return 0, fmt.Errorf("size %s: use %s", quoteShort(s), SizeForms)
	}
	return v, err
}

// Validate says whether the value sizes are ones linerate can send, on its
// own; the bounds between fields are lab/fields'.
func (m SizeMix) Validate() error {
	inBounds := func(what string, s Size) error {
		if s < 1 || s > MaxValueSize {
			return fmt.Errorf("%s %d bytes is outside 1 B - %s", what, int64(s), MaxValueSize)
		}
		return nil
	}
	if m.IsRange() {
		switch {
		case len(m.Parts) > 0:
			return fmt.Errorf("a range has no weighted sizes")
		case inBounds("range MIN", m.Lo) != nil:
			return inBounds("range MIN", m.Lo)
		case inBounds("range MAX", m.Hi) != nil:
			return inBounds("range MAX", m.Hi)
		case m.Lo >= m.Hi:
			return fmt.Errorf("range %s-%s: MIN must be below MAX (one size is written alone)", m.Lo, m.Hi)
		}
		return nil
	}
	if m.Lo != 0 {
		return fmt.Errorf("range MIN %s without a MAX", m.Lo)
	}
	if len(m.Parts) == 0 || len(m.Parts) > MaxMixParts {
		return fmt.Errorf("%d sizes: a mix has 1-%d", len(m.Parts), MaxMixParts)
	}
	if s, one := m.Single(); one {
		return inBounds("value size", s)
	}
	for i, p := range m.Parts {
		if err := inBounds(fmt.Sprintf("part %d: size", i+1), p.Size); err != nil {
			return err
		}
		if p.Weight < 1 || p.Weight > MaxMixWeight {
			return fmt.Errorf("part %d: weight %d: use 1-%d", i+1, p.Weight, MaxMixWeight)
		}
		for j := range i {
			if m.Parts[j].Size == p.Size {
				return fmt.Errorf("part %d: %s is already part %d", i+1, p.Size, j+1)
			}
		}
	}
	return nil
}

// IsZero says no size was given (Resolve fills the default).
func (m SizeMix) IsZero() bool { return len(m.Parts) == 0 && m.Lo == 0 && m.Hi == 0 }

// IsRange says the mix is a log-uniform range.
func (m SizeMix) IsRange() bool { return m.Hi != 0 }

// Single is the size of a one-size mix.
func (m SizeMix) Single() (Size, bool) {
	if len(m.Parts) == 1 && !m.IsRange() {
		return m.Parts[0].Size, true
	}
	return 0, false
}

// Min and Max are the smallest and largest size a key can have: Min for
// the verify header's room (MinVerifiableSize), Max for buffers.
func (m SizeMix) Min() Size {
	if m.IsRange() {
		return m.Lo
	}
	lo := Size(math.MaxInt64)
	for _, p := range m.Parts {
		lo = min(lo, p.Size)
	}
	return lo
}

func (m SizeMix) Max() Size {
	if m.IsRange() {
		return m.Hi
	}
	var hi Size
	for _, p := range m.Parts {
		hi = max(hi, p.Size)
	}
	return hi
}

// Mean is the nominal mean value size in bytes, the one a bit rate is
// converted with: the weighted mean of the parts, or for a range the
// log-uniform mean (Hi-Lo)/ln(Hi/Lo) (the rounding of drawn sizes moves it
// by under 1 %). Over a keyspace the keys' own mean is close to it (the
// shares follow the weights closely, see SizeFor); the requests' mean also
// depends on the key distribution (zipf favours a few keys).
func (m SizeMix) Mean() float64 {
	if m.IsRange() {
		lo, hi := float64(m.Lo), float64(m.Hi)
		return (hi - lo) / math.Log(hi/lo)
	}
	var sum, w float64
	for _, p := range m.Parts {
		sum += float64(p.Size) * float64(p.Weight)
		w += float64(p.Weight)
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// String prints the mix as ParseSizeMix reads it: 8MiB, 1MiB:60,16MiB:30,
// 1MiB-64MiB. A one-size mix prints as its Size does.
func (m SizeMix) String() string {
	if m.IsRange() {
		return m.Lo.String() + "-" + m.Hi.String()
	}
	if s, ok := m.Single(); ok {
		return s.String()
	}
	var b strings.Builder
	for i, p := range m.Parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", p.Size, p.Weight)
	}
	return b.String()
}

// Set and Type make SizeMix a flag value.
func (m *SizeMix) Set(v string) error {
	p, err := ParseSizeMix(v)
	if err != nil {
		return err
	}
	*m = p
	return nil
}

func (m *SizeMix) Type() string { return "sizes" }

// The JSON kinds of a mix that is not one size.
const (
	MixWeights    = "weights"
	MixLogUniform = "log_uniform"
)

// sizeMixJSON is a mix of more than one size in a record.
type sizeMixJSON struct {
	Kind  string     `json:"kind"`
	Sizes []SizePart `json:"sizes,omitempty"`
	Min   Size       `json:"min,omitempty"`
	Max   Size       `json:"max,omitempty"`
}

// MarshalJSON stores a one-size mix as Size does, a byte count (so records
// of one size read as before); weighted sizes as {"kind":"weights",
// "sizes":[{"size":1048576,"weight":60},...]}; a range as
// {"kind":"log_uniform","min":1048576,"max":67108864}. Sizes in bytes.
func (m SizeMix) MarshalJSON() ([]byte, error) {
	if m.IsZero() { // no size given, as a zero Size stored
		return []byte("0"), nil
	}
	if s, ok := m.Single(); ok {
		return s.MarshalJSON()
	}
	if m.IsRange() {
		return json.Marshal(sizeMixJSON{Kind: MixLogUniform, Min: m.Lo, Max: m.Hi})
	}
	return json.Marshal(sizeMixJSON{Kind: MixWeights, Sizes: m.Parts})
}

// UnmarshalJSON reads what MarshalJSON writes, or a string as -s takes it,
// and holds it to the same bounds: records are untrusted.
func (m *SizeMix) UnmarshalJSON(b []byte) error {
	var raw any
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("value sizes: %w", err)
	}
	switch v := raw.(type) {
	case string:
		return m.Set(v)
	case float64:
		var s Size
		if err := s.UnmarshalJSON(b); err != nil {
			return fmt.Errorf("value sizes: %w", err)
		}
		if s == 0 { // what a zero mix stores: no size, as a zero Size read
			*m = SizeMix{}
			return nil
		}
		return m.setChecked(OneSize(s))
	}
	var j sizeMixJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("value sizes: %w", err)
	}
	switch j.Kind {
	case MixWeights:
		if len(j.Sizes) < 2 {
			return fmt.Errorf("value sizes: %d weighted sizes; one size is a number", len(j.Sizes))
		}
		return m.setChecked(SizeMix{Parts: j.Sizes})
	case MixLogUniform:
		if j.Max == 0 {
			return fmt.Errorf("value sizes: a log_uniform range without max")
		}
		return m.setChecked(SizeMix{Lo: j.Min, Hi: j.Max})
	}
	return fmt.Errorf("value sizes: kind %s: want %s or %s", quoteShort(j.Kind), MixWeights, MixLogUniform)
}

func (m *SizeMix) setChecked(p SizeMix) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("value sizes: %w", err)
	}
	*m = p
	return nil
}

// golden is 2^64 divided by the golden ratio, odd: stepping by it visits
// [0, 2^64) as evenly as any sequence can (a Weyl sequence).
const golden = 0x9E3779B97F4A7C15

// mix64 is the splitmix64 finaliser: a seed becomes a well-spread offset.
func mix64(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// keyPoint is key's point in [0, 2^64): a Weyl sequence over the keys
// started at an offset drawn from the seed. Keys 0..N-1 fall into any
// interval of [0, 2^64) in proportion to its length within 2 + ln N keys
// (low discrepancy), so a mix's shares hold even over 10 keys, unlike a
// hash, whose shares wander by sqrt(N).
func keyPoint(seed uint64, key uint32) uint64 { return mix64(seed) + uint64(key)*golden }

// SizeFor is key's value size under seed: a pure function, the same in
// every process, with no allocation (the engine calls it per request).
// Weighted sizes: over keys 0..N-1 each size has N·weight/total keys
// within 2 + ln N. Range: log-uniform between Lo and Hi,
// rounded to the nearest multiple of 2^(k-7) for a size of k bits (7
// significant bits: steps of 1/128 to 1/64 of the size, e.g. 16 KiB steps
// between 1 and 2 MiB; below 128 B every byte count), clamped to [Lo, Hi].
func (m SizeMix) SizeFor(seed uint64, key uint32) Size {
	x := keyPoint(seed, key)
	if m.IsRange() {
		u := float64(x>>11) / (1 << 53) // [0, 1)
		lo, hi := float64(m.Lo), float64(m.Hi)
		return min(max(roundSize(lo*math.Exp(u*math.Log(hi/lo))), m.Lo), m.Hi)
	}
	var total uint64
	for _, p := range m.Parts {
		total += uint64(p.Weight)
	}
	pick, _ := bits.Mul64(x, total) // x/2^64 of the total: [0, total)
	for _, p := range m.Parts {
		if pick < uint64(p.Weight) {
			return p.Size
		}
		pick -= uint64(p.Weight)
	}
	return 0 // only for an empty (unvalidated) mix
}

// rangeBits is how many leading bits a size drawn from a range keeps.
const rangeBits = 7

// roundSize rounds v to rangeBits significant bits.
func roundSize(v float64) Size {
	n := int64(math.Round(v))
	k := bits.Len64(uint64(n))
	if k <= rangeBits {
		return Size(n)
	}
	g := float64(int64(1) << (k - rangeBits))
	return Size(math.Round(v/g) * g)
}

// Classes are the size classes per-size results are kept in, ascending,
// each named by the smallest size it holds. One size or weighted sizes:
// each size is a class. A range: the powers of two, [2^k, 2^(k+1)) within
// [Lo, Hi] (the first class starts at Lo), except that Hi, when it is a
// power of two above Lo, belongs to the class below it rather than
// forming a class of one size. 1MiB-64MiB has 1, 2, 4, 8, 16 and 32 MiB.
func (m SizeMix) Classes() []Size {
	if !m.IsRange() {
		out := make([]Size, 0, len(m.Parts))
		for i := range m.Parts {
			out = append(out, m.nthSmallest(i))
		}
		return out
	}
	n := m.Class(m.Hi) + 1
	out := make([]Size, n)
	for i := range out {
		out[i] = max(m.Lo, Size(1)<<(bits.Len64(uint64(m.Lo))-1+i))
	}
	return out
}

// Class is the index in Classes of size s, one SizeFor gives; -1 for a
// size the mix never gives. No allocation.
func (m SizeMix) Class(s Size) int {
	if m.IsRange() {
		if s < m.Lo || s > m.Hi {
			return -1
		}
		top := bits.Len64(uint64(s)) - 1
		if s == m.Hi && s&(s-1) == 0 && top > bits.Len64(uint64(m.Lo))-1 {
			top--
		}
		return top - (bits.Len64(uint64(m.Lo)) - 1)
	}
	idx, found := 0, false
	for _, p := range m.Parts {
		if p.Size < s {
			idx++
		}
		found = found || p.Size == s
	}
	if !found {
		return -1
	}
	return idx
}

// nthSmallest is the i-th smallest part size (sizes are distinct).
func (m SizeMix) nthSmallest(i int) Size {
	for _, p := range m.Parts {
		if m.Class(p.Size) == i {
			return p.Size
		}
	}
	return 0
}
