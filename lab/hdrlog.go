package lab

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// HdrHistogram's own text formats, written from what a record keeps, so
// HdrHistogram's plotters and log processors read a run without linerate:
//
//   - a percentile distribution (.hgrm), as Java's
//     AbstractHistogram.outputPercentileDistribution prints it, from the
//     window's HDR histogram (latency_us.histogram);
//   - an interval log (.hlog), as Java's HistogramLogWriter writes it (log
//     format 1.3, V2 compressed histograms), one interval per second of the
//     measured window, from the per-second histograms (series[].histogram).
//
// Histograms hold microseconds. Printed values are milliseconds: the
// output value unit ratio is 1000, as HdrHistogram's tools take it.

// HDRValueUnitRatio turns the histograms' microseconds into the
// milliseconds the files print (HdrHistogram's "output value unit ratio").
const HDRValueUnitRatio = 1000.0

// hdrTicksPerHalfDistance is the percentile rows' density, HdrHistogram's
// customary 5.
const hdrTicksPerHalfDistance = 5

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

// WritePercentiles prints s's histogram as HdrHistogram's percentile
// distribution text: the Value/Percentile/TotalCount/1/(1-Percentile)
// table (values in ms, as many decimals as the histogram's significant
// figures) and the Mean/StdDeviation, Max/Total count, Buckets/SubBuckets
// footer.
func WritePercentiles(w io.Writer, s LatencySummary) error {
	h, err := DecodeHistogram(s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	snap := h.Export()
	sf := snap.SignificantFigures
	row := fmt.Sprintf("%%12.%df %%2.12f %%10d %%14.2f\n", sf)
	last := fmt.Sprintf("%%12.%df %%2.12f %%10d\n", sf)
	for _, br := range h.CumulativeDistributionWithTicks(hdrTicksPerHalfDistance) {
		v, p := float64(br.ValueAt)/HDRValueUnitRatio, br.Quantile/100
		if br.Quantile == 100 {
			fmt.Fprintf(&b, last, v, p, br.Count)
			continue
		}
		fmt.Fprintf(&b, row, v, p, br.Count, 1/(1-p))
	}
	buckets, subBuckets := hdrGeometry(snap.LowestTrackableValue, snap.HighestTrackableValue, sf)
	fmt.Fprintf(&b, "#[Mean    = %12.*f, StdDeviation   = %12.*f]\n", int(sf), h.Mean()/HDRValueUnitRatio, int(sf), h.StdDev()/HDRValueUnitRatio)
	fmt.Fprintf(&b, "#[Max     = %12.*f, Total count    = %12d]\n", int(sf), float64(h.Max())/HDRValueUnitRatio, h.TotalCount())
	fmt.Fprintf(&b, "#[Buckets = %12d, SubBuckets     = %12d]\n", buckets, subBuckets)
	_, err = w.Write(b.Bytes())
	return err
}

// hdrGeometry is an HDR histogram's bucket and sub-bucket counts, which the
// .hgrm footer states: sub-buckets are the power of two that holds
// 2·10^sf; buckets double from there until the highest value fits.
func hdrGeometry(lowest, highest, sf int64) (buckets, subBuckets int64) {
	subBuckets = int64(1) << int(math.Ceil(math.Log2(2*math.Pow10(int(sf)))))
	unit := int(math.Floor(math.Log2(float64(max(lowest, 1)))))
	untrackable := subBuckets << unit
	buckets = 1
	for untrackable <= highest {
		if untrackable > math.MaxInt64/2 {
			return buckets + 1, subBuckets
		}
		untrackable <<= 1
		buckets++
	}
	return buckets, subBuckets
}

// hdrLogFormatVersion is the interval log format HistogramLogWriter writes.
const hdrLogFormatVersion = "1.3"

// WriteIntervalLog writes op's per-second histograms as an HdrHistogram
// interval log: StartTime and BaseTime are the measured window's start, each
// line "Tag=OP,start,length,max,histogram" with start and length in seconds
// from it, max in ms. Every second of the window is a line, an empty one
// too; the last is as long as the part measured. It needs a record that
// kept per-second histograms (window.start and series[].histogram).
func WriteIntervalLog(w io.Writer, r *Result, op Op) error {
	o := r.Ops[op]
	if o == nil {
		return fmt.Errorf("interval log: the record has no %s figures", op)
	}
	if r.Window.Start == nil || !hasSecondHistograms(o) {
		return fmt.Errorf("interval log: the record keeps no per-second %s histograms (written by linerate before it kept them)", op)
	}
	start := r.Window.Start.UTC()
	ms := start.UnixMilli()
	var b bytes.Buffer
	fmt.Fprintf(&b, "#[linerate %s, run %s: %s latency, first byte sent to last byte received, per second of the measured window]\n", r.Linerate.Version, r.RunID, op)
	fmt.Fprintf(&b, "#[Histograms in microseconds (output value unit ratio 1000 for ms); per-second values within ±%.1f%%, counts exact]\n", SecondHistogramError*100)
	fmt.Fprintf(&b, "#[Histogram log format version %s]\n", hdrLogFormatVersion)
	fmt.Fprintf(&b, "#[StartTime: %.3f (seconds since epoch), %s]\n", float64(ms)/1000, start.Format("Mon Jan 02 15:04:05 MST 2006"))
	fmt.Fprintf(&b, "#[BaseTime: %.3f (seconds since epoch)]\n", float64(ms)/1000)
	b.WriteString("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
	empty, err := emptyHistogram()
	if err != nil {
		return err
	}
	measured := r.Window.Measured.D()
	for _, s := range o.Series {
		span := min(measured-time.Duration(s.Second)*time.Second, time.Second)
		if span <= 0 && s.Ops == 0 {
			continue // past the end of a window cut short
		}
		enc, maxMs := empty, 0.0
		if s.Histogram != "" {
			h, err := hdr.Decode([]byte(s.Histogram))
			if err != nil {
				return fmt.Errorf("interval log: %s second %d: decode histogram: %w", op, s.Second, err)
			}
			enc, maxMs = s.Histogram, float64(h.Max())/HDRValueUnitRatio
		}
		fmt.Fprintf(&b, "Tag=%s,%.3f,%.3f,%.3f,%s\n", op, float64(s.Second), max(span, 0).Seconds(), maxMs, enc)
	}
	_, err = w.Write(b.Bytes())
	return err
}

func hasSecondHistograms(o *OpResult) bool {
	for _, s := range o.Series {
		if s.Histogram != "" {
			return true
		}
	}
	return false
}

func emptyHistogram() (string, error) {
	enc, err := hdr.New(histLowestUs, HistHighestUs, histSigFigs).Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode empty histogram: %w", err)
	}
	return string(enc), nil
}

// HDRFile is one HdrHistogram file of a record: Name is "<OP>.hgrm" (the
// window's percentile distribution) or "<OP>.hlog" (its interval log).
type HDRFile struct {
	Name string
	Data []byte
}

// HDR file name extensions.
const (
	HgrmExt = ".hgrm"
	HlogExt = ".hlog"
)

// HDRFiles renders every HdrHistogram file a record supports, ops in
// lab.AllOps order: an op with no completed request has none, and a record
// without per-second histograms has no interval logs.
func HDRFiles(r *Result) ([]HDRFile, error) {
	var out []HDRFile
	for _, op := range AllOps {
		o := r.Ops[op]
		if o == nil || o.Latency.Count == 0 || o.Latency.Histogram == "" {
			continue
		}
		var b bytes.Buffer
		if err := WritePercentiles(&b, o.Latency); err != nil {
			return nil, fmt.Errorf("%s percentiles: %w", op, err)
		}
		out = append(out, HDRFile{Name: string(op) + HgrmExt, Data: b.Bytes()})
		if r.Window.Start == nil || !hasSecondHistograms(o) {
			continue
		}
		var l bytes.Buffer
		if err := WriteIntervalLog(&l, r, op); err != nil {
			return nil, err
		}
		out = append(out, HDRFile{Name: string(op) + HlogExt, Data: l.Bytes()})
	}
	return out, nil
}
