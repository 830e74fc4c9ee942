package plots

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// constTicks are a chart's own ticks, where the chart puts them.
type constTicks []Tick

func (t constTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, x := range t {
		out = append(out, plot.Tick{Value: x.Value, Label: x.Label})
	}
	return out
}

// labelGap is the least room between two x tick labels on one line.
const labelGap = vg.Length(3)

// staggerLabels moves x tick labels that would touch a neighbour down a
// line, so every swept size stays readable however close two sizes sit
// (12 and 16 MB in the study). Where the ticks fall depends on the drawn
// plot, so it is decided here against the plot's own data area; the
// labels' widths, and so the horizontal layout, do not change.
func staggerLabels(p *plot.Plot, area draw.Canvas, ticks []Tick) []Tick {
	data := p.DataCanvas(area)
	xs := make([]vg.Length, len(ticks))
	ws := make([]vg.Length, len(ticks))
	for i, t := range ticks {
		xs[i] = data.X(p.X.Norm(t.Value))
		ws[i] = p.X.Tick.Label.Width(t.Label)
	}
	rows := labelRows(xs, ws, labelGap)
	out := make([]Tick, len(ticks))
	for i, t := range ticks {
		out[i] = Tick{Value: t.Value, Label: strings.Repeat("\n", rows[i]) + t.Label}
	}
	return out
}

// labelRows puts each centred label (x centres in increasing order, widths
// w) on the first line where it clears the last label by gap; line 0 is
// next to the axis.
func labelRows(xs, ws []vg.Length, gap vg.Length) []int {
	rows := make([]int, len(xs))
	var ends []vg.Length // the right edge of each line's last label
	for i := range xs {
		lo, hi := xs[i]-ws[i]/2, xs[i]+ws[i]/2
		r := 0
		for r < len(ends) && lo < ends[r]+gap {
			r++
		}
		if r == len(ends) {
			ends = append(ends, 0)
		}
		ends[r], rows[i] = hi, r
	}
	return rows
}

// yAxis fits the y axis to figures from lo to hi: a latency spanning ten
// times or more on a log scale, else linear from zero (or from below zero,
// for a difference that can be negative), with latency or plain ticks.
func yAxis(ch *Chart, lo, hi float64, latency bool) {
	label := trimFloat
	if latency {
		label = tickLatency
	}
	switch {
	case latency && lo > 0 && hi/lo >= 10:
		ch.YLog = true
		ch.YMin, ch.YMax = niceFloor(lo/1.5), hi*1.5
		ch.YTicks = logTicks(ch.YMin, ch.YMax, label)
		return
	case lo < 0:
		ch.YMin = lo * 1.12
	default:
		ch.YMin = 0
	}
	ch.YMax = hi * 1.12
	if ch.YMax <= 0 {
		ch.YMax = 1
	}
	ch.YTicks = linearTicks(ch.YMin, ch.YMax, label)
}

// niceFloor rounds down to 1, 2 or 5 times a power of ten.
func niceFloor(v float64) float64 {
	if v <= 0 {
		return v
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v {
			return m * e
		}
	}
	return e
}

// logTicks puts ticks at 1, 2 and 5 times powers of ten in [lo, hi].
func logTicks(lo, hi float64, label func(float64) string) []Tick {
	var ts []Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*0.999 && v <= hi*1.001 {
				ts = append(ts, Tick{Value: v, Label: label(v)})
			}
		}
	}
	return ts
}

// linearTicks puts about five ticks at a 1-2-5 step in [lo, hi].
func linearTicks(lo, hi float64, label func(float64) string) []Tick {
	step := niceFloor((hi - lo) / 5)
	if step <= 0 {
		return nil
	}
	var ts []Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(ts) < 50; v += step {
		l := label(v)
		if v == 0 {
			l = "0"
		}
		ts = append(ts, Tick{Value: v, Label: l})
	}
	return ts
}
