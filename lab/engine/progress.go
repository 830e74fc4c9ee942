package engine

import (
	"time"

	"github.com/linerate/linerate/lab"
)

// progressRates turns one progress interval into its line's figures. Both
// come from the same bytes and the same time: ops are the bytes over the
// value size (every request a progress line counts carries one value), so a
// line's Gbps and ops/s always agree, whatever the interval's length.
func progressRates(bytes uint64, valueSize lab.Size, d time.Duration) (gbps, opsPerSec float64) {
	if d <= 0 || valueSize <= 0 {
		return 0, 0
	}
	sec := d.Seconds()
	return float64(bytes) * 8 / 1e9 / sec, float64(bytes) / float64(valueSize) / sec
}
