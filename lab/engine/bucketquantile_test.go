package engine

import (
	"math"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
)

// The series' per-second p99 and the .hlog's per-second histogram hold
// the same buckets; they must give the same percentile for every count,
// including the ones where a rounded-up rank and HdrHistogram's rounded
// rank differ (160 latencies: rank 159 against 158).
func TestBucketQuantileMatchesHdrHistogram(t *testing.T) {
	counts := make([]uint64, lab.LatBuckets)
	h := hdr.New(1, lab.HistHighestUs, 3)
	for total := uint64(1); total <= 400; total++ {
		clear(counts)
		h.Reset()
		for i := uint64(0); i < total; i++ {
			b := lab.LatBucket(int64(100 + 37*i)) // spread over many buckets
			counts[b]++
			h.RecordValue(int64(math.Round(lab.LatBucketValue(b))))
		}
		for _, pct := range []uint64{50, 95, 99} {
			got := bucketQuantile(counts, total, pct)
			want := float64(h.ValueAtQuantile(float64(pct)))
			if math.Abs(got-want) > want*0.001+1 {
				t.Fatalf("%d latencies, p%d: buckets say %.0f us, HdrHistogram %.0f us", total, pct, got, want)
			}
		}
	}
}
