package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/stats"
)

// sizeLabel prints a value size as the study does, with a space: 8 MiB, 12 MB.
func sizeLabel(s lab.Size) string {
	t := s.String()
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return t
	}
	return t[:i] + " " + t[i:]
}

// formatGbps prints bandwidth as the study's tables do (whole Gbps), with
// more digits for the small figures of loopback runs.
func formatGbps(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// formatLatency prints milliseconds as the study does: 2.2 ms, 13 ms,
// 948 ms, 1.02 s.
func formatLatency(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.3g s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2g ms", ms)
	case ms >= 0.01:
		return fmt.Sprintf("%.0f µs", ms*1000)
	case ms > 0:
		return fmt.Sprintf("%.2g µs", ms*1000)
	}
	return "0"
}

// formatCPUPerGB prints CPU-seconds per GB with two significant digits.
func formatCPUPerGB(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// formatFigure prints a metric's figure as the tables do.
func formatFigure(metric string, v float64) string {
	switch {
	case metric == MetricGbps:
		return formatGbps(v)
	case metric == MetricServerCPUPerGB:
		return formatCPUPerGB(v)
	case metric == MetricProbeAdded && v < 0:
		return "−" + formatLatency(-v)
	case metric == MetricProbeAdded:
		return "+" + formatLatency(v)
	case metric == MetricMemoryOverhead:
		return trimFloat(v)
	case isLatency(metric):
		return formatLatency(v)
	}
	return trimFloat(v)
}

// cellText is one record's figure for the report's cell list; "–" when
// the record does not hold it.
func cellText(r *sweeps.CellRecord, metric string) string {
	v, ok := sweeps.CellFigure(r, metric)
	if !ok {
		return cellMissing
	}
	return formatFigure(metric, v)
}

// tickLatency is formatLatency for axis ticks: no trailing noise.
func tickLatency(ms float64) string {
	switch {
	case ms >= 1000:
		return trimFloat(ms/1000) + " s"
	case ms >= 1:
		return trimFloat(ms) + " ms"
	}
	return trimFloat(ms*1000) + " µs"
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.ContainsAny(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

// palette is Okabe–Ito's colour-blind-safe set (yellow dropped: unreadable
// on white), then greys. A version's colour is its index in the sorted
// version list, so it is the same in every chart of a campaign.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x88, 0x88, 0x88, 0xff}, // grey
}

// PaletteColor is the colour of a version index.
func PaletteColor(i int) color.RGBA {
	if i < 0 {
		return color.RGBA{0x55, 0x55, 0x55, 0xff}
	}
	return palette[i%len(palette)]
}

func colorHex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// median is sweeps/stats' median: the one the comparisons use.
var median = stats.Median

func minMax(xs []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}
