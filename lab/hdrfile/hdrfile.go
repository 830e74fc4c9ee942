// Package hdrfile writes a record's latency in HdrHistogram's own file
// formats through hdrhistogram-go's writers, so HdrHistogram's plotters and
// log processors read a run without linerate:
//
//   - a percentile distribution (.hgrm), Histogram.PercentilesPrint, from
//     the window's HDR histogram (latency_us.histogram);
//   - an interval log (.hlog), HistogramLogWriter (log format 1.3, V2
//     compressed histograms), one interval per second of the measured
//     window, from the per-second histograms (series[].histogram).
//
// Histograms hold microseconds. Printed values are milliseconds: the
// output value unit ratio is 1000, as HdrHistogram's tools take it.
package hdrfile

import (
	"bytes"
	"fmt"
	"io"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
)

// ValueUnitRatio turns the histograms' microseconds into the milliseconds
// the files print (HdrHistogram's "output value unit ratio").
const ValueUnitRatio = 1000.0

// ticksPerHalfDistance is the percentile rows' density, HdrHistogram's
// customary 5.
const ticksPerHalfDistance = 5

// File extensions.
const (
	HgrmExt = ".hgrm"
	HlogExt = ".hlog"
)

// File is one HdrHistogram file of a record: Name is "<OP>.hgrm" (the
// window's percentile distribution) or "<OP>.hlog" (its interval log).
type File struct {
	Name string
	Data []byte
}

// Files renders every HdrHistogram file a record supports, ops in
// lab.AllOps order: an op with no completed request has none, and a record
// without per-second histograms has no interval logs.
func Files(r *lab.Result) ([]File, error) {
	var out []File
	for _, op := range lab.AllOps {
		o := r.Ops[op]
		if o == nil || o.Latency.Count == 0 || o.Latency.Histogram == "" {
			continue
		}
		var b bytes.Buffer
		if err := WritePercentiles(&b, o.Latency); err != nil {
			return nil, fmt.Errorf("%s percentiles: %w", op, err)
		}
		out = append(out, File{Name: string(op) + HgrmExt, Data: b.Bytes()})
		if r.Window.Start == nil || !hasSecondHistograms(o) {
			continue
		}
		var l bytes.Buffer
		if err := WriteIntervalLog(&l, r, op); err != nil {
			return nil, err
		}
		out = append(out, File{Name: string(op) + HlogExt, Data: l.Bytes()})
	}
	return out, nil
}

// WritePercentiles prints s's histogram as HdrHistogram's percentile
// distribution: the Value/Percentile/TotalCount/1/(1-Percentile) table in
// ms and the Mean/StdDeviation, Max/Total count, Buckets/SubBuckets footer.
func WritePercentiles(w io.Writer, s lab.LatencySummary) error {
	h, err := lab.DecodeHistogram(s)
	if err != nil {
		return err
	}
	_, err = h.PercentilesPrint(w, ticksPerHalfDistance, ValueUnitRatio)
	return err
}

// WriteIntervalLog writes op's per-second histograms as an HdrHistogram
// interval log: StartTime and BaseTime are the measured window's start,
// each interval "Tag=OP,start,length,max,histogram" with start and length
// in seconds from it; max is the writer's own (its ratio 1e6 assumes ns
// histograms, so of these µs ones it reads in seconds). Every second of the window is an
// interval, an empty one too; the last is as long as the part measured.
// It needs a record that kept per-second histograms (window.start and
// series[].histogram).
func WriteIntervalLog(w io.Writer, r *lab.Result, op lab.Op) error {
	o := r.Ops[op]
	if o == nil {
		return fmt.Errorf("interval log: the record has no %s figures", op)
	}
	if r.Window.Start == nil || !hasSecondHistograms(o) {
		return fmt.Errorf("interval log: the record keeps no per-second %s histograms (written by linerate before it kept them)", op)
	}
	var b bytes.Buffer
	lw := hdr.NewHistogramLogWriter(&b)
	start := r.Window.Start.UnixMilli()
	if err := writeLogHeader(lw, r, op, start); err != nil {
		return err
	}
	measured := r.Window.Measured.D()
	for _, s := range o.Series {
		span := min(measured-time.Duration(s.Second)*time.Second, time.Second)
		if span <= 0 && s.Ops == 0 {
			continue // past the end of a window cut short
		}
		h := lab.NewHistogram()
		if s.Histogram != "" {
			var err error
			if h, err = hdr.Decode([]byte(s.Histogram)); err != nil {
				return fmt.Errorf("interval log: %s second %d: decode histogram: %w", op, s.Second, err)
			}
		}
		from := start + int64(s.Second)*1000
		h.SetTag(string(op))
		h.SetStartTimeMs(from)
		h.SetEndTimeMs(from + max(span, 0).Milliseconds())
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return fmt.Errorf("interval log: %s second %d: %w", op, s.Second, err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeLogHeader is the interval log's comments, version, start and base
// time and legend, as HistogramLogWriter writes them.
func writeLogHeader(lw *hdr.HistogramLogWriter, r *lab.Result, op lab.Op, startMs int64) error {
	lw.SetBaseTime(startMs)
	for _, step := range []func() error{
		func() error {
			return lw.OutputComment(fmt.Sprintf("[linerate %s, run %s: %s latency, first byte sent to last byte received, per second of the measured window]", r.Linerate.Version, r.RunID, op))
		},
		func() error {
			return lw.OutputComment(fmt.Sprintf("[Histograms in microseconds (output value unit ratio 1000 for ms); Interval_Max in seconds; per-second values within ±%.1f%%, counts exact]", lab.SecondHistogramError*100))
		},
		lw.OutputLogFormatVersion,
		func() error { return lw.OutputStartTime(startMs) },
		func() error { return lw.OutputBaseTime(startMs) },
		lw.OutputLegend,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func hasSecondHistograms(o *lab.OpResult) bool {
	for _, s := range o.Series {
		if s.Histogram != "" {
			return true
		}
	}
	return false
}
