package lab

import (
	"fmt"
	"math"
	"strings"
)

// A mix's sizes are dealt to keys (SizeFor): over a few keys the shares
// the keys get can stray from the weights, and the bytes further, since
// one large key moves them most. -s 1MiB:60,16MiB:30,64MiB:10 over -n 20
// gives 12/7/1 keys: a mean of 9.4 MiB where the weights say 11.8.

// RealizedKeysMax bounds the keys a realized mix counts (keys 0 to
// RealizedKeysMax-1 of a larger keyspace): past it every class's share is
// within (2 + ln N)/N, under 0.02 %, of its weight (SizeFor's low
// discrepancy), and counting costs under a millisecond.
const RealizedKeysMax = 1 << 16

// MixStrayPoints is how far (in points: 0.10 of the whole) a class's
// share of keys or of bytes may stray from the asked share before the run
// warns that -n is too small for its mix.
const MixStrayPoints = 0.10

// RealizedMix is a mix as a keyspace realizes it, next to what was asked:
// the record's size_mix.
type RealizedMix struct {
	Keyspace    int             `json:"keyspace"`
	CountedKeys int             `json:"counted_keys"` // min(Keyspace, RealizedKeysMax)
	AskedMean   float64         `json:"asked_mean_bytes"`
	Mean        float64         `json:"mean_bytes"` // the counted keys' mean value size
	Classes     []RealizedClass `json:"classes"`
}

// RealizedClass is one size class (SizeMix.Classes): the share of keys
// and of bytes asked (from the weights, or the log-uniform law of a
// range) and realized by the counted keys.
type RealizedClass struct {
	Class          Size    `json:"class"`
	Keys           uint64  `json:"keys"`
	Bytes          uint64  `json:"bytes"`
	AskedKeyShare  float64 `json:"asked_key_share"`
	KeyShare       float64 `json:"key_share"`
	AskedByteShare float64 `json:"asked_byte_share"`
	ByteShare      float64 `json:"byte_share"`
}

// Realize counts the sizes seed gives keys 0 to min(keyspace,
// RealizedKeysMax)-1, per class. A keyspace below 1 counts one key.
func (m SizeMix) Realize(seed uint64, keyspace int) RealizedMix {
	n := min(max(keyspace, 1), RealizedKeysMax)
	classes := m.Classes()
	r := RealizedMix{Keyspace: keyspace, CountedKeys: n, AskedMean: round4(m.Mean()), Classes: make([]RealizedClass, len(classes))}
	var total uint64
	for key := range uint32(n) {
		s := m.SizeFor(seed, key)
		if i := m.Class(s); i >= 0 {
			r.Classes[i].Keys++
			r.Classes[i].Bytes += uint64(s)
		}
		total += uint64(s)
	}
	askedKeys, askedBytes := m.askedShares()
	for i := range r.Classes {
		c := &r.Classes[i]
		c.Class = classes[i]
		c.AskedKeyShare, c.AskedByteShare = round4(askedKeys[i]), round4(askedBytes[i])
		c.KeyShare = round4(float64(c.Keys) / float64(n))
		if total > 0 {
			c.ByteShare = round4(float64(c.Bytes) / float64(total))
		}
	}
	r.Mean = round4(float64(total) / float64(n))
	return r
}

// askedShares is each class's share of keys and of bytes by the mix's
// law: weight over total (bytes: size x weight); for a range, the class
// [a, b) of log-uniform [Lo, Hi] holds ln(b/a)/ln(Hi/Lo) of the keys and
// (b-a)/(Hi-Lo) of the bytes (the density is 1/(x ln(Hi/Lo))).
func (m SizeMix) askedShares() (keys, bytes []float64) {
	classes := m.Classes()
	keys, bytes = make([]float64, len(classes)), make([]float64, len(classes))
	if m.IsRange() {
		lo, hi := float64(m.Lo), float64(m.Hi)
		for i, c := range classes {
			b := hi
			if i+1 < len(classes) {
				b = float64(classes[i+1])
			}
			keys[i] = math.Log(b/float64(c)) / math.Log(hi/lo)
			bytes[i] = (b - float64(c)) / (hi - lo)
		}
		return keys, bytes
	}
	var w, wb float64
	for _, p := range m.Parts {
		w += float64(p.Weight)
		wb += float64(p.Weight) * float64(p.Size)
	}
	for _, p := range m.Parts {
		i := m.Class(p.Size)
		keys[i] = float64(p.Weight) / w
		bytes[i] = float64(p.Weight) * float64(p.Size) / wb
	}
	return keys, bytes
}

// Strays says whether some class's share of keys or of bytes is more
// than MixStrayPoints from the asked share.
func (r RealizedMix) Strays() bool {
	for _, c := range r.Classes {
		if math.Abs(c.KeyShare-c.AskedKeyShare) > MixStrayPoints || math.Abs(c.ByteShare-c.AskedByteShare) > MixStrayPoints {
			return true
		}
	}
	return false
}

// Warning is one line when the keys stray from the mix (Strays): each
// class's keys and shares, realized against asked, and the -n from which
// they no longer do (doubling -n, up to RealizedKeysMax). Empty otherwise.
func (m SizeMix) Warning(seed uint64, keyspace int) string {
	r := m.Realize(seed, keyspace)
	if !r.Strays() {
		return ""
	}
	parts := make([]string, len(r.Classes))
	for i, c := range r.Classes {
		parts[i] = fmt.Sprintf("%s %d keys (%.0f%%, asked %.0f%%) %.0f%% of bytes (asked %.0f%%)",
			c.Class, c.Keys, 100*c.KeyShare, 100*c.AskedKeyShare, 100*c.ByteShare, 100*c.AskedByteShare)
	}
	advice := fmt.Sprintf("raise -n above %d", keyspace)
	for n := max(keyspace, 1) * 2; n <= RealizedKeysMax; n *= 2 {
		if !m.Realize(seed, n).Strays() {
			advice = fmt.Sprintf("raise -n to %d or more", n)
			break
		}
	}
	return fmt.Sprintf("size mix %s over -n %d strays more than %.0f points from its weights: %s; mean %s where the weights give %s; %s",
		m, keyspace, 100*MixStrayPoints, strings.Join(parts, ", "), FormatBytes(r.Mean), FormatBytes(r.AskedMean), advice)
}

// FormatBytes prints a byte count that need not be a whole size in the
// unit a reader expects: 9.40 MiB, 12.0 KiB, 100 B.
func FormatBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.3g GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.3g KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// MeanValueBytes is the mean value size of w's keys, the one a bit rate
// converts with: for a mix, the mean over its keyspace (Realize; the
// asked mean before the keyspace is known), which the requests' mean
// follows under a uniform key choice.
func (w Workload) MeanValueBytes() float64 {
	if _, one := w.ValueSz.Single(); one || w.Keyspace < 1 || w.ValueSz.Validate() != nil {
		return w.ValueSz.Mean()
	}
	return w.ValueSz.Realize(w.Seed, w.Keyspace).Mean
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
