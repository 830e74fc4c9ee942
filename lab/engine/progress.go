package engine

import "time"

// progressRates turns one progress interval into its line's figures,
// both over the same time, so with one value size a line's Gbps and ops/s
// always agree, whatever the interval's length (with a mix, each request
// carries its own size).
func progressRates(bytes, ops uint64, d time.Duration) (gbps, opsPerSec float64) {
	if d <= 0 {
		return 0, 0
	}
	sec := d.Seconds()
	return float64(bytes) * 8 / 1e9 / sec, float64(ops) / sec
}
