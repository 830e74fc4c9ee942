package plots

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Formats Draw writes.
const (
	FormatPNG = "png"
	FormatSVG = "svg"
)

// PNGDPI is the PNG resolution: an 8-inch chart is 1200 pixels wide, sharp
// on a high-density screen and in a release note.
const PNGDPI = 150

var (
	refColor  = color.RGBA{0x44, 0x44, 0x44, 0xff}
	gridColor = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	markColor = color.RGBA{0x55, 0x55, 0x55, 0xff}
	// Bar colours by group: server threads in blues, the client apart.
	barColors = map[string]color.RGBA{
		GroupServerMain:  {0x00, 0x3f, 0x7f, 0xff},
		GroupServerIO:    {0x00, 0x72, 0xB2, 0xff},
		GroupServerOther: {0x99, 0x99, 0x99, 0xff},
		GroupClient:      {0xD5, 0x5E, 0x00, 0xff},
		"campaign cell":  {0x99, 0x99, 0x99, 0xff},
		"soak":           {0x00, 0x72, 0xB2, 0xff},
	}
	// glyphs are the version marker shapes, by version index.
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{}, invertedGlyph{}, hourglassGlyph{}}
)

// diamondGlyph is a filled diamond, a fourth shape for the fourth version.
type diamondGlyph struct{}

func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.5)})
	r := sty.Radius * 1.25
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}

// Sans-serif everywhere: the charts sit in release notes and web pages.
// Set before any plot.New, which copies the default into its styles.
func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// invertedGlyph is a filled triangle pointing down.
type invertedGlyph struct{}

func (invertedGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.5)})
	r := sty.Radius * 1.2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r*0.7})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r*0.7})
	p.Close()
	c.Fill(p)
}

// hourglassGlyph is two filled triangles meeting at the point.
type hourglassGlyph struct{}

func (hourglassGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.5)})
	r := sty.Radius * 1.1
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Close()
	c.Fill(p)
}

func lineColor(i int) color.Color {
	if i < 0 {
		return refColor
	}
	return PaletteColor(i)
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	// premultiplied: scale the channels with the alpha
	f := float64(a) / 255
	return color.RGBA{uint8(float64(r>>8) * f), uint8(float64(g>>8) * f), uint8(float64(b>>8) * f), a}
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// Draw renders a chart as PNG or SVG. SVGs embed their fonts, so they
// render the same without the fonts installed.
func Draw(ch *Chart, format string) ([]byte, error) { return DrawDPI(ch, format, PNGDPI) }

// DrawDPI is Draw with the PNG resolution given (the report's many CPU
// charts use a lower one to keep the file small).
func DrawDPI(ch *Chart, format string, dpi int) ([]byte, error) {
	w, h := vg.Length(ch.Width)*vg.Inch, vg.Length(ch.Height)*vg.Inch
	var canvas vg.CanvasWriterTo
	switch format {
	case FormatPNG:
		img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
		if err := drawChart(ch, img, w, h); err != nil {
			return nil, fmt.Errorf("draw %s: %w", ch.Name, err)
		}
		b, err := encodePNG(img.Image())
		if err != nil {
			return nil, fmt.Errorf("draw %s as png: %w", ch.Name, err)
		}
		return b, nil
	case FormatSVG:
		canvas = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	default:
		return nil, fmt.Errorf("draw %s: format %q: use png or svg", ch.Name, format)
	}
	if err := drawChart(ch, canvas, w, h); err != nil {
		return nil, fmt.Errorf("draw %s: %w", ch.Name, err)
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw %s as %s: %w", ch.Name, format, err)
	}
	return buf.Bytes(), nil
}

func drawChart(ch *Chart, canvas vg.Canvas, w, h vg.Length) (err error) {
	// gonum/plot panics on some degenerate inputs; a chart must never take
	// the whole command down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot panicked: %v", r)
		}
	}()
	dc := draw.NewCanvas(canvas, w, h)
	// A white page: SVG has no background of its own.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	capStyle := textStyle(8)
	capStyle.XAlign, capStyle.YAlign = draw.XLeft, draw.YTop
	pad := vg.Points(8)
	var capLines []string
	for _, l := range ch.Caption {
		capLines = append(capLines, wrap(capStyle, l, w-2*pad)...)
	}
	lineH := capStyle.FontExtents().Height * 1.15
	capH := lineH*vg.Length(len(capLines)) + pad
	for i, l := range capLines {
		dc.FillText(capStyle, vg.Point{X: pad, Y: capH - pad/2 - lineH*vg.Length(i)}, l)
	}

	p := plot.New()
	p.Title.Text = ch.Title
	p.Title.TextStyle.Font.Size = 12
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = ch.XLabel
	p.Y.Label.Text = ch.YLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = 10
		a.Tick.Label.Font.Size = 9
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = 9
	leg.ThumbnailWidth = vg.Points(18)
	leg.Padding = vg.Points(5)

	if ch.Bars != nil {
		drawBars(ch, p, &leg)
	} else {
		if err := drawLines(ch, p, &leg); err != nil {
			return err
		}
	}

	legW := legendWidth(&leg, ch)
	area := dc
	area.Min.Y += capH
	plotArea := area
	plotArea.Max.X -= legW
	plotArea.Min.X += vg.Points(6) // gonum sets tick labels flush with the edge
	if ch.Bars == nil && ch.XTicks != nil {
		p.X.Tick.Marker = constTicks(staggerLabels(p, plotArea, ch.XTicks))
	}
	p.Draw(plotArea)
	legArea := area
	legArea.Min.X = plotArea.Max.X + vg.Points(4)
	legArea.Max.Y -= vg.Points(28) // level with the plot's top, below the title
	leg.Draw(legArea)
	return nil
}

// legendWidth is the widest entry plus its thumbnail, capped so the plot
// keeps most of the page.
func legendWidth(leg *plot.Legend, ch *Chart) vg.Length {
	var names []string
	for _, l := range ch.Lines {
		names = append(names, l.Label)
	}
	for _, r := range ch.Refs {
		names = append(names, r.Label)
	}
	for _, m := range markLegend {
		names = append(names, m.label)
	}
	for _, b := range ch.Bars {
		names = append(names, b.Group)
	}
	wmax := vg.Length(0)
	for _, n := range names {
		wmax = max(wmax, leg.TextStyle.Width(n))
	}
	wmax += leg.ThumbnailWidth + vg.Points(16)
	return min(wmax, vg.Length(ch.Width)*vg.Inch*0.34)
}

var markLegend = []struct {
	kind  MarkKind
	label string
}{
	{MarkClientLimited, "client-limited"},
	{MarkFailed, "failed (no value)"},
	{MarkMissing, "not measured"},
	{MarkKnee, "knee"},
}

func markGlyph(k MarkKind, col color.Color) draw.GlyphStyle {
	switch k {
	case MarkClientLimited:
		return draw.GlyphStyle{Color: col, Radius: vg.Points(6.5), Shape: draw.RingGlyph{}}
	case MarkFailed:
		return draw.GlyphStyle{Color: col, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
	case MarkKnee:
		return draw.GlyphStyle{Color: col, Radius: vg.Points(7), Shape: draw.TriangleGlyph{}}
	}
	return draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.SquareGlyph{}}
}

func drawLines(ch *Chart, p *plot.Plot, leg *plot.Legend) error {
	p.X.Min, p.X.Max = ch.XMin, ch.XMax
	p.Y.Min, p.Y.Max = ch.YMin, ch.YMax
	if ch.XTicks != nil {
		p.X.Tick.Marker = constTicks(ch.XTicks)
	}
	if ch.YLog {
		p.Y.Scale = plot.LogScale{}
	}
	if ch.YTicks != nil {
		p.Y.Tick.Marker = constTicks(ch.YTicks)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
	for _, r := range ch.Refs {
		l, err := plotter.NewLine(plotter.XYs{{X: ch.XMin, Y: r.Y}, {X: ch.XMax, Y: r.Y}})
		if err != nil {
			return err
		}
		l.Color = lineColor(r.Color)
		l.Width = vg.Points(1.2)
		if r.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		leg.Add(r.Label, l)
	}
	for _, ln := range ch.Lines {
		// The band first, under its line.
		if err := drawBand(p, ln); err != nil {
			return err
		}
		if err := drawLine(p, leg, ln); err != nil {
			return err
		}
	}
	return drawMarks(ch, p, leg)
}

// drawBand draws a line's band: one polygon per run of points that have
// a range, a whisker where a run is a single point.
func drawBand(p *plot.Plot, ln Line) error {
	col := lineColor(ln.Color)
	for _, run := range bandRuns(ln.Band) {
		if len(run) == 1 {
			wl, err := plotter.NewLine(plotter.XYs{{X: run[0].X, Y: run[0].Lo}, {X: run[0].X, Y: run[0].Hi}})
			if err != nil {
				return err
			}
			wl.Color, wl.Width = withAlpha(col, 140), vg.Points(3)
			p.Add(wl)
			continue
		}
		var poly plotter.XYs
		for _, r := range run {
			poly = append(poly, plotter.XY{X: r.X, Y: r.Hi})
		}
		for i := len(run) - 1; i >= 0; i-- {
			poly = append(poly, plotter.XY{X: run[i].X, Y: run[i].Lo})
		}
		pg, err := plotter.NewPolygon(poly)
		if err != nil {
			return err
		}
		pg.Color = withAlpha(col, 50)
		pg.LineStyle.Width = 0
		p.Add(pg)
	}
	return nil
}

// drawLine draws a line's measured runs with their glyphs and names it
// in the legend, even when nothing was measured.
func drawLine(p *plot.Plot, leg *plot.Legend, ln Line) error {
	col := lineColor(ln.Color)
	var thumbs []plot.Thumbnailer
	for _, seg := range lineRuns(ln.Points) {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return err
		}
		l.Color, l.Width = col, vg.Points(1.6)
		if ln.Dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		if len(thumbs) == 0 {
			thumbs = append(thumbs, l)
		}
		if ln.Glyph >= 0 {
			sc, err := plotter.NewScatter(seg)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: glyphs[ln.Glyph%len(glyphs)]}
			p.Add(sc)
			if len(thumbs) == 1 {
				thumbs = append(thumbs, sc)
			}
		}
	}
	if len(thumbs) == 0 { // nothing measured: still name the version
		l := &plotter.Line{LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1.6)}}
		thumbs = append(thumbs, l)
	}
	leg.Add(ln.Label, thumbs...)
	return nil
}

// drawMarks draws the chart's marks and a legend entry for each kind used.
func drawMarks(ch *Chart, p *plot.Plot, leg *plot.Legend) error {
	used := map[MarkKind]bool{}
	for _, m := range ch.Marks {
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return err
		}
		sc.GlyphStyle = markGlyph(m.Kind, lineColor(m.Color))
		sc.GlyphStyle.Radius = markGlyph(m.Kind, nil).Radius
		p.Add(sc)
		used[m.Kind] = true
	}
	for _, ml := range markLegend {
		if used[ml.kind] {
			sc, _ := plotter.NewScatter(plotter.XYs{{}})
			sc.GlyphStyle = markGlyph(ml.kind, markColor)
			leg.Add(ml.label, sc)
		}
	}
	return nil
}

func drawBars(ch *Chart, p *plot.Plot, leg *plot.Legend) {
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	grid.Vertical.Color = gridColor
	p.Add(grid)
	n := len(ch.Bars)
	names := make([]string, n)
	hi := 0.0
	seen := map[string]bool{}
	for i, b := range ch.Bars {
		names[n-1-i] = b.Label // first bar on top
		hi = math.Max(hi, b.Value)
		y := float64(n - 1 - i)
		pg, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: y - 0.36}, {X: b.Value, Y: y - 0.36}, {X: b.Value, Y: y + 0.36}, {X: 0, Y: y + 0.36}})
		if err != nil {
			continue
		}
		col, ok := barColors[b.Group]
		if !ok {
			col = barColors[GroupServerOther]
		}
		pg.Color = col
		pg.LineStyle.Width = 0
		p.Add(pg)
		if !seen[b.Group] {
			seen[b.Group] = true
			leg.Add(b.Group, pg)
		}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: b.Value, Y: y}}, Labels: []string{" " + trimFloat(b.Value)}})
		if err == nil {
			for i := range lbl.TextStyle {
				lbl.TextStyle[i].Font.Size = 8
				lbl.TextStyle[i].YAlign = draw.YCenter
			}
			p.Add(lbl)
		}
	}
	for _, r := range ch.Refs {
		hi = math.Max(hi, r.Y)
		l, err := plotter.NewLine(plotter.XYs{{X: r.Y, Y: -0.6}, {X: r.Y, Y: float64(n) - 0.4}})
		if err != nil {
			continue
		}
		l.Color, l.Width = refColor, vg.Points(1.2)
		if r.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		leg.Add(r.Label, l)
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = 0, math.Max(hi*1.15, 1)
	p.X.Tick.Marker = constTicks(linearTicks(0, p.X.Max, trimFloat))
}

// lineRuns splits points at NaN gaps.
func lineRuns(pts []XY) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, pt := range pts {
		if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: pt.X, Y: pt.Y})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func bandRuns(rs []Range) [][]Range {
	var out [][]Range
	var cur []Range
	for _, r := range rs {
		if math.IsNaN(r.Lo) || math.IsNaN(r.Hi) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, r)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// wrap breaks a caption line into lines that fit width.
func wrap(sty text.Style, s string, width vg.Length) []string {
	if sty.Width(s) <= width {
		return []string{s}
	}
	var out []string
	line := ""
	for _, word := range splitWords(s) {
		try := line + word
		if line != "" && sty.Width(try) > width {
			out = append(out, line)
			line = trimLeftSpace(word)
			continue
		}
		line = try
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// splitWords keeps each word with its leading space.
func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

func trimLeftSpace(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	return s
}

// encodePNG writes a chart as a paletted PNG when its most frequent 256
// colours cover nearly every pixel (flat colours plus anti-aliased edges,
// which map to their nearest palette colour unseen): a third of the bytes
// of a true-colour PNG, which matters for a report that inlines them all.
func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	rgba, ok := img.(*image.RGBA)
	if !ok {
		err := enc.Encode(&buf, img)
		return buf.Bytes(), err
	}
	b := rgba.Bounds()
	px := func(x, y int) uint32 {
		i := rgba.PixOffset(x, y)
		p := rgba.Pix[i : i+4 : i+4]
		return uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
	}
	// Count colours run by run: charts are mostly long runs of one colour.
	count := map[uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		prev, run := px(b.Min.X, y), 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := px(x, y); c != prev {
				count[prev] += run
				prev, run = c, 0
			}
			run++
		}
		count[prev] += run
	}
	type cc struct {
		c uint32
		n int
	}
	all := make([]cc, 0, len(count))
	for c, n := range count {
		all = append(all, cc{c, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].c < all[j].c
	})
	top := 0
	for i := 0; i < len(all) && i < 256; i++ {
		top += all[i].n
	}
	if float64(top) < 0.97*float64(b.Dx()*b.Dy()) {
		err := enc.Encode(&buf, img)
		return buf.Bytes(), err
	}
	n := min(len(all), 256)
	pal := make(color.Palette, n)
	index := make(map[uint32]uint8, len(all))
	for i := 0; i < n; i++ {
		c := all[i].c
		pal[i] = color.RGBA{uint8(c >> 24), uint8(c >> 16), uint8(c >> 8), uint8(c)}
		index[c] = uint8(i)
	}
	pi := image.NewPaletted(b, pal)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		prev, prevIdx := uint32(0), uint8(0)
		have := false
		row := pi.Pix[pi.PixOffset(b.Min.X, y):]
		for x := b.Min.X; x < b.Max.X; x++ {
			c := px(x, y)
			if !have || c != prev {
				i, ok := index[c]
				if !ok {
					i = uint8(pal.Index(color.RGBA{uint8(c >> 24), uint8(c >> 16), uint8(c >> 8), uint8(c)}))
					index[c] = i
				}
				prev, prevIdx, have = c, i, true
			}
			row[x-b.Min.X] = prevIdx
		}
	}
	err := enc.Encode(&buf, pi)
	return buf.Bytes(), err
}
