package plots

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Chart is a chart described as data: what Draw renders and what the
// golden tests compare. Coordinates are data units (x of value-size charts
// is log2 of the size in bytes).
type Chart struct {
	Name    string // file base name, e.g. GET-gbps
	Kind    string // size, soak or cpu: which section of the report
	Title   string
	Caption []string
	XLabel  string
	YLabel  string
	XMin    float64
	XMax    float64
	XTicks  []Tick // nil: gonum's ticker
	YLog    bool
	YMin    float64
	YMax    float64
	YTicks  []Tick
	Lines   []Line
	Marks   []Mark
	Refs    []Ref
	Bars    []Bar // set: a horizontal bar chart (Lines unused)
	Width   float64
	Height  float64 // inches
}

// Tick is one labelled axis tick.
type Tick struct {
	Value float64
	Label string
}

// Line is one series: a version's medians, a soak's per-second figures.
type Line struct {
	Label  string
	Color  int // version index (PaletteColor)
	Glyph  int // marker shape index; -1 for no markers
	Dashed bool
	Points []XY    // Y is NaN where the series has a gap
	Band   []Range // min-max per point; NaN where a point has under two values
}

// XY is one point.
type XY struct{ X, Y float64 }

// Range is a min-max at one x.
type Range struct{ X, Lo, Hi float64 }

// MarkKind is what a flagged point means.
type MarkKind string

const (
	MarkClientLimited MarkKind = "client-limited" // drawn at its value: the client ran out
	MarkFailed        MarkKind = "failed"         // drawn on the floor: no value
	MarkMissing       MarkKind = "missing"        // drawn on the floor: never stored
)

// Mark flags one point.
type Mark struct {
	Kind  MarkKind
	Color int
	X, Y  float64
	What  string // the cell key and version, for the description
}

// Ref is a horizontal reference line.
type Ref struct {
	Label  string
	Y      float64
	Color  int
	Dashed bool
}

// Bar is one horizontal bar.
type Bar struct {
	Label string
	Value float64
	Group string // legend entry; bars of a group share a colour
}

// Metric names for charts and tables (sweeps.Metrics).
const (
	MetricGbps           = sweeps.MetricGbps
	MetricP95            = sweeps.MetricP95
	MetricP99            = sweeps.MetricP99
	MetricP999           = sweeps.MetricP999
	MetricServerCPUPerGB = sweeps.MetricServerCPUPerGB
	MetricProbeP99       = sweeps.MetricProbeP99
	MetricProbeAdded     = sweeps.MetricProbeAdded
	MetricMemoryOverhead = sweeps.MetricMemoryOverhead
)

// sizeMetrics are the value-size charts' and tables' metrics of a group, in
// order: Gbps, the campaign's latency percentiles, then server CPU per GB
// and memory per key over the value size, each when any of the group's
// cells holds it, and the probe's p99 and added p99 when any has a probe
// (--probe).
func sizeMetrics(c *Campaign, g *Group) []string {
	ms := append([]string{MetricGbps}, c.percentiles()...)
	for _, m := range []string{MetricServerCPUPerGB, MetricMemoryOverhead} {
		if g.measured(m) {
			ms = append(ms, m)
		}
	}
	if g.measured(MetricProbeP99) {
		ms = append(ms, MetricProbeP99, MetricProbeAdded)
	}
	return ms
}

// measured says whether any cell of the group holds the metric.
func (g *Group) measured(metric string) bool {
	for _, s := range g.Series {
		for _, p := range s.Points {
			if len(p.values(metric)) > 0 {
				return true
			}
		}
	}
	return false
}

// Charts describes every chart of a campaign: per group Gbps, each latency
// percentile, server CPU per GB and the probe's p99 vs value size; p99 vs
// offered load for paced cells (a ramp's steps, or listed rates), with
// each version's knee; a mix's figures per size class; one soak chart pair
// per soak record, one CPU chart per cell that has thread metrics.
func Charts(c *Campaign) []*Chart {
	var out []*Chart
	for _, g := range c.Groups {
		for _, m := range sizeMetrics(c, g) {
			out = append(out, sizeChart(c, g, m))
		}
	}
	for _, g := range loadGroups(c) {
		out = append(out, loadChart(c, g))
	}
	for _, g := range mixGroups(c) {
		out = append(out, mixCharts(c, g)...)
	}
	for _, s := range c.Soaks {
		out = append(out, soakCharts(c, s)...)
	}
	for _, r := range c.Run.Sorted() {
		if ch := cpuChart(c, r); ch != nil {
			out = append(out, ch)
		}
	}
	return out
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '+', r == '@':
			return r
		}
		return '-'
	}, s)
}

func sizeChart(c *Campaign, g *Group, metric string) *Chart {
	ch := &Chart{Kind: "size", Name: fileSafe(g.Name) + "-" + metric, XLabel: "value size (log2 scale)", Width: 8, Height: 5}
	latency := isLatency(metric)
	what := sizeChartLabels(ch, metric)
	ch.Title = fmt.Sprintf("%s %s vs value size (%s)", g.Name, what, c.Name)
	ch.Caption = c.Setup().Caption()
	for _, s := range g.Sizes {
		ch.XTicks = append(ch.XTicks, Tick{Value: log2(s), Label: g.SizeLabel(s)})
	}
	if n := len(ch.XTicks); n > 0 {
		ch.XMin, ch.XMax = ch.XTicks[0].Value-0.4, ch.XTicks[n-1].Value+0.4
	}
	floors, lo, hi := sizeLines(ch, g, metric)
	if math.IsInf(lo, 1) { // nothing measured at all: an empty frame, marks on the floor
		lo, hi = 1, 10
	}
	if y, label := c.linkCeiling(g); metric == MetricGbps && y > 0 {
		ch.Refs = append(ch.Refs, Ref{Label: label, Y: y, Color: -1, Dashed: true})
	}
	for _, r := range ch.Refs {
		hi = math.Max(hi, r.Y)
	}
	yAxis(ch, lo, hi, latency)
	floorY := ch.YMax * 0.025
	if ch.YLog {
		floorY = ch.YMin * math.Pow(ch.YMax/ch.YMin, 0.025)
	}
	for _, f := range floors {
		ch.Marks = append(ch.Marks, Mark{Kind: f.kind, Color: f.color, X: f.x, Y: floorY, What: f.what})
	}
	ch.Caption = append(ch.Caption, sizeChartNote(c, ch, metric))
	return ch
}

// sizeChartLabels sets a size chart's kind and y label for metric and
// returns what its title calls the metric.
func sizeChartLabels(ch *Chart, metric string) (what string) {
	what = "bandwidth delivered"
	ch.YLabel = "payload Gbps"
	switch {
	case metric == MetricProbeP99:
		ch.Kind = "probe"
		what, ch.YLabel = "probe p99 beside the load", "probe p99 under load"
	case metric == MetricProbeAdded:
		ch.Kind = "probe"
		what, ch.YLabel = "probe p99 added by the load", "probe p99 under load minus alone"
	case isLatency(metric):
		what = metric + " latency"
		ch.YLabel = metric + " latency"
	case metric == MetricServerCPUPerGB:
		what = "server CPU per GB moved"
		ch.YLabel = "server CPU-seconds per GB"
	case metric == MetricMemoryOverhead:
		what = "memory per key"
		ch.YLabel = "memory per key over the value size, %"
	}
	return what
}

// floorMark is a point with no figure, marked on the chart's floor once
// the y axis is known.
type floorMark struct {
	kind  MarkKind
	color int
	x     float64
	what  string
}

// sizeLines draws one line per version (median, min-max band), marks
// client-limited points, and returns the points without a figure and the
// range of the figures.
func sizeLines(ch *Chart, g *Group, metric string) (floors []floorMark, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	// Floor marks of several versions at one size would hide each other:
	// each version's sit a little apart.
	nudge := func(i int) float64 { return (float64(i) - float64(len(g.Series)-1)/2) * 0.07 }
	for si, s := range g.Series {
		ln := Line{Label: s.Version, Color: s.Color, Glyph: s.Color}
		for _, p := range s.Points {
			x := log2(p.Size)
			vs := p.values(metric)
			y := median(vs)
			ln.Points = append(ln.Points, XY{x, y})
			r := Range{X: x, Lo: math.NaN(), Hi: math.NaN()}
			if len(vs) > 1 {
				r.Lo, r.Hi = minMax(vs)
			}
			ln.Band = append(ln.Band, r)
			if len(vs) > 0 {
				a, b := minMax(vs)
				lo, hi = math.Min(lo, a), math.Max(hi, b)
			}
			what := s.Version + "/" + p.Key
			if p.Key == "" {
				what = s.Version + "/" + g.Name + "@" + p.Size.String()
			}
			switch {
			case len(vs) > 0 && p.OnlyLimited():
				ch.Marks = append(ch.Marks, Mark{Kind: MarkClientLimited, Color: s.Color, X: x, Y: y, What: what})
			case len(vs) > 0:
			case len(p.Failed) > 0 && !p.HasValue():
				floors = append(floors, floorMark{MarkFailed, s.Color, x + nudge(si), what})
			default: // never stored, or stored without this figure
				floors = append(floors, floorMark{MarkMissing, s.Color, x + nudge(si), what})
			}
		}
		ch.Lines = append(ch.Lines, ln)
	}
	return floors, lo, hi
}

// sizeChartNote is the caption's last line: what the line, band and
// marks mean, and what the metric counts.
func sizeChartNote(c *Campaign, ch *Chart, metric string) string {
	note := "Line: median over repetitions; band: min-max."
	if c.Plan != nil && c.Plan.Campaign.Repetitions == 1 {
		note = "Line: one repetition per point (no band)."
	}
	switch metric {
	case MetricProbeP99:
		note = "Probe: small GETs on connections of their own beside the main load (--probe), p99 from their intended send time. " + note
	case MetricProbeAdded:
		note = "Probe: its p99 under the main load minus its p99 alone (in the warmup, before the main load started); 0 where the noise band holds zero (no measurable effect). " + note
	}
	kinds := map[MarkKind]bool{}
	for _, m := range ch.Marks {
		kinds[m.Kind] = true
	}
	if kinds[MarkClientLimited] {
		note += " Ringed: every repetition client-limited (the client's figure, not the server's)."
	}
	if kinds[MarkFailed] || kinds[MarkMissing] {
		note += " Marks on the floor: failed or never measured (a gap in the line)."
	}
	if metric == MetricMemoryOverhead {
		note += " Memory per key: the server's used_memory grown over the keys added (by the prefill, else by the cell), beyond the value size."
	}
	if metric == MetricServerCPUPerGB {
		note += " Server CPU: every server thread's CPU seconds over the measured window (host metrics) per GB of payload moved."
	}
	return note
}

func log2(s lab.Size) float64 { return math.Log2(float64(s)) }

// isLatency says whether a metric is a latency in ms.
func isLatency(metric string) bool {
	return sweeps.LatencyPercentile(metric) > 0 || metric == MetricProbeP99 || metric == MetricProbeAdded
}

func versionColor(c *Campaign, segment string) int {
	for i, v := range c.Versions {
		if v == segment {
			return i
		}
	}
	return -1
}

// soakCharts draws a soak: Gbps and p99 per second against the campaign
// cell's figures. Records written before per-second p99 existed get the
// whole soak's p99 against the cell's, as bars.
func soakCharts(c *Campaign, s *sweeps.SoakRecord) []*Chart {
	setup := c.Setup()
	col := versionColor(c, s.Version.Segment)
	base := "soak-" + fileSafe(strings.ReplaceAll(s.CellID, "/", "_")) + "-" + s.Started.UTC().Format("20060102T150405Z")
	caption := []string{fmt.Sprintf("%s; %s", setup.Hosts, setup.Tuning),
		fmt.Sprintf("%s; soak of %s, started %s", setup.Load, s.Workload.Duration, s.Started.UTC().Format("2006-01-02 15:04 UTC"))}
	gb := &Chart{Kind: "soak", Name: base + "-gbps", Width: 8, Height: 4.5,
		Title:  fmt.Sprintf("Soak %s: Gbps per second (%s)", s.CellID, s.Status),
		XLabel: "second of the measured window", YLabel: "payload Gbps", YMin: 0}
	p99 := &Chart{Kind: "soak", Name: base + "-p99", Width: 8, Height: 3,
		Title:  fmt.Sprintf("Soak %s: p99 over the whole soak vs the campaign cell", s.CellID),
		XLabel: "p99 latency (ms)"}
	ops := soakOps(s)
	hi := 0.0
	maxSec := 1
	var verdicts []string
	for i, op := range ops {
		ln := Line{Label: fmt.Sprintf("%s %s per second", s.Version.Segment, op), Color: col, Glyph: -1, Dashed: i > 0}
		if s.Result != nil && s.Result.Ops[op] != nil {
			for _, smp := range s.Result.Ops[op].Series {
				ln.Points = append(ln.Points, XY{float64(smp.Second), smp.Gbps})
				hi = math.Max(hi, smp.Gbps)
				maxSec = max(maxSec, smp.Second)
			}
		}
		gb.Lines = append(gb.Lines, ln)
		if g, ok := s.Original[op]; ok {
			gb.Refs = append(gb.Refs, Ref{Label: fmt.Sprintf("%s campaign cell %s Gbps", op, formatGbps(g)), Y: g, Color: -1, Dashed: true})
			hi = math.Max(hi, g)
		}
		if d, ok := s.Drift[op]; ok {
			verdicts = append(verdicts, fmt.Sprintf("%s held %s Gbps: %s (first third %.3g, last third %.3g, %+.1f%%)",
				op, formatGbps(s.Held[op]), d.Verdict, d.FirstThird.Mean, d.LastThird.Mean, d.Change*100))
		}
		if orig := c.Run.Cells[s.CellID]; orig != nil && orig.Result != nil && orig.Result.Ops[op] != nil {
			p99.Bars = append(p99.Bars, Bar{Label: fmt.Sprintf("%s campaign cell (%s)", op, orig.Workload.Duration), Value: orig.Result.Ops[op].Latency.P99 / 1000, Group: "campaign cell"})
		}
		if s.Result != nil && s.Result.Ops[op] != nil {
			p99.Bars = append(p99.Bars, Bar{Label: fmt.Sprintf("%s soak (%s)", op, s.Workload.Duration), Value: s.Result.Ops[op].Latency.P99 / 1000, Group: "soak"})
		}
	}
	gb.XMin, gb.XMax = 0, float64(maxSec)
	gb.YMax = math.Max(hi*1.15, 1)
	gb.Caption = append(caption, strings.Join(verdicts, "; "))
	if s.Reason != "" {
		gb.Caption = append(gb.Caption, "reason: "+s.Reason)
	}
	p99.Caption = append(caption, "This record has no per-second latency (written before linerate kept it), so p99 is compared as a whole.")
	p99.Height = 1.8 + 0.3*float64(len(p99.Bars))
	if perSecond := soakP99Chart(c, s, ops, base, caption, col, maxSec); perSecond != nil {
		p99 = perSecond
	}
	return []*Chart{gb, p99}
}

// soakP99Chart is p99 per second over a soak, with the campaign cell's p99
// as a reference line; nil when the record has no per-second p99.
func soakP99Chart(c *Campaign, s *sweeps.SoakRecord, ops []lab.Op, base string, caption []string, col, maxSec int) *Chart {
	if s.Result == nil {
		return nil
	}
	ch := &Chart{Kind: "soak", Name: base + "-p99", Width: 8, Height: 4.5,
		Title:  fmt.Sprintf("Soak %s: p99 per second", s.CellID),
		XLabel: "second of the measured window", YLabel: "p99 latency (ms)", YMin: 0}
	hi, any := 0.0, false
	for i, op := range ops {
		o := s.Result.Ops[op]
		if o == nil {
			continue
		}
		ln := Line{Label: fmt.Sprintf("%s %s p99 per second", s.Version.Segment, op), Color: col, Glyph: -1, Dashed: i > 0}
		for _, smp := range o.Series {
			y := math.NaN() // a second with nothing completed is a gap
			if smp.P99 > 0 {
				y, any = smp.P99/1000, true
				hi = math.Max(hi, y)
			}
			ln.Points = append(ln.Points, XY{float64(smp.Second), y})
		}
		ch.Lines = append(ch.Lines, ln)
		if orig := c.Run.Cells[s.CellID]; orig != nil && orig.Result != nil && orig.Result.Ops[op] != nil {
			ref := orig.Result.Ops[op].Latency.P99 / 1000
			ch.Refs = append(ch.Refs, Ref{Label: fmt.Sprintf("%s campaign cell p99 %.3g ms", op, ref), Y: ref, Color: -1, Dashed: true})
			hi = math.Max(hi, ref)
		}
	}
	if !any {
		return nil
	}
	ch.XMin, ch.XMax = 0, float64(maxSec)
	ch.YMax = math.Max(hi*1.15, 0.001)
	ch.Caption = append(caption, "Per-second p99 from a 256-bucket log histogram (within ±5%); the campaign cell's from its HDR histogram.")
	return ch
}

func soakOps(s *sweeps.SoakRecord) []lab.Op {
	seen := map[lab.Op]bool{}
	if s.Result != nil {
		for op := range s.Result.Ops {
			seen[op] = true
		}
	}
	for op := range s.Original {
		seen[op] = true
	}
	var ops []lab.Op
	for op := range seen {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	return ops
}

// Bar groups of CPU charts.
const (
	GroupServerMain  = "server main thread"
	GroupServerIO    = "server I/O threads"
	GroupServerOther = "other server threads"
	GroupClient      = "client workers"
)

// cpuChart draws one cell's threads: the server's main thread, each I/O
// thread, other busy server threads (a cluster's: every node's, labelled
// by node), and the client's workers, as percent of one CPU with the
// saturation threshold marked. Nil when the cell has no thread figures.
func cpuChart(c *Campaign, r *sweeps.CellRecord) *Chart {
	var bars []Bar
	var main, io, other []Bar
	for _, p := range r.Host.Processes() {
		node := ""
		if p.Node > 0 {
			node = fmt.Sprintf("node %d ", p.Node)
		}
		threads := append([]hostmetrics.ThreadBusy(nil), p.Threads...)
		sort.SliceStable(threads, func(i, j int) bool { return naturalLess(threads[i].Name, threads[j].Name) })
		for _, t := range threads {
			switch {
			case t.TID == p.PID:
				main = append(main, Bar{Label: node + "main (" + t.Name + ")", Value: t.Busy * 100, Group: GroupServerMain})
			case hostmetrics.IsIOThread(t.Name):
				io = append(io, Bar{Label: node + t.Name, Value: t.Busy * 100, Group: GroupServerIO})
			case t.Busy >= 0.01: // idle helper threads (bio_*, jemalloc) only add rows
				other = append(other, Bar{Label: node + t.Name, Value: t.Busy * 100, Group: GroupServerOther})
			}
		}
	}
	bars = append(append(append(bars, main...), io...), other...)
	if r.Result != nil {
		for _, w := range r.Result.Client.Workers {
			l := fmt.Sprintf("client worker %d", w.Worker)
			if w.CPU != nil {
				l += fmt.Sprintf(" (CPU %d)", *w.CPU)
			}
			bars = append(bars, Bar{Label: l, Value: w.Busy * 100, Group: GroupClient})
		}
	}
	if len(bars) == 0 {
		return nil
	}
	setup := c.Setup()
	ch := &Chart{Kind: "cpu", Name: "cpu-" + fileSafe(strings.ReplaceAll(r.CellID, "/", "_")), Bars: bars,
		Title:  "CPU per thread: " + r.CellID,
		XLabel: "busy, % of one CPU over the measured window", Width: 8,
		Height: 1.9 + 0.24*float64(len(bars)),
		Refs:   []Ref{{Label: fmt.Sprintf("saturated (%.0f%%)", hostmetrics.Saturated*100), Y: hostmetrics.Saturated * 100, Color: -1, Dashed: true}},
	}
	limit := "limit: not labelled"
	if r.Limit != nil {
		limit = fmt.Sprintf("limit: %s (%s)", r.Limit.Kind, r.Limit.Detail)
	}
	if r.Status != sweeps.StatusDone {
		limit = fmt.Sprintf("failed: %s; ", r.Reason) + limit
	}
	ch.Caption = []string{setup.Caption()[0], limit}
	return ch
}

// Describe prints a chart's structure: title, axes, ticks, series with
// their point counts and values, marks and reference lines. The golden
// tests compare it; it is also a text view of a chart for review.
func Describe(ch *Chart) string {
	var b strings.Builder
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "gap"
		}
		return trimFloat(v)
	}
	fmt.Fprintf(&b, "chart %s (%s, %gx%g in)\n", ch.Name, ch.Kind, ch.Width, ch.Height)
	fmt.Fprintf(&b, "  title: %s\n", ch.Title)
	for _, c := range ch.Caption {
		fmt.Fprintf(&b, "  caption: %s\n", c)
	}
	scale := "linear"
	if ch.YLog {
		scale = "log"
	}
	fmt.Fprintf(&b, "  x: %q [%s, %s]", ch.XLabel, num(ch.XMin), num(ch.XMax))
	for _, t := range ch.XTicks {
		fmt.Fprintf(&b, " %q", t.Label)
	}
	fmt.Fprintf(&b, "\n  y: %q %s [%s, %s]", ch.YLabel, scale, num(ch.YMin), num(ch.YMax))
	for _, t := range ch.YTicks {
		fmt.Fprintf(&b, " %q", t.Label)
	}
	b.WriteString("\n")
	for _, l := range ch.Lines {
		n, bands := 0, 0
		var ys []string
		for i, p := range l.Points {
			if !math.IsNaN(p.Y) {
				n++
			}
			if i < 40 {
				ys = append(ys, num(p.Y))
			}
		}
		for _, r := range l.Band {
			if !math.IsNaN(r.Lo) {
				bands++
			}
		}
		more := ""
		if len(l.Points) > 40 {
			more = " …"
		}
		fmt.Fprintf(&b, "  line %q colour %s glyph %d dashed %v: %d/%d points, %d bands: %s%s\n",
			l.Label, colorHex(PaletteColor(l.Color)), l.Glyph, l.Dashed, n, len(l.Points), bands, strings.Join(ys, " "), more)
	}
	for _, m := range ch.Marks {
		fmt.Fprintf(&b, "  mark %s %s at (%s, %s)\n", m.Kind, m.What, num(m.X), num(m.Y))
	}
	for _, r := range ch.Refs {
		fmt.Fprintf(&b, "  ref %q at %s\n", r.Label, num(r.Y))
	}
	for _, br := range ch.Bars {
		fmt.Fprintf(&b, "  bar %q [%s] %s\n", br.Label, br.Group, num(br.Value))
	}
	return b.String()
}
