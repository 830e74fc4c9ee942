package engine

import (
	"math"
	"testing"
	"time"
)

func TestProgressRates(t *testing.T) {
	const mib8 = 8 << 20
	for _, tc := range []struct {
		name      string
		bytes     uint64
		ops       uint64
		d         time.Duration
		gbps, rps float64
	}{
		{"411 ops of 8 MiB in one second", 411 * mib8, 411, time.Second, 27.582, 411},
		{"the same in half a second", 411 * mib8, 411, 500 * time.Millisecond, 55.1635, 822},
		{"a late tick: 1.2 s", 120 << 20, 120, 1200 * time.Millisecond, 0.8389, 100},
		{"a mix: 3 requests of 1, 2 and 5 MiB", 8 << 20, 3, time.Second, 0.0671, 3},
		{"nothing moved", 0, 0, time.Second, 0, 0},
		{"no time passed", mib8, 1, 0, 0, 0},
	} {
		gbps, rps := progressRates(tc.bytes, tc.ops, tc.d)
		if math.Abs(gbps-tc.gbps) > 5e-4 || math.Abs(rps-tc.rps) > 1e-9 {
			t.Errorf("%s: %.4f Gbps %.3f ops/s, want %.4f Gbps %.3f ops/s", tc.name, gbps, rps, tc.gbps, tc.rps)
		}
		// Over one interval, bytes and requests of one size agree.
		if tc.ops > 0 && tc.bytes == tc.ops*(tc.bytes/tc.ops) && tc.d > 0 {
			if want := rps * float64(tc.bytes/tc.ops) * 8 / 1e9; math.Abs(gbps-want) > 1e-9 {
				t.Errorf("%s: %.6f Gbps disagrees with %.3f ops/s (%.6f Gbps)", tc.name, gbps, rps, want)
			}
		}
	}
}
