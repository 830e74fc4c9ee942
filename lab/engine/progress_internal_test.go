package engine

import (
	"math"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

func TestProgressRates(t *testing.T) {
	const mib8 = lab.Size(8 << 20)
	for _, tc := range []struct {
		name      string
		bytes     uint64
		size      lab.Size
		d         time.Duration
		gbps, ops float64
	}{
		{"411 ops of 8 MiB in one second", 411 * 8 << 20, mib8, time.Second, 27.582, 411},
		{"the same bytes in half a second", 411 * 8 << 20, mib8, 500 * time.Millisecond, 55.1635, 822},
		{"a late tick: 1.2 s", 120 << 20, 1 << 20, 1200 * time.Millisecond, 0.8389, 100},
		{"nothing moved", 0, mib8, time.Second, 0, 0},
		{"no time passed", 8 << 20, mib8, 0, 0, 0},
	} {
		gbps, ops := progressRates(tc.bytes, tc.size, tc.d)
		if math.Abs(gbps-tc.gbps) > 5e-4 || math.Abs(ops-tc.ops) > 1e-9 {
			t.Errorf("%s: %.4f Gbps %.3f ops/s, want %.4f Gbps %.3f ops/s", tc.name, gbps, ops, tc.gbps, tc.ops)
		}
		if want := ops * float64(tc.size) * 8 / 1e9; math.Abs(gbps-want) > 1e-9 {
			t.Errorf("%s: %.6f Gbps disagrees with %.3f ops/s (%.6f Gbps)", tc.name, gbps, ops, want)
		}
	}
}
