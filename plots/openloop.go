package plots

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
	"github.com/linerate/linerate/sweeps"
)

// Open loop: latency against offered load, from a ramp's steps
// or from cells that list rates, one line per version with its knee; and a
// value-size mix's figures per size class.

// MarkKnee flags where a version stopped keeping up (pace.Knee).
const MarkKnee MarkKind = "knee"

// loadGroup is one load chart: cells that differ only in version and in
// offered load.
type loadGroup struct {
	Name   string // the cell key without the rate segment: GET/1MiB
	Gbps   bool   // offered load in Gbit/s of payload (the rate was given in bits)
	Series []*loadSeries
	first  int // the group's first cell, for ordering
}

// loadSeries is one version's points, by offered load, and its knee.
type loadSeries struct {
	Version string
	Color   int
	Points  []loadPoint
	Knee    *lab.Knee
}

// loadPoint is one offered load: a ramp step, or a cell of a listed rate,
// with the median over repetitions.
type loadPoint struct {
	Offered  float64 // requests/s
	X        float64 // on the chart: requests/s or Gbit/s
	Achieved float64 // requests/s
	P99      float64 // ms, from the intended send time; NaN when none completed
	Dropped  uint64
	Slope    float64 // the queue's growth (lateness_slope), s/s
}

// loadGroups reads every paced cell of the campaign into load groups:
// each ramp cell's steps, and cells of --rate by their rate.
func loadGroups(c *Campaign) []*loadGroup {
	type vk struct{ group, version string }
	byKey := map[string]*loadGroup{}
	reps := map[vk]map[int][]*sweeps.CellRecord{} // rate cells: offered (per mille) -> repetitions
	ramps := map[vk][]*sweeps.CellRecord{}
	for _, r := range c.Run.Sorted() {
		if r.Status != sweeps.StatusDone || r.Result == nil || r.Result.OpenLoop == nil {
			continue
		}
		w := r.Workload
		name := stripRate(r.Key)
		g := byKey[name]
		if g == nil {
			g = &loadGroup{Name: name, first: r.Index, Gbps: w.Rate.IsBits() || w.Ramp.From.IsBits()}
			byKey[name] = g
		}
		k := vk{name, r.Version.Segment}
		if len(r.Result.Steps) > 0 {
			ramps[k] = append(ramps[k], r)
			continue
		}
		if reps[k] == nil {
			reps[k] = map[int][]*sweeps.CellRecord{}
		}
		o := int(math.Round(r.Result.OpenLoop.Offered * 1000))
		reps[k][o] = append(reps[k][o], r)
	}
	var out []*loadGroup
	for _, g := range byKey {
		for _, v := range c.Order {
			k := vk{g.Name, v}
			var pts []loadPoint
			switch {
			case len(ramps[k]) > 0:
				pts = rampPoints(ramps[k])
			case len(reps[k]) > 0:
				pts = ratePoints(reps[k])
			default:
				continue
			}
			mean := meanSize(c, g.Name)
			for i := range pts {
				pts[i].X = pts[i].Offered
				if g.Gbps {
					pts[i].X = pts[i].Offered * mean * 8 / 1e9
				}
			}
			s := &loadSeries{Version: v, Color: versionColor(c, v), Points: pts, Knee: pace.Knee(asSteps(pts))}
			g.Series = append(g.Series, s)
		}
		// One offered load is no curve: a single rate's cells are on the
		// value-size charts.
		for _, s := range g.Series {
			if len(s.Points) > 1 {
				out = append(out, g)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out
}

// stripRate is a cell key without its rate segment: the cells of one load
// chart differ in it alone.
func stripRate(key string) string {
	var keep []string
	for _, s := range strings.Split(key, "/") {
		if !strings.HasPrefix(s, "rate") {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "/")
}

// meanSize is the mean value size of the group's cells (a bit rate's
// conversion), from any cell of it.
func meanSize(c *Campaign, group string) float64 {
	for _, r := range c.Run.Sorted() {
		if stripRate(r.Key) == group {
			return r.Workload.MeanValueBytes()
		}
	}
	return 0
}

// rampPoints is a ramp's steps, each the median over repetitions.
func rampPoints(recs []*sweeps.CellRecord) []loadPoint {
	n := len(recs[0].Result.Steps)
	pts := make([]loadPoint, n)
	for i := range pts {
		var p99, ach, slope []float64
		var dropped []float64
		for _, r := range recs {
			if i >= len(r.Result.Steps) {
				continue
			}
			s := r.Result.Steps[i]
			pts[i].Offered = s.Offered
			ach = append(ach, s.Achieved)
			slope = append(slope, s.LatenessSlope)
			dropped = append(dropped, float64(s.Dropped))
			if s.Latency != nil {
				p99 = append(p99, s.Latency.P99/1000)
			}
		}
		pts[i].Achieved, pts[i].P99, pts[i].Dropped, pts[i].Slope = median(ach), median(p99), uint64(median(dropped)), median(slope)
	}
	return pts
}

// ratePoints is one point per listed rate, ascending, each the median
// over its repetitions: p99 the worst op's, as sweeps.CellFigure reads it.
func ratePoints(byRate map[int][]*sweeps.CellRecord) []loadPoint {
	var pts []loadPoint
	for _, recs := range byRate {
		var p99, ach, dropped, slope []float64
		p := loadPoint{Offered: recs[0].Result.OpenLoop.Offered}
		for _, r := range recs {
			ach = append(ach, r.Result.OpenLoop.Achieved)
			slope = append(slope, r.Result.OpenLoop.LatenessSlope)
			dropped = append(dropped, float64(r.Result.OpenLoop.Dropped))
			if v, ok := sweeps.CellFigure(r, sweeps.MetricP99); ok {
				p99 = append(p99, v)
			}
		}
		p.Achieved, p.P99, p.Dropped, p.Slope = median(ach), median(p99), uint64(median(dropped)), median(slope)
		pts = append(pts, p)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Offered < pts[j].Offered })
	return pts
}

// asSteps puts points in the form pace.Knee reads: the knee of a list of
// rates follows the ramp's rule, the lowest rate as the first step.
func asSteps(pts []loadPoint) []lab.StepResult {
	out := make([]lab.StepResult, len(pts))
	for i, p := range pts {
		out[i] = lab.StepResult{Step: i, Offered: p.Offered, Achieved: p.Achieved, LatenessSlope: p.Slope}
		if !math.IsNaN(p.P99) {
			out[i].Latency = &lab.StepLatency{Count: 1, P99: p.P99 * 1000}
		}
	}
	return out
}

// loadChart is one group's p99 against offered load.
func loadChart(c *Campaign, g *loadGroup) *Chart {
	ch := &Chart{Kind: "load", Name: fileSafe(g.Name) + "-load-p99", Width: 8, Height: 5,
		Title:  fmt.Sprintf("%s p99 latency vs offered load (%s)", g.Name, c.Name),
		YLabel: "p99 latency from the intended send", XLabel: "offered load, requests/s"}
	if g.Gbps {
		ch.XLabel = "offered load, payload Gbps"
	}
	lo, hi, xhi := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range g.Series {
		ln := Line{Label: s.Version, Color: s.Color, Glyph: s.Color}
		for _, p := range s.Points {
			ln.Points = append(ln.Points, XY{p.X, p.P99})
			ln.Band = append(ln.Band, Range{X: p.X, Lo: math.NaN(), Hi: math.NaN()})
			xhi = math.Max(xhi, p.X)
			if !math.IsNaN(p.P99) {
				lo, hi = math.Min(lo, p.P99), math.Max(hi, p.P99)
			}
		}
		ch.Lines = append(ch.Lines, ln)
		if k := s.Knee; k != nil && k.Step < len(s.Points) {
			p := s.Points[k.Step]
			ch.Marks = append(ch.Marks, Mark{Kind: MarkKnee, Color: s.Color, X: p.X, Y: p.P99,
				What: fmt.Sprintf("%s knee at %s (%s)", s.Version, trimFloat(p.X), kneeWhy(k))})
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	yAxis(ch, lo, hi, true)
	ch.XMin, ch.XMax = 0, math.Max(xhi*1.05, 1)
	ch.XTicks = linearTicks(0, ch.XMax, trimFloat)
	ch.Caption = append(c.Setup().Caption(),
		"Open loop: p99 from each request's intended send time (queueing included). Marked: the knee, the first load whose p99 is more than "+
			trimFloat(pace.KneeLatencyFactor)+"x the floor's (the lowest p99 of the lightest third of loads), whose queue grew (lateness slope above "+
			trimFloat(lab.MaxLatenessSlope)+" s/s) or whose achieved rate falls more than "+
			trimFloat(pace.KneeShortfall*100)+"% below the offered rate.")
	return ch
}

func kneeWhy(k *lab.Knee) string {
	var why []string
	if k.Latency {
		why = append(why, fmt.Sprintf("p99 %.3gx", k.P99Ratio))
	}
	if k.Median {
		why = append(why, fmt.Sprintf("p50 %.3gx", k.P50Ratio))
	}
	if k.Queue {
		why = append(why, fmt.Sprintf("queue +%.3g s/s", k.LatenessSlope))
	}
	if k.Rate {
		why = append(why, fmt.Sprintf("achieved %.0f%%", k.AchievedRatio*100))
	}
	return strings.Join(why, ", ")
}

// loadTables is each load group's table: a row per offered load, a column
// per version, its p99 and the achieved rate; the knee marked.
func loadTables(c *Campaign) []TableGroup {
	var out []TableGroup
	for _, g := range loadGroups(c) {
		unit := "requests/s"
		if g.Gbps {
			unit = "Gbps"
		}
		t := Table{Group: g.Name, Heading: g.Name + ": p99 latency from the intended send (achieved requests/s) by offered load",
			Columns: []string{"Offered, " + unit}}
		rows := map[string]int{}
		for _, s := range g.Series {
			t.Columns = append(t.Columns, s.Version)
		}
		for si, s := range g.Series {
			for i, p := range s.Points {
				label := trimFloat(p.X)
				r, ok := rows[label]
				if !ok {
					r = len(t.Rows)
					rows[label] = r
					t.Rows = append(t.Rows, TableRow{Label: label, Cells: make([]string, len(g.Series))})
				}
				cell := cellMissing
				if !math.IsNaN(p.P99) {
					cell = fmt.Sprintf("%s (%s)", formatLatency(p.P99), trimFloat(p.Achieved))
				}
				if p.Dropped > 0 {
					cell += fmt.Sprintf(" %d dropped", p.Dropped)
				}
				if s.Knee != nil && s.Knee.Step == i {
					cell += " knee"
				}
				t.Rows[r].Cells[si] = cell
			}
		}
		for _, r := range t.Rows {
			for i := range r.Cells {
				if r.Cells[i] == "" {
					r.Cells[i] = cellMissing
				}
			}
		}
		out = append(out, TableGroup{Name: g.Name + " against offered load",
			Description: "Open loop: each offered load's p99 latency from the intended send time, and the rate achieved; knee: where the version stopped keeping up.",
			Tables:      []Table{t}})
	}
	return out
}

// mixGroup is the cells of one value-size mix and one op, every version.
type mixGroup struct {
	Name    string // the cell key and op: GET/1MiBw60+16MiBw40
	Op      lab.Op
	Classes []lab.Size
	Series  []*mixSeries
}

type mixSeries struct {
	Version string
	Color   int
	Gbps    []float64 // per class, median over repetitions; NaN when none
	P99     []float64 // ms
}

// mixGroups reads the cells whose value size is a mix.
func mixGroups(c *Campaign) []*mixGroup {
	type gk struct {
		key string
		op  lab.Op
	}
	recs := map[gk]map[string][]*sweeps.CellRecord{}
	var order []gk
	for _, r := range c.Run.Sorted() {
		if r.Status != sweeps.StatusDone || r.Result == nil {
			continue
		}
		for _, op := range lab.AllOps {
			if o := r.Result.Ops[op]; o != nil && len(o.Sizes) > 0 {
				k := gk{r.Key, op}
				if recs[k] == nil {
					recs[k] = map[string][]*sweeps.CellRecord{}
					order = append(order, k)
				}
				recs[k][r.Version.Segment] = append(recs[k][r.Version.Segment], r)
			}
		}
	}
	var out []*mixGroup
	for _, k := range order {
		name := k.key
		if !strings.HasPrefix(name, string(k.op)) {
			name = string(k.op) + " of " + name
		}
		g := &mixGroup{Name: name, Op: k.op}
		for _, v := range c.Order {
			rs := recs[k][v]
			if len(rs) == 0 {
				continue
			}
			sizes := rs[0].Result.Ops[k.op].Sizes
			if g.Classes == nil {
				for _, s := range sizes {
					g.Classes = append(g.Classes, s.Class)
				}
			}
			s := &mixSeries{Version: v, Color: versionColor(c, v)}
			for i := range g.Classes {
				var gbps, p99 []float64
				for _, r := range rs {
					sz := r.Result.Ops[k.op].Sizes
					if i >= len(sz) {
						continue
					}
					gbps = append(gbps, sz[i].Gbps)
					if sz[i].Latency != nil {
						p99 = append(p99, sz[i].Latency.P99/1000)
					}
				}
				s.Gbps, s.P99 = append(s.Gbps, median(gbps)), append(s.P99, median(p99))
			}
			g.Series = append(g.Series, s)
		}
		out = append(out, g)
	}
	return out
}

// mixCharts is a mix's Gbps and p99 per size class, one line per version.
func mixCharts(c *Campaign, g *mixGroup) []*Chart {
	var out []*Chart
	for _, m := range []string{MetricGbps, MetricP99} {
		ch := &Chart{Kind: "mix", Name: fileSafe(g.Name) + "-sizes-" + m, Width: 8, Height: 5, XLabel: "size class (log2 scale)"}
		what := "bandwidth per size class"
		ch.YLabel = "payload Gbps"
		if m == MetricP99 {
			what, ch.YLabel = "p99 latency per size class", "p99 latency"
		}
		ch.Title = fmt.Sprintf("%s %s (%s)", g.Name, what, c.Name)
		for _, s := range g.Classes {
			ch.XTicks = append(ch.XTicks, Tick{Value: log2(s), Label: sizeLabel(s)})
		}
		if n := len(ch.XTicks); n > 0 {
			ch.XMin, ch.XMax = ch.XTicks[0].Value-0.4, ch.XTicks[n-1].Value+0.4
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range g.Series {
			ys := s.Gbps
			if m == MetricP99 {
				ys = s.P99
			}
			ln := Line{Label: s.Version, Color: s.Color, Glyph: s.Color}
			for i, y := range ys {
				ln.Points = append(ln.Points, XY{log2(g.Classes[i]), y})
				ln.Band = append(ln.Band, Range{X: log2(g.Classes[i]), Lo: math.NaN(), Hi: math.NaN()})
				if !math.IsNaN(y) {
					lo, hi = math.Min(lo, y), math.Max(hi, y)
				}
			}
			ch.Lines = append(ch.Lines, ln)
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		yAxis(ch, lo, hi, m == MetricP99)
		ch.Caption = append(c.Setup().Caption(),
			"A mix's requests by size class (each size, or for a range the powers of two), median over repetitions; p99 from a log histogram, within 5%.")
		out = append(out, ch)
	}
	return out
}

// mixTables is each mix's table: a row per size class, a column per
// version, Gbps and p99.
func mixTables(c *Campaign) []TableGroup {
	var out []TableGroup
	for _, g := range mixGroups(c) {
		t := Table{Group: g.Name, Heading: g.Name + ": per size class, payload Gbps / p99 latency", Columns: []string{"Size class"}}
		for _, s := range g.Series {
			t.Columns = append(t.Columns, s.Version)
		}
		for i, class := range g.Classes {
			row := TableRow{Label: sizeLabel(class)}
			for _, s := range g.Series {
				cell := cellMissing
				if !math.IsNaN(s.Gbps[i]) {
					cell = formatGbps(s.Gbps[i])
					if !math.IsNaN(s.P99[i]) {
						cell += " / " + formatLatency(s.P99[i])
					}
				}
				row.Cells = append(row.Cells, cell)
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, TableGroup{Name: g.Name + " per size class",
			Description: "A value-size mix's requests by size class, median over repetitions.", Tables: []Table{t}})
	}
	return out
}
