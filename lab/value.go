package lab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// A value on the wire is
//
//	[ header 32 B | body (shared pattern) | trailer 16 B ]
//
// header:  magic "LRv1" | key id u32 | generation u64 | length u64 | check u64
// trailer: key id u32 | generation u64 | 4 bytes of check
//
// The body is one pattern per (seed, size), built once and shared by every
// request, so a SET sends it with a vectored write and no copy. The check
// word covers the header fields and the trailer: reading only the two ends
// of a reply (--verify header) proves its length, its key and that both
// ends come from the same write. --verify full also compares the body.
const (
	ValueHeaderLen    = 32
	ValueTrailerLen   = 16
	MinVerifiableSize = ValueHeaderLen + ValueTrailerLen
	keyPrefix         = "key:"
)

var valueMagic = [4]byte{'L', 'R', 'v', '1'}

// ValueLayout is the shared, read-only part of every value of one size.
type ValueLayout struct {
	Size int64
	Seed uint64
	// Body is the whole value's bytes with a zero header and trailer; the
	// body proper is Body[ValueHeaderLen : Size-ValueTrailerLen].
	Body []byte
}

// NewValueLayout builds the shared pattern. For 64 MiB values this is the
// one large allocation of a run, made and touched before any measuring.
func NewValueLayout(size int64, seed uint64) *ValueLayout {
	b := make([]byte, size)
	x := seed*0x9E3779B97F4A7C15 + uint64(size)
	var w [8]byte
	for i := int64(ValueHeaderLen); i < size; i += 8 {
		// xorshift64*: cheap, and no two 8-byte words in a row repeat.
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		binary.LittleEndian.PutUint64(w[:], x*0x2545F4914F6CDD1D)
		copy(b[i:], w[:])
	}
	if size >= MinVerifiableSize {
		clear(b[:ValueHeaderLen])
		clear(b[size-ValueTrailerLen:])
	}
	return &ValueLayout{Size: size, Seed: seed, Body: b}
}

// Prefix is the layout of values of size bytes (at most l.Size) cut from
// l's pattern: how a value-size mix makes every size from one pattern of
// its largest size (the pattern depends on the size it was built for, so
// the mix's layout is NewValueLayout(mix.Max(), seed)). The value's header
// carries its own length, so a value verifies as its size and no other.
// It returns a value, not a pointer: no allocation per request.
func (l *ValueLayout) Prefix(size int64) ValueLayout {
	return ValueLayout{Size: size, Seed: l.Seed, Body: l.Body[:size]}
}

// BodyRange is the [lo, hi) range of the value that is the shared pattern.
func (l *ValueLayout) BodyRange() (lo, hi int64) {
	if l.Size < MinVerifiableSize {
		return 0, l.Size
	}
	return ValueHeaderLen, l.Size - ValueTrailerLen
}

func checkWord(key uint32, gen uint64, length uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range [3]uint64{uint64(key), gen, length} {
		for i := 0; i < 8; i++ {
			h ^= (v >> (8 * i)) & 0xff
			h *= 1099511628211
		}
	}
	return h
}

// PutHeader writes the value header for (key, gen) into dst[:32].
func (l *ValueLayout) PutHeader(dst []byte, key uint32, gen uint64) {
	copy(dst[0:4], valueMagic[:])
	binary.LittleEndian.PutUint32(dst[4:8], key)
	binary.LittleEndian.PutUint64(dst[8:16], gen)
	binary.LittleEndian.PutUint64(dst[16:24], uint64(l.Size))
	binary.LittleEndian.PutUint64(dst[24:32], checkWord(key, gen, uint64(l.Size)))
}

// PutTrailer writes the value trailer for (key, gen) into dst[:16].
func (l *ValueLayout) PutTrailer(dst []byte, key uint32, gen uint64) {
	binary.LittleEndian.PutUint32(dst[0:4], key)
	binary.LittleEndian.PutUint64(dst[4:12], gen)
	binary.LittleEndian.PutUint32(dst[12:16], uint32(checkWord(key, gen, uint64(l.Size))))
}

// CheckEnds verifies a reply's header and trailer against the expected key.
// The generation is reported, not checked: concurrent writers make the
// latest generation of a key unknowable to any one connection.
func (l *ValueLayout) CheckEnds(header, trailer []byte, key uint32) (gen uint64, ok bool) {
	if !bytes.Equal(header[0:4], valueMagic[:]) {
		return 0, false
	}
	k := binary.LittleEndian.Uint32(header[4:8])
	gen = binary.LittleEndian.Uint64(header[8:16])
	n := binary.LittleEndian.Uint64(header[16:24])
	c := checkWord(k, gen, n)
	if k != key || n != uint64(l.Size) || binary.LittleEndian.Uint64(header[24:32]) != c {
		return gen, false
	}
	if binary.LittleEndian.Uint32(trailer[0:4]) != k || binary.LittleEndian.Uint64(trailer[4:12]) != gen ||
		binary.LittleEndian.Uint32(trailer[12:16]) != uint32(c) {
		return gen, false
	}
	return gen, true
}

// CheckBody compares p, which sits at offset off of the value, with the
// shared pattern. Header and trailer bytes in p are skipped (CheckEnds
// covers them).
func (l *ValueLayout) CheckBody(off int64, p []byte) bool {
	lo, hi := l.BodyRange()
	s, e := max(off, lo), min(off+int64(len(p)), hi)
	if s >= e {
		return true
	}
	return bytes.Equal(p[s-off:e-off], l.Body[s:e])
}

// Full returns a whole value for (key, gen), for control-plane writes and
// tests; the data path never builds whole values.
func (l *ValueLayout) Full(key uint32, gen uint64) []byte {
	v := bytes.Clone(l.Body)
	if l.Size >= MinVerifiableSize {
		l.PutHeader(v, key, gen)
		l.PutTrailer(v[l.Size-ValueTrailerLen:], key, gen)
	}
	return v
}

// KeyName is the key for id, padded to keySize: "key:000000000042".
func KeyName(id uint32, keySize int) string {
	d := strconv.FormatUint(uint64(id), 10)
	pad := keySize - len(keyPrefix) - len(d)
	if pad < 0 {
		panic(fmt.Sprintf("key id %d does not fit %d bytes", id, keySize))
	}
	return keyPrefix + string(bytes.Repeat([]byte{'0'}, pad)) + d
}

// AppendKey appends KeyName(id, keySize) to dst without allocating.
func AppendKey(dst []byte, id uint32, keySize int) []byte {
	dst = append(dst, keyPrefix...)
	var digits [10]byte
	d := strconv.AppendUint(digits[:0], uint64(id), 10)
	for i := len(keyPrefix) + len(d); i < keySize; i++ {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// ParseKeyID reads the id back out of a key name.
func ParseKeyID(key []byte) (uint32, bool) {
	if !bytes.HasPrefix(key, []byte(keyPrefix)) {
		return 0, false
	}
	var id uint64
	for _, c := range key[len(keyPrefix):] {
		if c < '0' || c > '9' {
			return 0, false
		}
		id = id*10 + uint64(c-'0')
		if id > 1<<32-1 {
			return 0, false
		}
	}
	return uint32(id), true
}

// MinKeySize is the shortest key that still names n distinct keys with the
// "key:" prefix used by every engine.
func MinKeySize(n int) int { return len(keyPrefix) + len(strconv.Itoa(max(n-1, 0))) }
