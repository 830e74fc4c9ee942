package sweeps

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/linerate/linerate/sweeps/stats"
)

// CompareOptions choose what Compare reports.
type CompareOptions struct {
	Metric   string  // one of Metrics; default gbps
	Baseline string  // within one run: the version segment to compare against (default: the first in plan order)
	Alpha    float64 // significance level (default 0.05, as seed 003)
}

// Comparison is a table of cells, side A against side B.
type Comparison struct {
	Mode     string       `json:"mode"` // versions (one run) or runs (two runs)
	Metric   string       `json:"metric"`
	Alpha    float64      `json:"alpha"`
	A        string       `json:"a"` // the baseline version, or the first run's directory
	B        string       `json:"b,omitempty"`
	Rows     []CompareRow `json:"rows"`
	Problems []string     `json:"problems,omitempty"`
}

// CompareRow is one cell key, one pair of sides.
type CompareRow struct {
	Key    string       `json:"key"` // e.g. GET/8MiB
	A      Side         `json:"a"`
	B      Side         `json:"b"`
	Change float64      `json:"change"` // (median B - median A) / median A
	Welch  *stats.Welch `json:"welch,omitempty"`
	Mark   string       `json:"mark"` // *** ** * ns, or n/a when a side has under two values
}

// Side is one side's repetitions of a cell.
type Side struct {
	Label  string        `json:"label"` // version segment
	Values []float64     `json:"values"`
	Stats  stats.Summary `json:"stats"`
	// ClientLimited counts repetitions left out because the client was the
	// limit: they measured the client, not the server.
	ClientLimited int `json:"client_limited"`
	Failed        int `json:"failed"`
	// Unmeasured counts done repetitions whose record lacks the figure
	// (server CPU per GB without host metrics, a latency with no request).
	Unmeasured int `json:"unmeasured,omitempty"`
}

// Check refuses options as a person typed them, naming the flag: an
// alpha outside (0, 1), a metric Compare does not know.
func (o CompareOptions) Check() error {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		return fmt.Errorf("--alpha %g: use a level between 0 and 1 such as 0.05", o.Alpha)
	}
	if _, ok := MetricByName(o.Metric); !ok {
		return fmt.Errorf("--metric %q: use %s", o.Metric, MetricNames())
	}
	return nil
}

// CompareDirs reads each run directory and compares them (Compare).
func CompareDirs(dirs []string, opt CompareOptions) (*Comparison, error) {
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := ReadRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return Compare(runs, opt)
}

// Compare compares versions within one run (one argument) or the same
// cells between two runs (two arguments).
func Compare(runs []*Run, opt CompareOptions) (*Comparison, error) {
	if opt.Metric == "" {
		opt.Metric = MetricGbps
	}
	if _, ok := MetricByName(opt.Metric); !ok {
		return nil, fmt.Errorf("metric %q: use %s", opt.Metric, MetricNames())
	}
	if opt.Alpha <= 0 || opt.Alpha >= 1 {
		opt.Alpha = 0.05
	}
	cmp := &Comparison{Metric: opt.Metric, Alpha: opt.Alpha}
	for _, r := range runs {
		for _, p := range r.Problems {
			cmp.Problems = append(cmp.Problems, r.Dir+": "+p)
		}
	}
	switch len(runs) {
	case 1:
		cmp.Mode = "versions"
		groups, order := groupCells(runs[0])
		if len(order) < 2 {
			return nil, fmt.Errorf("%s holds %d version(s) with results; comparing within a run needs two", runs[0].Dir, len(order))
		}
		base := order[0]
		if opt.Baseline != "" {
			base = opt.Baseline
			if _, ok := groups[base]; !ok {
				return nil, fmt.Errorf("baseline %q is not a version of %s; it has %s", base, runs[0].Dir, strings.Join(order, ", "))
			}
		}
		cmp.A = base
		for _, v := range order {
			if v == base {
				continue
			}
			for _, key := range keysOf(groups[base], groups[v]) {
				cmp.Rows = append(cmp.Rows, compareRow(key, groups[base][key], groups[v][key], base, v, opt))
			}
		}
	case 2:
		cmp.Mode = "runs"
		cmp.A, cmp.B = runs[0].Dir, runs[1].Dir
		ga, oa := groupCells(runs[0])
		gb, _ := groupCells(runs[1])
		for _, v := range oa {
			if gb[v] == nil {
				continue
			}
			for _, key := range keysOf(ga[v], gb[v]) {
				cmp.Rows = append(cmp.Rows, compareRow(key, ga[v][key], gb[v][key], v, v, opt))
			}
		}
		if len(cmp.Rows) == 0 {
			return nil, fmt.Errorf("%s and %s share no cells (same version and workload)", cmp.A, cmp.B)
		}
	default:
		return nil, fmt.Errorf("compare takes one or two run directories, got %d", len(runs))
	}
	return cmp, nil
}

// groupCells groups a run's records by version segment, then cell key; the
// versions come in plan order.
func groupCells(r *Run) (map[string]map[string][]*CellRecord, []string) {
	g := map[string]map[string][]*CellRecord{}
	var order []string
	for _, c := range r.Current() {
		v := c.Version.Segment
		if g[v] == nil {
			g[v] = map[string][]*CellRecord{}
			order = append(order, v)
		}
		g[v][c.Key] = append(g[v][c.Key], c)
	}
	return g, order
}

// keysOf is the keys both sides have, in the first side's plan order.
func keysOf(a, b map[string][]*CellRecord) []string {
	var keys []string
	for k := range a {
		if _, ok := b[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return a[keys[i]][0].Index < a[keys[j]][0].Index })
	return keys
}

func compareRow(key string, a, b []*CellRecord, la, lb string, opt CompareOptions) CompareRow {
	row := CompareRow{Key: key, A: side(la, a, opt.Metric), B: side(lb, b, opt.Metric)}
	if row.A.Stats.N > 0 && row.B.Stats.N > 0 && row.A.Stats.Median != 0 {
		row.Change = (row.B.Stats.Median - row.A.Stats.Median) / row.A.Stats.Median
	}
	w, ok := stats.WelchTest(row.B.Values, row.A.Values)
	if ok {
		row.Welch = &w
	}
	row.Mark = stats.Mark(w.P, ok, opt.Alpha)
	return row
}

func side(label string, recs []*CellRecord, metric string) Side {
	s := Side{Label: label, Values: []float64{}}
	for _, r := range recs {
		switch {
		case r.Status != StatusDone || r.Result == nil:
			s.Failed++
		case r.ClientLimited:
			s.ClientLimited++
		default:
			if v, ok := CellFigure(r, metric); ok {
				s.Values = append(s.Values, v)
			} else {
				s.Unmeasured++
			}
		}
	}
	s.Stats = stats.Describe(s.Values)
	return s
}

// WriteComparison prints a comparison as a table.
func WriteComparison(out io.Writer, c *Comparison) error {
	var b strings.Builder
	m, _ := MetricByName(c.Metric)
	unit := m.Unit + ", lower is better"
	if m.Higher {
		unit = m.Unit + ", higher is better"
	}
	if c.Mode == "versions" {
		fmt.Fprintf(&b, "%s (%s) against %s; Welch's t-test, alpha %g\n", c.Metric, unit, c.A, c.Alpha)
	} else {
		fmt.Fprintf(&b, "%s (%s): A %s vs B %s; Welch's t-test, alpha %g\n", c.Metric, unit, c.A, c.B, c.Alpha)
	}
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "cell\tA\tmedian A\tmin-max A\tcv A\tn\tB\tmedian B\tmin-max B\tcv B\tn\tchange\tp\tsig\n")
	flagged := false
	for _, r := range c.Rows {
		p := "-"
		if r.Welch != nil {
			p = fmt.Sprintf("%.3g", r.Welch.P)
		}
		change := "-"
		if r.A.Stats.N > 0 && r.B.Stats.N > 0 {
			change = fmt.Sprintf("%+.1f%%", r.Change*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Key,
			r.A.Label, med(r.A), rng(r.A), cv(r.A), count(r.A, &flagged),
			r.B.Label, med(r.B), rng(r.B), cv(r.B), count(r.B, &flagged),
			change, p, r.Mark)
	}
	tw.Flush()
	fmt.Fprintf(&b, "sig: *** p<0.001, ** p<0.01, * p<%g, ns not significant, n/a fewer than two repetitions a side\n", c.Alpha)
	if flagged {
		b.WriteString("n: done repetitions; +Nc: client-limited repetitions left out (they measured the client), +Nf: failed, +Nu: done but without this figure\n")
	}
	for _, p := range c.Problems {
		fmt.Fprintf(&b, "unreadable: %s\n", p)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func med(s Side) string {
	if s.Stats.N == 0 {
		if s.ClientLimited > 0 {
			return "client-limited"
		}
		return "-"
	}
	return fmt.Sprintf("%.3g", s.Stats.Median)
}

func rng(s Side) string {
	if s.Stats.N < 2 {
		return "-"
	}
	return fmt.Sprintf("%.3g-%.3g", s.Stats.Min, s.Stats.Max)
}

func cv(s Side) string {
	if s.Stats.N < 2 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", s.Stats.CV*100)
}

func count(s Side, flagged *bool) string {
	out := fmt.Sprintf("%d", s.Stats.N)
	if s.ClientLimited > 0 {
		out += fmt.Sprintf("+%dc", s.ClientLimited)
		*flagged = true
	}
	if s.Failed > 0 {
		out += fmt.Sprintf("+%df", s.Failed)
		*flagged = true
	}
	if s.Unmeasured > 0 {
		out += fmt.Sprintf("+%du", s.Unmeasured)
		*flagged = true
	}
	return out
}
