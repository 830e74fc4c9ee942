// Package plots turns a sweeps run directory into what a release note needs:
// charts (PNG and self-contained SVG, gonum/plot), Markdown tables in the
// reference study's shape with compare's significance marks, and one
// self-contained HTML report.
//
// Everything is built in two steps: Load reads the run directory into a
// Campaign (a grid of version × value size per operation, with gaps for
// missing and failed cells), then charts are described as data (Chart) and
// only then drawn. The description is what the golden tests pin down.
package plots

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Campaign is a run directory read for plotting.
type Campaign struct {
	Dir  string
	Name string
	Run  *sweeps.Run
	// Plan is the stored plan.json; nil when absent or unreadable (then
	// missing cells are only those some other version has).
	Plan *StoredPlan
	// Versions are the version segments sorted naturally; a version's index
	// here is its colour in every chart of the campaign.
	Versions []string
	// Order is the versions as the campaign lists them (plan order), then
	// any the plan does not name: the order of legends and table columns,
	// and its first version with results is the tables' baseline, as in
	// linerate compare.
	Order    []string
	Groups   []*Group
	Soaks    []*sweeps.SoakRecord
	Problems []string
	// Percentiles are the latency percentiles charted and tabulated beside
	// Gbps (sweeps.MetricP95, MetricP99, MetricP999); nil means
	// DefaultPercentiles. ParsePercentiles reads a flag's list.
	Percentiles []string
	// LinkGbps, when set, is the link's ceiling given by hand: every Gbps
	// chart draws it as a reference line. Otherwise Link, the calibration
	// env.json records, gives each Gbps chart the ceiling of its
	// direction (link.go).
	LinkGbps float64
	Link     *sweeps.Link
}

// StoredPlan is the part of plan.json the charts need.
type StoredPlan struct {
	Campaign struct {
		Name        string                `json:"name"`
		Description string                `json:"description"`
		Repetitions int                   `json:"repetitions"`
		Tuning      string                `json:"tuning"`
		Provider    sweeps.Provider       `json:"provider"`
		Server      sweeps.ServerSettings `json:"server"`
	} `json:"campaign"`
	Versions []sweeps.PlanVersion `json:"versions"`
	Cells    []sweeps.Cell        `json:"cells"`
}

// Group is one chart's worth of cells: one operation (and one value of any
// other varied dimension), every version, every value size.
type Group struct {
	Name   string // GET, SET, mix90-10, or GET/c16 with another dimension
	Op     string // the key's op segment
	Sizes  []lab.Size
	Series []*Series // in Campaign.Order; only versions the group has
	// Mixes names the sizes that stand for a value-size mix (placed at
	// its mean size): -s as given.
	Mixes map[lab.Size]string
}

// SizeLabel is how a size of the group is written on axes and in tables:
// 8 MiB, or a mix as -s takes it.
func (g *Group) SizeLabel(s lab.Size) string {
	if m, ok := g.Mixes[s]; ok {
		return m
	}
	return sizeLabel(s)
}

// Series is one version's points in a group, aligned with Group.Sizes.
type Series struct {
	Version string
	Color   int // index in Campaign.Versions
	Points  []*Point
}

// Point is one version at one value size: all its repetitions.
type Point struct {
	Size lab.Size
	Key  string
	// Clean repetitions: done and not client-limited, as compare counts them.
	Clean []*sweeps.CellRecord
	// Limited repetitions: done, but the client ran out, not the server.
	Limited []*sweeps.CellRecord
	Failed  []*sweeps.CellRecord
	Cells   []*sweeps.CellRecord // every stored repetition
	Planned int                  // repetitions in the plan; 0 without a plan
	Missing int                  // planned repetitions with no record
}

// HasValue says whether the point has any measured repetition.
func (p *Point) HasValue() bool { return len(p.Clean) > 0 || len(p.Limited) > 0 }

// OnlyLimited says whether every measured repetition was client-limited.
func (p *Point) OnlyLimited() bool { return len(p.Clean) == 0 && len(p.Limited) > 0 }

// values returns a metric's figures (sweeps.CellFigure) the point is drawn
// with: the clean repetitions', or, when all were client-limited, those
// (drawn flagged). Repetitions whose record lacks the figure (server CPU
// without host metrics) are left out, so it may be empty.
func (p *Point) values(metric string) []float64 {
	recs := p.Clean
	if len(recs) == 0 {
		recs = p.Limited
	}
	var out []float64
	for _, r := range recs {
		if v, ok := sweeps.CellFigure(r, metric); ok {
			out = append(out, v)
		}
	}
	return out
}

// Load reads a run directory. A directory with no readable cell is an
// error; anything less (missing env.json, plan.json, unreadable cells) is
// noted in Problems and plotted around.
func Load(dir string) (*Campaign, error) {
	run, err := sweeps.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	c := &Campaign{Dir: dir, Run: run, Problems: append([]string(nil), run.Problems...)}
	if b, err := os.ReadFile(filepath.Join(dir, sweeps.PlanFile)); err == nil {
		var p StoredPlan
		if err := json.Unmarshal(b, &p); err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", sweeps.PlanFile, err))
		} else {
			c.Plan = &p
			c.Name = p.Campaign.Name
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", sweeps.PlanFile, err))
	}
	if c.Name == "" && run.Env != nil {
		c.Name = run.Env.Campaign
	}
	if run.Env != nil {
		c.Link = run.Env.Link
	}
	if c.Name == "" {
		c.Name = filepath.Base(filepath.Clean(dir))
	}
	if len(run.Cells) == 0 && (c.Plan == nil || len(c.Plan.Cells) == 0) {
		return nil, fmt.Errorf("read run %s: no cell records in %s/ and no plan; is this a run directory (linerate sweep run writes one)?", dir, sweeps.CellsDir)
	}
	c.Soaks, c.Problems = readSoaks(dir, c.Problems)
	c.build()
	return c, nil
}

func readSoaks(dir string, problems []string) ([]*sweeps.SoakRecord, []string) {
	ents, err := os.ReadDir(filepath.Join(dir, sweeps.SoakDir))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s: %v", sweeps.SoakDir, err))
		}
		return nil, problems
	}
	var out []*sweeps.SoakRecord
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, sweeps.SoakDir, n))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s: %v", sweeps.SoakDir, n, err))
			continue
		}
		r, err := sweeps.DecodeSoak(b)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s: %v", sweeps.SoakDir, n, err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CellID != out[j].CellID {
			return out[i].CellID < out[j].CellID
		}
		return out[i].Started.Before(out[j].Started)
	})
	return out, problems
}

// cellRef is one planned or stored cell, reduced to what groups need.
type cellRef struct {
	version, key string
	size         lab.Size
	mix          string // -s of a mix; "" for one size
	index        int
}

func (c *Campaign) build() {
	refs, planned := c.cellRefs()
	gb := groupBuilder{groups: map[string]*Group{}, first: map[string]int{}, sizes: map[string]map[lab.Size]bool{}, points: map[groupVersion]map[lab.Size]*Point{}}
	versions := map[string]bool{}
	if c.Plan != nil {
		for _, v := range c.Plan.Versions {
			versions[v.Segment] = true
		}
	}
	for _, ref := range refs {
		if ref.version == "" || ref.key == "" {
			continue
		}
		versions[ref.version] = true
		gb.add(ref, planned[[2]string{ref.version, ref.key}])
	}
	color := c.orderVersions(versions)
	gb.placeCells(c.Run.Sorted())
	for gname, g := range gb.groups {
		gb.drawSeries(g, gname, c.Order, color)
		c.Groups = append(c.Groups, g)
	}
	sort.Slice(c.Groups, func(i, j int) bool {
		a, b := c.Groups[i], c.Groups[j]
		if opRank(a.Op) != opRank(b.Op) {
			return opRank(a.Op) < opRank(b.Op)
		}
		if gb.first[a.Name] != gb.first[b.Name] {
			return gb.first[a.Name] < gb.first[b.Name]
		}
		return a.Name < b.Name
	})
}

// cellRefs is every planned and stored cell by ID, and how many cells
// the plan has of each version and cell key.
func (c *Campaign) cellRefs() (map[string]cellRef, map[[2]string]int) {
	refs := map[string]cellRef{} // by cell ID
	planned := map[[2]string]int{}
	if c.Plan != nil {
		for _, pc := range c.Plan.Cells {
			seg := ""
			if pc.Version >= 0 && pc.Version < len(c.Plan.Versions) {
				seg = c.Plan.Versions[pc.Version].Segment
			}
			refs[pc.ID] = cellRef{version: seg, key: pc.Key, size: plotSize(pc.Workload.ValueSz), mix: mixText(pc.Workload.ValueSz), index: pc.Index}
			planned[[2]string{seg, pc.Key}]++
		}
	}
	for _, r := range c.Run.Sorted() {
		refs[r.CellID] = cellRef{version: r.Version.Segment, key: r.Key, size: plotSize(r.Workload.ValueSz), mix: mixText(r.Workload.ValueSz), index: r.Index}
	}
	return refs, planned
}

// orderVersions sets c.Versions (natural order, which fixes each
// version's color) and c.Order (the plan's order, else the order the
// cells ran in, then any other), and returns each version's color.
func (c *Campaign) orderVersions(versions map[string]bool) map[string]int {
	for v := range versions {
		c.Versions = append(c.Versions, v)
	}
	sort.Slice(c.Versions, func(i, j int) bool { return naturalLess(c.Versions[i], c.Versions[j]) })
	color := map[string]int{}
	for i, v := range c.Versions {
		color[v] = i
	}
	inOrder := map[string]bool{}
	appendOnce := func(v string) {
		if !inOrder[v] {
			inOrder[v] = true
			c.Order = append(c.Order, v)
		}
	}
	if c.Plan != nil {
		for _, v := range c.Plan.Versions {
			appendOnce(v.Segment)
		}
	} else {
		// Without a plan, the order the cells ran in.
		for _, r := range c.Run.Sorted() {
			appendOnce(r.Version.Segment)
		}
	}
	for _, v := range c.Versions {
		appendOnce(v)
	}
	return color
}

type groupVersion struct{ group, version string }

// groupBuilder gathers the cells into groups (a cell key without its
// size), each with its sizes and one point per version and size.
type groupBuilder struct {
	groups map[string]*Group
	first  map[string]int // a group's first cell in plan order
	sizes  map[string]map[lab.Size]bool
	points map[groupVersion]map[lab.Size]*Point
}

// add makes ref's group and point, with the cells planned for it.
func (gb *groupBuilder) add(ref cellRef, planned int) {
	op, gname := splitKey(ref.key)
	g := gb.groups[gname]
	if g == nil {
		g = &Group{Name: gname, Op: op}
		gb.groups[gname] = g
		gb.first[gname] = ref.index
		gb.sizes[gname] = map[lab.Size]bool{}
	}
	gb.first[gname] = min(gb.first[gname], ref.index)
	gb.sizes[gname][ref.size] = true
	if ref.mix != "" {
		if g.Mixes == nil {
			g.Mixes = map[lab.Size]string{}
		}
		g.Mixes[ref.size] = ref.mix
	}
	k := groupVersion{gname, ref.version}
	if gb.points[k] == nil {
		gb.points[k] = map[lab.Size]*Point{}
	}
	if gb.points[k][ref.size] == nil {
		gb.points[k][ref.size] = &Point{Size: ref.size, Key: ref.key, Planned: planned}
	}
}

// placeCells files each stored cell under its point: failed, client
// limited or clean.
func (gb *groupBuilder) placeCells(cells []*sweeps.CellRecord) {
	for _, r := range cells {
		_, gname := splitKey(r.Key)
		p := gb.points[groupVersion{gname, r.Version.Segment}][plotSize(r.Workload.ValueSz)]
		if p == nil {
			continue
		}
		p.Cells = append(p.Cells, r)
		switch {
		case r.Status != sweeps.StatusDone || r.Result == nil:
			p.Failed = append(p.Failed, r)
		case r.ClientLimited:
			p.Limited = append(p.Limited, r)
		default:
			p.Clean = append(p.Clean, r)
		}
	}
}

// drawSeries gives g its sizes in order and one series per version in
// order, a point at every size (a gap where a version has no cell).
func (gb *groupBuilder) drawSeries(g *Group, gname string, order []string, color map[string]int) {
	for s := range gb.sizes[gname] {
		g.Sizes = append(g.Sizes, s)
	}
	sort.Slice(g.Sizes, func(i, j int) bool { return g.Sizes[i] < g.Sizes[j] })
	for _, v := range order {
		pm := gb.points[groupVersion{gname, v}]
		if pm == nil {
			continue
		}
		s := &Series{Version: v, Color: color[v]}
		for _, size := range g.Sizes {
			p := pm[size]
			if p == nil { // never planned for this version: a gap all the same
				p = &Point{Size: size}
			}
			p.Missing = max(p.Planned-len(p.Cells), 0)
			s.Points = append(s.Points, p)
		}
		g.Series = append(g.Series, s)
	}
}

// splitKey splits a cell key (GET/8MiB/c16) into its op segment and its
// group name: the key without the size segment.
func splitKey(key string) (op, group string) {
	segs := strings.Split(key, "/")
	op = segs[0]
	rest := []string{op}
	if len(segs) > 2 {
		rest = append(rest, segs[2:]...)
	}
	return op, strings.Join(rest, "/")
}

func opRank(op string) int {
	switch op {
	case string(lab.OpGet):
		return 0
	case string(lab.OpSet):
		return 1
	case string(lab.OpMGet):
		return 2
	case string(lab.OpMSet):
		return 3
	}
	return 4
}

// DefaultPercentiles are the latency percentiles charted and tabulated
// when Campaign.Percentiles is nil.
var DefaultPercentiles = []string{sweeps.MetricP99, sweeps.MetricP999}

// percentiles is the campaign's latency metrics.
func (c *Campaign) percentiles() []string {
	if c.Percentiles == nil {
		return DefaultPercentiles
	}
	return c.Percentiles
}

// ParsePercentiles reads a --percentiles list as bench reads its own
// (lab.ParsePercentiles: "95,p99.9,99.99"), into the latency metrics'
// names (p95, p99.9, p99.99), so bench tables, plots and reports name a
// percentile alike.
func ParsePercentiles(s string) ([]string, error) {
	ps, err := lab.ParsePercentiles(s)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = lab.PercentileName(p)
	}
	return out, nil
}

// naturalLess orders strings with digit runs compared as numbers, so
// valkey-9.1.0 sorts after valkey-8.1.8 and 10.0 after 9.1.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		switch {
		case da && db:
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if len(ta) != len(tb) {
				return len(ta) < len(tb)
			}
			if ta != tb {
				return ta < tb
			}
			a, b = ra, rb
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitRun(s string) (string, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// mixText is -s of a mix, "" for one size.
func mixText(m lab.SizeMix) string {
	if _, one := m.Single(); one {
		return ""
	}
	return m.String()
}

// plotSize is where a cell sits on a value-size axis: its size, or for a
// mix of sizes its mean (a mix's own sizes have the per-size charts).
func plotSize(m lab.SizeMix) lab.Size {
	if s, one := m.Single(); one {
		return s
	}
	return lab.Size(m.Mean())
}
