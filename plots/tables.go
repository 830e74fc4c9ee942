package plots

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/linerate/linerate/sweeps"
)

// Table is one value-size × version table, as in the reference study.
type Table struct {
	Group   string // GET, SET, …
	Heading string // "GET: bandwidth delivered, Gbps"
	Columns []string
	Rows    []TableRow
}

// TableRow is one value size.
type TableRow struct {
	Label string
	Cells []string
}

// TableSet is a campaign's tables with the notes that explain their marks.
type TableSet struct {
	Campaign string
	Setup    Setup
	Baseline string // the version marks compare against; "" when no marks
	Alpha    float64
	Groups   []TableGroup
	Notes    []string
}

// TableGroup is one operation's pair of tables.
type TableGroup struct {
	Name        string
	Description string // "GET-only, 32 connections, pipeline 1"
	Tables      []Table
}

// Cell texts for the gaps.
const (
	cellMissing = "–"
	cellFailed  = "failed"
)

// Tables builds the tables of every group, one per metric of its charts
// (Gbps, the latency percentiles, server CPU per GB when measured), with
// the marks of sweeps.Compare against the campaign's first version that has
// results.
func Tables(c *Campaign) *TableSet {
	ts := &TableSet{Campaign: c.Name, Setup: c.Setup(), Alpha: 0.05}
	for _, v := range c.Order {
		if hasResults(c, v) {
			ts.Baseline = v
			break
		}
	}
	metrics := map[*Group][]string{}
	var all []string
	for _, g := range c.Groups {
		metrics[g] = sizeMetrics(c, g)
		for _, m := range metrics[g] {
			if !slices.Contains(all, m) {
				all = append(all, m)
			}
		}
	}
	marks := tableMarks(c, ts, all)
	var seen cellsSeen
	for _, g := range c.Groups {
		tg := TableGroup{Name: g.Name, Description: groupDescription(c, g)}
		for _, m := range metrics[g] {
			tg.Tables = append(tg.Tables, sizeTable(g, m, marks[m], ts.Baseline, &seen))
		}
		ts.Groups = append(ts.Groups, tg)
	}
	ts.Groups = append(ts.Groups, loadTables(c)...)
	ts.Groups = append(ts.Groups, mixTables(c)...)
	ts.Notes = tableNotes(ts, len(marks) > 0, seen)
	return ts
}

// tableMarks is sweeps.Compare's mark of each version and cell key
// against the baseline, per metric; none when there is no baseline or
// one version only.
func tableMarks(c *Campaign, ts *TableSet, metrics []string) map[string]map[[2]string]string {
	marks := map[string]map[[2]string]string{} // metric -> (version, key) -> mark
	if ts.Baseline == "" {
		return marks
	}
	for _, m := range metrics {
		cmp, err := sweeps.Compare([]*sweeps.Run{c.Run}, sweeps.CompareOptions{Metric: m, Baseline: ts.Baseline, Alpha: ts.Alpha})
		if err != nil { // one version only: tables without marks
			continue
		}
		marks[m] = map[[2]string]string{}
		for _, r := range cmp.Rows {
			marks[m][[2]string{r.B.Label, r.Key}] = r.Mark
		}
	}
	return marks
}

// cellsSeen says which kinds of cell the tables hold, for their notes.
type cellsSeen struct{ limited, failed, missing, marked bool }

// sizeTable is one group's table of metric m: a row per value size, a
// column per version.
func sizeTable(g *Group, m string, marks map[[2]string]string, baseline string, seen *cellsSeen) Table {
	t := Table{Group: g.Name, Heading: g.Name + ": " + tableHeading(m)}
	t.Columns = append(t.Columns, "Value size")
	for _, s := range g.Series {
		t.Columns = append(t.Columns, s.Version)
	}
	for i, size := range g.Sizes {
		row := TableRow{Label: g.SizeLabel(size)}
		for _, s := range g.Series {
			mark := ""
			if s.Version != baseline {
				mark = marks[[2]string{s.Version, s.Points[i].Key}]
			}
			row.Cells = append(row.Cells, figureCell(s.Points[i], m, mark, seen))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// figureCell is a point's median of m with its mark, (c) when client
// limited, or the failed or missing sign.
func figureCell(p *Point, m, mark string, seen *cellsSeen) string {
	switch {
	case p.HasValue() && len(p.values(m)) == 0: // stored without this figure
		seen.missing = true
		return cellMissing
	case p.HasValue():
		cell := formatFigure(m, median(p.values(m)))
		if p.OnlyLimited() {
			cell += " (c)"
			seen.limited = true
		} else if mark != "" && mark != "n/a" {
			cell += " " + mark
			seen.marked = true
		}
		return cell
	case len(p.Failed) > 0:
		seen.failed = true
		return cellFailed
	}
	seen.missing = true
	return cellMissing
}

// tableNotes explains the figures, the marks and the signs the tables hold.
func tableNotes(ts *TableSet, compared bool, seen cellsSeen) []string {
	notes := append(ts.Notes, "Each figure is the median over the cell's repetitions; Gbps count value bytes delivered (payload).")
	if ts.Baseline != "" && compared {
		note := fmt.Sprintf("Marks compare each version with %s (Welch's t-test, alpha %g): *** p<0.001, ** p<0.01, * p<%g, ns not significant.", ts.Baseline, ts.Alpha, ts.Alpha)
		if !seen.marked {
			note += " No cell has two repetitions a side, so no figure is marked."
		} else {
			note += " No mark: fewer than two repetitions a side."
		}
		notes = append(notes, note)
	}
	if seen.limited {
		notes = append(notes, "(c): every repetition was client-limited; the figure is the client's ceiling, not the server's.")
	}
	if seen.failed {
		notes = append(notes, cellFailed+": every stored attempt failed (reasons in the report).")
	}
	if seen.missing {
		notes = append(notes, cellMissing+": not measured (no record in the run directory, or a record without that figure).")
	}
	return notes
}

// tableHeading names a metric's table after the group name.
func tableHeading(metric string) string {
	switch {
	case metric == MetricGbps:
		return "bandwidth delivered, Gbps"
	case metric == MetricServerCPUPerGB:
		return "server CPU per GB moved, CPU-seconds"
	case metric == MetricProbeP99:
		return "probe p99 beside the load"
	case metric == MetricProbeAdded:
		return "probe p99 added by the load (under load minus alone)"
	case metric == MetricMemoryOverhead:
		return "memory per key over the value size, %"
	}
	return "latency, " + metric
}

func hasResults(c *Campaign, version string) bool {
	for _, r := range c.Run.Cells {
		if r.Version.Segment == version && r.Status == sweeps.StatusDone && r.Result != nil {
			return true
		}
	}
	return false
}

func groupDescription(c *Campaign, g *Group) string {
	var op string
	switch g.Op {
	case "GET":
		op = "GET-only"
	case "SET":
		op = "SET-only"
	default:
		op = "mixed " + strings.TrimPrefix(g.Op, "mix")
	}
	s := c.Setup()
	return fmt.Sprintf("%s, %s; %s.", op, s.Load, s.Window)
}

// WriteMarkdown prints the tables as Markdown, in the reference study's
// shape: a heading per operation, value-size rows, version columns.
func WriteMarkdown(w io.Writer, ts *TableSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: detailed results\n\n", ts.Campaign)
	fmt.Fprintf(&b, "Hosts: %s; %s.\n", ts.Setup.Hosts, ts.Setup.Tuning)
	if ts.Setup.Server != "" {
		fmt.Fprintf(&b, "Server: %s.\n", ts.Setup.Server)
	}
	b.WriteString("\n")
	for _, g := range ts.Groups {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", g.Name, g.Description)
		for _, t := range g.Tables {
			fmt.Fprintf(&b, "%s\n\n", t.Heading)
			b.WriteString("| " + strings.Join(t.Columns, " | ") + " |\n")
			b.WriteString("|" + strings.Repeat("---|", len(t.Columns)) + "\n")
			for _, r := range t.Rows {
				b.WriteString("| " + r.Label + " | " + strings.Join(r.Cells, " | ") + " |\n")
			}
			b.WriteString("\n")
		}
	}
	for _, n := range ts.Notes {
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
