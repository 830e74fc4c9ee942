package plots

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
)

//go:embed report.html.tmpl
var reportTemplate string

// CPUChartDPI is the resolution of the report's CPU charts: a campaign has
// one per cell, so they are drawn smaller than the headline charts.
const CPUChartDPI = 72

// ReportOptions tune the report.
type ReportOptions struct {
	// Now stamps the report; zero means time.Now. Tests fix it.
	Now time.Time
	// Kinds limits the charts to these kinds (size, probe, load, mix,
	// soak, cpu); default all.
	Kinds []string
}

type reportFigure struct {
	Name, Title string
	// Img is the whole <img> element: html/template would escape every +
	// of the base64 as &#43;, a few percent more bytes for nothing.
	Img     template.HTML
	Caption []string
}

type reportFailure struct {
	CellID, Reason string
	Attempts       int
	History        []sweeps.Attempt
}

type reportCell struct {
	CellID, Status, Gbps, P99, P999, CPUPerGB, Limit, Detail string
	ClientLimited                                            bool
	Drifts                                                   int // tuning drifts found just before the cell
}

type reportDrift struct {
	CellID string
	Drifts int
	Report string
}

type reportCommand struct {
	Key, Line string
}

type reportData struct {
	Name, Description, Dir, Generated string
	Setup                             Setup
	Env                               *sweeps.Environment
	Tuning                            string
	Versions                          []reportVersion
	Size, Soak                        []reportFigure
	CPU                               []reportCPUGroup
	Tables                            *TableSet
	Failures                          []reportFailure
	Missing                           []string
	Problems                          []string
	Cells                             []reportCell
	Rebuild, Rerun                    []string
	Drifted                           []reportDrift
	Shaped                            []reportShaped
	EdgeBiased                        []reportEdge
	Bench                             []reportCommand
}

type reportVersion struct {
	Segment, Selector, Resolved, Color string
	Key                                []string // the INFO facts that tell builds apart
	Info                               string   // every INFO fact, folded
}

// infoKeys are the INFO facts shown unfolded, when present.
var infoKeys = []string{"identity", "executable", "mem_allocator", "gcc_version", "config:io-threads", "config:io-threads-do-reads", "multiplexing_api"}

type reportCPUGroup struct {
	Version string
	Figures []reportFigure
}

// ReportFile is the report's file in a run directory, unless told where.
const ReportFile = "report.html"

// SaveReport writes c's report (WriteReport) to path, "" for ReportFile
// in the run directory, all at once: a reader never sees half of one. It
// says where it went and its size in bytes.
func SaveReport(c *Campaign, path string, opt ReportOptions) (string, int, error) {
	if path == "" {
		path = filepath.Join(c.Dir, ReportFile)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, c, opt); err != nil {
		return path, 0, err
	}
	return path, buf.Len(), sweeps.WriteFileAtomic(path, buf.Bytes())
}

// WriteReport writes one self-contained HTML file: charts inline as PNG
// data URIs, tables, the environment, failures and gaps, and the commands
// that reproduce the campaign. It loads nothing from anywhere.
func WriteReport(w io.Writer, c *Campaign, opt ReportOptions) error {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	d := reportData{Name: c.Name, Dir: c.Dir, Generated: opt.Now.UTC().Format("2006-01-02 15:04 UTC"),
		Setup: c.Setup(), Env: c.Run.Env, Tables: Tables(c), Problems: c.Problems}
	if c.Plan != nil {
		d.Description = c.Plan.Campaign.Description
	}
	if d.Env != nil && len(d.Env.Tuning) > 0 && string(d.Env.Tuning) != "null" {
		d.Tuning = string(d.Env.Tuning)
	}
	d.Versions = reportVersions(c)
	if err := d.addFigures(c, opt.Kinds); err != nil {
		return err
	}
	d.addCells(c)
	d.Shaped = shapedCells(c)
	d.EdgeBiased = edgeBiasedCells(c)
	d.Rebuild, d.Rerun, d.Bench = reproduce(c)
	t, err := template.New("report").Funcs(template.FuncMap{
		"join": strings.Join,
		"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	}).Parse(reportTemplate)
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// addFigures draws the campaign's charts of the kinds asked for (all when
// none) as inline PNGs: size-like charts, soak charts, and the CPU charts
// grouped by version.
func (d *reportData) addFigures(c *Campaign, kinds []string) error {
	cpuByVersion := map[string]*reportCPUGroup{}
	for _, ch := range Charts(c) {
		if len(kinds) > 0 && !slices.Contains(kinds, ch.Kind) {
			continue
		}
		f, err := reportFigureOf(ch)
		if err != nil {
			return err
		}
		switch ch.Kind {
		case "size", "probe", "load", "mix":
			d.Size = append(d.Size, f)
		case "soak":
			d.Soak = append(d.Soak, f)
		case "cpu":
			v := strings.SplitN(strings.TrimPrefix(ch.Title, "CPU per thread: "), "/", 2)[0]
			g := cpuByVersion[v]
			if g == nil {
				g = &reportCPUGroup{Version: v}
				cpuByVersion[v] = g
			}
			g.Figures = append(g.Figures, f)
		}
	}
	for _, v := range c.Versions {
		if g := cpuByVersion[v]; g != nil {
			d.CPU = append(d.CPU, *g)
		}
	}
	return nil
}

// reportFigureOf is a chart drawn as a PNG data URI, CPU charts at their
// own resolution and width.
func reportFigureOf(ch *Chart) (reportFigure, error) {
	dpi, width := PNGDPI, int(ch.Width*96)
	if ch.Kind == "cpu" {
		dpi, width = CPUChartDPI, int(ch.Width*72)
	}
	png, err := DrawDPI(ch, FormatPNG, dpi)
	if err != nil {
		return reportFigure{}, fmt.Errorf("report: %w", err)
	}
	return reportFigure{Name: ch.Name, Title: ch.Title, Caption: ch.Caption,
		Img: template.HTML(fmt.Sprintf(`<img src="data:image/png;base64,%s" alt="%s" width="%d">`,
			base64.StdEncoding.EncodeToString(png), html.EscapeString(ch.Title), width))}, nil
}

// addCells lists every stored cell with its figures, the cells measured
// with the hosts drifted, the failures, and the planned cells never stored.
func (d *reportData) addCells(c *Campaign) {
	for _, r := range c.Run.Sorted() {
		rc := reportCell{CellID: r.CellID, Status: string(r.Status), ClientLimited: r.ClientLimited,
			Gbps: cellText(r, MetricGbps), P99: cellText(r, MetricP99), P999: cellText(r, MetricP999), CPUPerGB: cellText(r, MetricServerCPUPerGB)}
		if r.Limit != nil {
			rc.Limit, rc.Detail = string(r.Limit.Kind), r.Limit.Detail
		}
		if r.Tuning != nil {
			rc.Drifts = r.Tuning.Drifts
			if r.Tuning.Drifts > 0 {
				d.Drifted = append(d.Drifted, reportDrift{CellID: r.CellID, Drifts: r.Tuning.Drifts, Report: string(r.Tuning.Report)})
			}
		}
		d.Cells = append(d.Cells, rc)
		if r.Status != sweeps.StatusDone {
			d.Failures = append(d.Failures, reportFailure{CellID: r.CellID, Reason: r.Reason, Attempts: r.Attempts, History: r.History})
		}
	}
	if c.Plan != nil {
		for _, pc := range c.Plan.Cells {
			if c.Run.Cells[pc.ID] == nil {
				d.Missing = append(d.Missing, pc.ID)
			}
		}
	}
}

func reportVersions(c *Campaign) []reportVersion {
	var out []reportVersion
	facts := map[string]sweeps.ServerFacts{}
	if c.Run.Env != nil {
		for _, s := range c.Run.Env.Servers {
			facts[s.Segment] = s
		}
	}
	sel := map[string]string{}
	if c.Plan != nil {
		for _, v := range c.Plan.Versions {
			sel[v.Segment] = v.Spec.Selector()
		}
	}
	for i, v := range c.Versions {
		rv := reportVersion{Segment: v, Selector: sel[v], Color: colorHex(PaletteColor(i))}
		if f, ok := facts[v]; ok {
			if rv.Selector == "" {
				rv.Selector = f.Selector
			}
			rv.Resolved = strings.TrimSpace(f.Resolved.Name + " " + f.Resolved.Version)
			var kv []string
			for k, x := range f.Info {
				kv = append(kv, k+"="+x)
			}
			for _, k := range infoKeys {
				if x, ok := f.Info[k]; ok {
					rv.Key = append(rv.Key, k+"="+x)
				}
			}
			sort.Strings(kv)
			rv.Info = strings.Join(kv, ", ")
		}
		out = append(out, rv)
	}
	return out
}

// reproduce gives the commands that rebuild the binary, rerun the whole
// campaign, and run each distinct cell's load by hand.
func reproduce(c *Campaign) (rebuild, rerun []string, bench []reportCommand) {
	if c.Run.Env != nil && c.Run.Env.Linerate.Commit != "" {
		b := c.Run.Env.Linerate
		rebuild = append(rebuild, "# in a checkout of github.com/linerate/linerate:",
			"git checkout "+b.Commit, "make build   # "+b.GoVersion+", as recorded")
		if b.Modified {
			rebuild = append(rebuild, "# note: the campaign ran from a tree with uncommitted changes")
		}
	} else {
		rebuild = append(rebuild, "# the environment record names no commit; build the version you trust with: make build")
	}
	camp := filepath.Join(c.Dir, sweeps.CampaignFile)
	again := "runs/" + fileSafe(c.Name) + "-rerun"
	rerun = append(rerun,
		"bin/linerate sweep plan "+shellJoin([]string{camp}),
		"bin/linerate sweep run "+shellJoin([]string{camp, "--out", again}),
		"bin/linerate compare "+shellJoin([]string{c.Dir, again}),
		"bin/linerate plot "+again,
		"bin/linerate report "+again)
	seen := map[string]bool{}
	var keys []string
	byKey := map[string]lab.Workload{}
	add := func(key string, w lab.Workload) {
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
			byKey[key] = w
		}
	}
	if c.Plan != nil {
		for _, pc := range c.Plan.Cells {
			add(pc.Key, pc.Workload)
		}
	} else {
		for _, r := range c.Run.Sorted() {
			add(r.Key, r.Workload)
		}
	}
	for _, k := range keys {
		w := byKey[k]
		given := w.Threads
		w.Host, w.Port = "SERVER", lab.DefaultPort
		w = w.Resolve()
		w.Threads = given // 0: the client host decides, as in the campaign
		var args []string
		for _, a := range fields.Args(w) {
			if a == "SERVER" {
				a = "$SERVER"
			}
			args = append(args, a)
		}
		bench = append(bench, reportCommand{Key: k, Line: "bin/linerate bench " + shellJoin(args)})
	}
	return rebuild, rerun, bench
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"\\*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
