package lab_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

const (
	kib = lab.Size(1 << 10)
	mib = lab.Size(1 << 20)
)

func mustMix(t testing.TB, s string) lab.SizeMix {
	t.Helper()
	m, err := lab.ParseSizeMix(s)
	if err != nil {
		t.Fatalf("ParseSizeMix(%q): %v", s, err)
	}
	return m
}

// One size is today's -s: it reads, prints and stores as a Size does.
func TestSizeMixOfOneSizeIsASize(t *testing.T) {
	for _, in := range []string{"1048576", "8MiB", "8mib", " 8MiB ", "8MB", "1000B", "1KiB", "1.5KiB", "48", "4GiB", "64MiB:100"} {
		m := mustMix(t, in)
		sz, err := lab.ParseSize(strings.TrimSuffix(in, ":100"))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := m.Single(); !ok || got != sz {
			t.Errorf("%q: single %v %v, want %v", in, got, ok, sz)
		}
		if m.String() != sz.String() {
			t.Errorf("%q prints %q, a Size prints %q", in, m.String(), sz.String())
		}
		mb, _ := json.Marshal(m)
		sb, _ := json.Marshal(sz)
		if string(mb) != string(sb) {
			t.Errorf("%q stores as %s, a Size as %s", in, mb, sb)
		}
		if m.Mean() != float64(sz) || m.Min() != sz || m.Max() != sz {
			t.Errorf("%q: mean %v min %v max %v", in, m.Mean(), m.Min(), m.Max())
		}
		if !reflect.DeepEqual(m.Classes(), []lab.Size{sz}) || m.Class(sz) != 0 || m.Class(sz+1) != -1 {
			t.Errorf("%q: classes %v, class %d", in, m.Classes(), m.Class(sz))
		}
		for key := range uint32(100) {
			if got := m.SizeFor(7, key); got != sz {
				t.Fatalf("%q: key %d has size %v", in, key, got)
			}
		}
	}
	// A record of one size, written before mixes, reads as that size.
	var m lab.SizeMix
	if err := json.Unmarshal([]byte(`1048576`), &m); err != nil || !reflect.DeepEqual(m, lab.OneSize(mib)) {
		t.Errorf("1048576 reads as %+v, %v", m, err)
	}
	if err := json.Unmarshal([]byte(`"8MiB"`), &m); err != nil || !reflect.DeepEqual(m, lab.OneSize(8*mib)) {
		t.Errorf(`"8MiB" reads as %+v, %v`, m, err)
	}
}

func TestParseSizeMix(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    lab.SizeMix
		print   string
		wantErr string
	}{
		{in: "1MiB:60,16MiB:30,64MiB:10", print: "1MiB:60,16MiB:30,64MiB:10",
			want: lab.SizeMix{Parts: []lab.SizePart{{mib, 60}, {16 * mib, 30}, {64 * mib, 10}}}},
		{in: " 64MiB:1 , 1MB:3 ", print: "64MiB:1,1MB:3",
			want: lab.SizeMix{Parts: []lab.SizePart{{64 * mib, 1}, {1e6, 3}}}},
		{in: "1MiB-64MiB", print: "1MiB-64MiB", want: lab.SizeMix{Lo: mib, Hi: 64 * mib}},
		{in: "100 - 1000", print: "100B-1KB", want: lab.SizeMix{Lo: 100, Hi: 1000}},

		{in: "", wantErr: "empty size"},
		{in: "0", wantErr: "0 bytes is outside 1 B - 4GiB"},
		{in: "5GiB", wantErr: "5368709120 bytes is outside 1 B - 4GiB"},
		{in: "1MiB:60,16XB:30", wantErr: `part 2 "16XB:30": size "16XB"`},
		{in: "1MiB:60,16MiB", wantErr: `part 2 "16MiB": want SIZE:WEIGHT`},
		{in: "1MiB:60,", wantErr: `part 2 "": want SIZE:WEIGHT`},
		{in: "1MiB:0,2MiB:1", wantErr: `part 1 "1MiB:0": weight "0": use a whole number 1-1000000`},
		{in: "1MiB:1,2MiB:1000001", wantErr: "part 2"},
		{in: "1MiB:1,2MiB:x", wantErr: `weight "x"`},
		{in: "1MiB:1,2MiB:1.5", wantErr: `weight "1.5"`},
		{in: "1MiB:60,1MiB:40", wantErr: "part 2: 1MiB is already part 1"},
		{in: "1MiB:60,1048576:40", wantErr: "part 2: 1MiB is already part 1"},
		{in: "1MiB:60,0:40", wantErr: "part 2: size 0 bytes"},
		{in: "64MiB-1MiB", wantErr: "MIN must be below MAX"},
		{in: "1MiB-1MiB", wantErr: "MIN must be below MAX"},
		{in: "1MiB-5GiB", wantErr: "range MAX 5368709120 bytes"},
		{in: "0-1MiB", wantErr: "range MIN 0 bytes"},
		{in: "-1MiB", wantErr: "range MIN: empty size"},
		{in: "1MiB-", wantErr: "range MAX: empty size"},
		{in: "1MiB-2MiB-3MiB", wantErr: "range MAX"},
		{in: "1MiB:1-2MiB", wantErr: "range MIN"},
		{in: "1e6", wantErr: "use bytes"},
		{in: strings.Repeat("1B:1,", 65), wantErr: "66 sizes; a mix has at most 64"},
		{in: strings.Repeat("1", 5000), wantErr: "longer than 4096"},
	} {
		got, err := lab.ParseSizeMix(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ParseSizeMix(%q): %v", tc.in, err)
		case tc.wantErr == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("ParseSizeMix(%q) = %+v, want %+v", tc.in, got, tc.want)
		case tc.wantErr == "" && got.String() != tc.print:
			t.Errorf("%q prints %q, want %q", tc.in, got.String(), tc.print)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseSizeMix(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
		}
		if err == nil {
			if back := mustMix(t, got.String()); !reflect.DeepEqual(back, got) {
				t.Errorf("%q: %q reads back as %+v", tc.in, got.String(), back)
			}
		}
	}
	// 64 sizes is the most a mix has.
	var b strings.Builder
	for i := 1; i <= lab.MaxMixParts; i++ {
		fmt.Fprintf(&b, "%dKiB:1,", i)
	}
	if m, err := lab.ParseSizeMix(strings.TrimSuffix(b.String(), ",")); err != nil || len(m.Parts) != lab.MaxMixParts {
		t.Errorf("64 sizes: %d parts, %v", len(m.Parts), err)
	}
}

func TestSizeMixJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1MiB:60,16MiB:30", `{"kind":"weights","sizes":[{"size":1048576,"weight":60},{"size":16777216,"weight":30}]}`},
		{"1MiB-64MiB", `{"kind":"log_uniform","min":1048576,"max":67108864}`},
		{"16MiB", `16777216`},
	} {
		m := mustMix(t, tc.in)
		b, err := json.Marshal(m)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s stores as %s, %v; want %s", tc.in, b, err, tc.want)
		}
		var back lab.SizeMix
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
			t.Errorf("%s reads back as %+v, %v", b, back, err)
		}
	}
	for _, in := range []string{
		`{"kind":"weights","sizes":[{"size":1048576,"weight":60}]}`,
		`{"kind":"weights","sizes":[{"size":1048576,"weight":0},{"size":2,"weight":1}]}`,
		`{"kind":"weights","sizes":[{"size":1048576,"weight":1},{"size":1048576,"weight":1}]}`,
		`{"kind":"log_uniform","min":2,"max":1}`,
		`{"kind":"log_uniform","min":1}`,
		`{"kind":"zipf"}`,
		`-1`, `"1MiB:0"`, `[]`, `null`, `{"kind":"weights","sizes":"x"}`,
	} {
		var m lab.SizeMix
		if err := json.Unmarshal([]byte(in), &m); err == nil {
			t.Errorf("%s read as %+v, want an error", in, m)
		}
	}
}

// A zero mix (no size given) stores as a zero Size did, and reads back as
// no size: Validate, not the reader, refuses it in a workload.
func TestZeroSizeMixJSON(t *testing.T) {
	b, err := json.Marshal(lab.SizeMix{})
	var back lab.SizeMix
	if err != nil || string(b) != "0" || json.Unmarshal(b, &back) != nil || !back.IsZero() {
		t.Errorf("the zero mix stores as %s (%v) and reads back as %+v", b, err, back)
	}
}

const manyKeys = 100_000

// Over 100,000 keys each size's share of keys follows its weight.
func TestSizeForSharesFollowTheWeights(t *testing.T) {
	for _, mix := range []string{"1MiB:60,16MiB:30,64MiB:10", "1KiB:1,1MiB:1000", "1B:1,2B:1,3B:1,4B:1,5B:1,6B:1,7B:1"} {
		m := mustMix(t, mix)
		var total float64
		for _, p := range m.Parts {
			total += float64(p.Weight)
		}
		for _, seed := range []uint64{0, 1, 42, math.MaxUint64} {
			counts := make([]int, len(m.Parts))
			prob := make([]float64, len(m.Parts))
			var sum float64
			for key := range uint32(manyKeys) {
				s := m.SizeFor(seed, key)
				sum += float64(s)
				for i, p := range m.Parts {
					if p.Size == s {
						counts[i]++
					}
				}
			}
			for i, p := range m.Parts {
				prob[i] = float64(p.Weight) / total
			}
			if stat, bound := labtest.ChiSquare(counts, prob); !(stat <= bound) {
				t.Errorf("%s seed %d: counts %v, chi-square %.2f above %.2f", mix, seed, counts, stat, bound)
			}
			if mean := sum / manyKeys; math.Abs(mean-m.Mean()) > 0.01*m.Mean() {
				t.Errorf("%s seed %d: keys' mean size %.0f, mix mean %.0f", mix, seed, mean, m.Mean())
			}
		}
	}
}

// The shares hold over every prefix of the keyspace, not only on average:
// over keys 0..N-1 each size has N·weight/total keys within 2 + ln N (the
// Weyl sequence's low discrepancy; random draws would wander by sqrt N,
// about 150 keys at N = 100,000).
func TestSizeForSharesHoldOverSmallKeyspaces(t *testing.T) {
	for _, mix := range []string{"1MiB:60,16MiB:30,64MiB:10", "1KiB:1,1MiB:1000", "1B:13,2B:29,3B:58"} {
		m := mustMix(t, mix)
		var total float64
		for _, p := range m.Parts {
			total += float64(p.Weight)
		}
		for _, seed := range []uint64{0, 1, 1234567} {
			counts := make([]int, len(m.Parts))
			for key := range uint32(manyKeys) {
				s := m.SizeFor(seed, key)
				n := float64(key + 1)
				for i, p := range m.Parts {
					if p.Size == s {
						counts[i]++
					}
					if d := math.Abs(float64(counts[i]) - n*float64(p.Weight)/total); d > 2+math.Log(n) {
						t.Fatalf("%s seed %d: over %0.f keys %v has %d, %.1f from its share", mix, seed, n, p.Size, counts[i], d)
					}
				}
			}
		}
	}
}

// Sizes drawn from a range are log-uniform: equal shares of keys per equal
// ratio of sizes, once the rounding to 7 significant bits is accounted for.
func TestSizeForRangeIsLogUniform(t *testing.T) {
	m := mustMix(t, "1MiB-64MiB")
	lo, hi := float64(m.Lo), float64(m.Hi)
	// Bins of rounded sizes at 2^a and 1.5·2^a, both on the 7-bit grid.
	var edges []lab.Size
	for e := lab.Size(mib); e < m.Hi; e *= 2 {
		edges = append(edges, e, e+e/2)
	}
	// A rounded size is at least edge B when the unrounded one was at least
	// B minus half the grid step just below B.
	cut := func(b lab.Size) float64 {
		if b == m.Lo {
			return lo
		}
		return float64(b) - float64(int64(1)<<(bits.Len64(uint64(b-1))-7))/2
	}
	prob := make([]float64, len(edges))
	for i := range edges {
		top := hi
		if i+1 < len(edges) {
			top = cut(edges[i+1])
		}
		prob[i] = math.Log(top/cut(edges[i])) / math.Log(hi/lo)
	}
	for _, seed := range []uint64{1, 99} {
		counts := make([]int, len(edges))
		var sum float64
		for key := range uint32(manyKeys) {
			s := m.SizeFor(seed, key)
			sum += float64(s)
			if s < m.Lo || s > m.Hi {
				t.Fatalf("key %d: %v outside the range", key, s)
			}
			if sig := bits.Len64(uint64(s)) - bits.TrailingZeros64(uint64(s)); sig > 7 && s != m.Lo && s != m.Hi {
				t.Fatalf("key %d: %v has %d significant bits", key, s, sig)
			}
			i := len(edges) - 1
			for i > 0 && s < edges[i] {
				i--
			}
			counts[i]++
		}
		if stat, bound := labtest.ChiSquare(counts, prob); !(stat <= bound) {
			t.Errorf("seed %d: counts %v, chi-square %.2f above %.2f", seed, counts, stat, bound)
		}
		if mean := sum / manyKeys; math.Abs(mean-m.Mean()) > 0.01*m.Mean() {
			t.Errorf("seed %d: keys' mean size %.0f, mix mean %.0f", seed, mean, m.Mean())
		}
	}
}

// A key's size depends on the seed and the key only; another seed deals
// the sizes out differently.
func TestSizeForIsPureAndSeeded(t *testing.T) {
	for _, mix := range []string{"1MiB:60,16MiB:30,64MiB:10", "1MiB-64MiB"} {
		m := mustMix(t, mix)
		again := mustMix(t, mix)
		differ := 0
		for key := range uint32(1000) {
			if m.SizeFor(5, key) != again.SizeFor(5, key) || m.SizeFor(5, key) != m.SizeFor(5, key) {
				t.Fatalf("%s: key %d changed size", mix, key)
			}
			if m.SizeFor(5, key) != m.SizeFor(6, key) {
				differ++
			}
		}
		if differ < 300 {
			t.Errorf("%s: seeds 5 and 6 give %d of 1000 keys another size", mix, differ)
		}
	}
}

func TestSizeMixClasses(t *testing.T) {
	for _, tc := range []struct {
		mix  string
		want []lab.Size
	}{
		{"16MiB:1,1MiB:1,64MiB:1", []lab.Size{mib, 16 * mib, 64 * mib}},
		{"1MiB-64MiB", []lab.Size{mib, 2 * mib, 4 * mib, 8 * mib, 16 * mib, 32 * mib}},
		{"3MiB-40MiB", []lab.Size{3 * mib, 4 * mib, 8 * mib, 16 * mib, 32 * mib}},
		{"1MiB-2MiB", []lab.Size{mib}},
		{"1MiB-3MiB", []lab.Size{mib, 2 * mib}},
		{"100B-1000B", []lab.Size{100, 128, 256, 512}},
		{"1B-4GiB", func() (c []lab.Size) {
			for e := range 32 {
				c = append(c, 1<<e)
			}
			return c
		}()},
	} {
		m := mustMix(t, tc.mix)
		got := m.Classes()
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: classes %v, want %v", tc.mix, got, tc.want)
		}
		// Every size a key gets is in the class that starts at or below it
		// and ends before the next class starts.
		for key := range uint32(20_000) {
			s := m.SizeFor(3, key)
			c := m.Class(s)
			if c < 0 || c >= len(got) || got[c] > s || (c+1 < len(got) && s >= got[c+1]) {
				t.Fatalf("%s: key %d size %v in class %d of %v", tc.mix, key, s, c, got)
			}
		}
		if m.Class(m.Min()-1) != -1 || m.Class(m.Max()+1) != -1 {
			t.Errorf("%s: sizes outside the mix have a class", tc.mix)
		}
	}
}

// SizeFor and Class run per request: they must not allocate.
func TestSizeForDoesNotAllocate(t *testing.T) {
	for _, mix := range []string{"8MiB", "1MiB:60,16MiB:30,64MiB:10", "1MiB-64MiB"} {
		m := mustMix(t, mix)
		key := uint32(0)
		if n := testing.AllocsPerRun(1000, func() {
			if m.Class(m.SizeFor(1, key)) < 0 {
				t.Fatal("no class")
			}
			key++
		}); n != 0 {
			t.Errorf("%s: %v allocations per call", mix, n)
		}
	}
}
