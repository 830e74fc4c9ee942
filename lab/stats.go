package lab

import (
	"fmt"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms record microseconds from 1 µs to one hour with three
// significant figures: a 64 MiB GET on a slow link can take tens of seconds,
// and a value past the top is clamped and counted, never dropped. Every
// latency a record keeps has this geometry, so records merge.
const (
	histLowestUs  = 1
	HistHighestUs = 3600 * 1000 * 1000
	histSigFigs   = 3
)

// NewHistogram is an empty histogram of the records' geometry.
func NewHistogram() *hdr.Histogram {
	h := hdr.New(histLowestUs, HistHighestUs, histSigFigs)
	// Reset writes every count: the pages are faulted in now, at setup,
	// not during the measured window.
	h.Reset()
	return h
}

// RecordUs records a duration in nanoseconds as microseconds, clamped to the
// histogram's range. It reports whether the value had to be clamped.
func RecordUs(h *hdr.Histogram, ns int64) (clamped bool) {
	us := ns / 1000
	if us < histLowestUs {
		us = histLowestUs
	}
	if us > HistHighestUs {
		us, clamped = HistHighestUs, true
	}
	_ = h.RecordValue(us) // in range by construction
	return clamped
}

// Summarize reads the percentiles and the mergeable encoding from h.
func Summarize(h *hdr.Histogram) (LatencySummary, error) {
	s := LatencySummary{Count: h.TotalCount(), SigFigs: histSigFigs}
	if s.Count > 0 {
		s.P50 = float64(h.ValueAtQuantile(50))
		s.P90 = float64(h.ValueAtQuantile(90))
		s.P95 = float64(h.ValueAtQuantile(95))
		s.P99 = float64(h.ValueAtQuantile(99))
		s.P999 = float64(h.ValueAtQuantile(99.9))
		s.Max = float64(h.Max())
		s.Mean = math.Round(h.Mean()*10) / 10
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return s, fmt.Errorf("encode histogram: %w", err)
	}
	s.Histogram = string(enc)
	return s, nil
}

// DecodeHistogram reads a LatencySummary's histogram back, for merging
// repetitions or campaigns.
func DecodeHistogram(s LatencySummary) (*hdr.Histogram, error) {
	if s.Histogram == "" {
		return nil, fmt.Errorf("no histogram stored")
	}
	h, err := hdr.Decode([]byte(s.Histogram))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// MergeSummaries merges the histograms of several summaries into one
// summary, as if one run had recorded them all.
func MergeSummaries(ss ...LatencySummary) (LatencySummary, error) {
	total := NewHistogram()
	for i, s := range ss {
		if s.Count == 0 {
			continue
		}
		h, err := DecodeHistogram(s)
		if err != nil {
			return LatencySummary{}, fmt.Errorf("summary %d: %w", i, err)
		}
		if dropped := total.Merge(h); dropped > 0 {
			return LatencySummary{}, fmt.Errorf("summary %d: %d values outside the histogram range", i, dropped)
		}
	}
	return Summarize(total)
}

// Per-second latency is kept in a small log histogram per second:
// LatBuckets buckets from 1 µs to an hour, each ~9% wide, so a second's
// p99 (SecondSample.P99) is within ±5%. The window's own percentiles come
// from the HDR histograms.
const LatBuckets = 256

var latStep = math.Log(HistHighestUs) / LatBuckets

// LatBucket is the per-second bucket of a latency in microseconds.
func LatBucket(us int64) int {
	if us <= 1 {
		return 0
	}
	return min(int(math.Log(float64(us))/latStep), LatBuckets-1)
}

// LatBucketValue is a bucket's geometric middle, in microseconds.
func LatBucketValue(i int) float64 { return math.Exp((float64(i) + 0.5) * latStep) }
