package lab_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

// Issue 25: -s 1MiB:60,16MiB:30,64MiB:10 -n 20 gave the keys 12/7/1, a
// mean of 9.4 MiB where the weights say 11.8, and --rate 10Gbps converted
// with 11.8 delivered 7.77 Gbps. The realized mix says so, and warns.
func TestRealizedMix(t *testing.T) {
	mix := func(s string) lab.SizeMix {
		m, err := lab.ParseSizeMix(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		mix    lab.SizeMix
		n      int
		keys   []uint64
		mean   float64 // bytes, within 0.01 %
		strays bool
	}{
		{"issue 25", mix("1MiB:60,16MiB:30,64MiB:10"), 20, []uint64{12, 7, 1}, (12*1 + 7*16 + 1*64) << 20 / 20.0, true},
		{"enough keys", mix("1MiB:60,16MiB:30,64MiB:10"), 1000, []uint64{600, 300, 100}, 12373197, false},
		{"one size", lab.OneSize(4096), 5, []uint64{5}, 4096, false},
		{"a range over many keys", mix("1MiB-64MiB"), 1 << 20, nil, 15884142, false},
	} {
		r := tc.mix.Realize(1, tc.n)
		if r.Keyspace != tc.n || r.CountedKeys != min(tc.n, lab.RealizedKeysMax) {
			t.Errorf("%s: keyspace %d, counted %d", tc.name, r.Keyspace, r.CountedKeys)
		}
		var keys, bytes uint64
		var askedKeys, askedBytes, keyShares, byteShares float64
		for i, c := range r.Classes {
			if tc.keys != nil && c.Keys != tc.keys[i] {
				t.Errorf("%s: class %s has %d keys, want %d", tc.name, c.Class, c.Keys, tc.keys[i])
			}
			keys += c.Keys
			bytes += c.Bytes
			askedKeys += c.AskedKeyShare
			askedBytes += c.AskedByteShare
			keyShares += c.KeyShare
			byteShares += c.ByteShare
		}
		if keys != uint64(r.CountedKeys) || math.Abs(r.Mean-float64(bytes)/float64(keys)) > 0.001 {
			t.Errorf("%s: %d keys, %d bytes, mean %v", tc.name, keys, bytes, r.Mean)
		}
		for _, sum := range []float64{askedKeys, askedBytes, keyShares, byteShares} {
			if math.Abs(sum-1) > 0.001*float64(len(r.Classes)) {
				t.Errorf("%s: shares sum to %v", tc.name, sum)
			}
		}
		if math.Abs(r.Mean-tc.mean) > 1e-4*tc.mean {
			t.Errorf("%s: mean %v, want %v", tc.name, r.Mean, tc.mean)
		}
		if r.Strays() != tc.strays {
			t.Errorf("%s: strays %v", tc.name, r.Strays())
		}
		warn := tc.mix.Warning(1, tc.n)
		if (warn != "") != tc.strays {
			t.Errorf("%s: warning %q", tc.name, warn)
		}
	}
	// The warning is one line naming -n, and the -n it advises no longer
	// strays while half of it does.
	m := mix("1MiB:60,16MiB:30,64MiB:10")
	warn := m.Warning(1, 20)
	if strings.Contains(warn, "\n") || !strings.Contains(warn, "-n 20") || !strings.Contains(warn, "64MiB 1 keys (5%, asked 10%) 34% of bytes (asked 54%)") ||
		!strings.Contains(warn, "mean 9.4 MiB where the weights give 11.8 MiB") {
		t.Errorf("warning %q", warn)
	}
	var advised int
	if i := strings.Index(warn, "raise -n to "); i < 0 {
		t.Fatalf("no -n advised: %q", warn)
	} else if _, err := fmt.Sscan(warn[i+len("raise -n to "):], &advised); err != nil {
		t.Fatal(err)
	}
	if m.Realize(1, advised).Strays() || !m.Realize(1, advised/2).Strays() {
		t.Errorf("advised -n %d: strays %v, at half %v", advised, m.Realize(1, advised).Strays(), m.Realize(1, advised/2).Strays())
	}
}

// A bit rate converts with the keys' mean, not the weights'.
func TestMeanValueBytes(t *testing.T) {
	m, _ := lab.ParseSizeMix("1MiB:60,16MiB:30,64MiB:10")
	w := lab.Workload{ValueSz: m, Keyspace: 20, Seed: 1}
	if got, want := w.MeanValueBytes(), (12*1+7*16+1*64)*float64(1<<20)/20; math.Abs(got-want) > 0.001 {
		t.Errorf("mean %v, want the keys' %v", got, want)
	}
	w.Keyspace = 0
	if got := w.MeanValueBytes(); got != m.Mean() {
		t.Errorf("no keyspace yet: %v, want the weights' %v", got, m.Mean())
	}
	if one := (lab.Workload{ValueSz: lab.OneSize(1000), Keyspace: 3}); one.MeanValueBytes() != 1000 {
		t.Errorf("one size: %v", one.MeanValueBytes())
	}
}
