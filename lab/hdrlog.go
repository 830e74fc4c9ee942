package lab

import (
	"fmt"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// A record's HDR histograms: the window's (latency_us.histogram) and one
// per second (series[].histogram). lab/hdrfile writes them as
// HdrHistogram's own files.

// Per-second histograms are rebuilt from the engine's per-second latency
// buckets (LatBuckets log buckets, ~9% wide): each latency counts at its
// bucket's geometric middle, so a value is within ±SecondHistogramError of
// the measured one; the counts are exact. Full HDR histograms per second
// and worker would cost ~190 KB each, and the hot path allocates nothing.
var SecondHistogramError = math.Exp(latStep/2) - 1

// EncodeSecond encodes one second's bucket counts as an HDR histogram
// (base64 V2 compressed) of the record's geometry, reusing h.
func EncodeSecond(h *hdr.Histogram, counts []uint64) (string, error) {
	h.Reset()
	for b, n := range counts {
		if n > 0 {
			h.RecordValues(int64(math.Round(LatBucketValue(b))), int64(n))
		}
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode per-second histogram: %w", err)
	}
	return string(enc), nil
}

// ValueAt reads any percentile (0-100) from the stored histogram, in
// microseconds: the summary keeps p50 to p99.9, the histogram all of them.
func (s LatencySummary) ValueAt(percentile float64) (float64, error) {
	h, err := DecodeHistogram(s)
	if err != nil {
		return 0, err
	}
	return float64(h.ValueAtQuantile(percentile)), nil
}
