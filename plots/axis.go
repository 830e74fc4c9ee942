package plots

import (
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
