package sweeps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// Resolved is what a version selector turned out to be, e.g. valkey 9.1.2.
type Resolved struct {
	Name    string `json:"name"`    // valkey or redis
	Version string `json:"version"` // 9.1.2
}

// Segment is the version part of cell IDs: valkey-9.1.2.
func (r Resolved) Segment() string { return sanitizeSegment(r.Name + "-" + r.Version) }

// Resolver turns a version spec into its exact version before anything runs
// (the server-version store knows valkey@9.1 is 9.1.2). infra implements it.
type Resolver interface {
	Resolve(ctx context.Context, v VersionSpec) (Resolved, error)
}

// Plan is a campaign expanded into cells in run order.
type Plan struct {
	Campaign *Campaign       `json:"campaign"`
	Versions []PlanVersion   `json:"versions"`
	Blocks   []Block         `json:"blocks"`
	Cells    []Cell          `json:"cells"`
	Estimate EstimateSummary `json:"estimate"`
}

// PlanVersion is one version of the plan with its ID segment.
type PlanVersion struct {
	Spec     VersionSpec `json:"spec"`
	Segment  string      `json:"segment"` // resolved name-version when known, else the label
	Resolved *Resolved   `json:"resolved,omitempty"`
}

// Block is one server start: one version, one round, its cells in order.
type Block struct {
	Index   int   `json:"index"`
	Version int   `json:"version"` // index into Plan.Versions
	Round   int   `json:"round"`   // 1-based; rounds are repetitions
	Cells   []int `json:"cells"`   // indices into Plan.Cells
}

// Cell is one measurement: a version, a workload, a repetition.
type Cell struct {
	ID      string `json:"id"`  // valkey-9.1.2/GET/8MiB/c32/r2
	Key     string `json:"key"` // the ID without version and repetition: GET/8MiB/c32
	Index   int    `json:"index"`
	Block   int    `json:"block"`
	Version int    `json:"version"`
	Rep     int    `json:"rep"`
	// Workload is resolved except the address (the runner's server gives it)
	// and threads left at zero when not given (the client host decides).
	Workload lab.Workload `json:"workload"`
	// Hash covers the version spec and the workload: a stored cell whose
	// hash differs was measured for a different campaign and is redone.
	Hash     string        `json:"hash"`
	Estimate time.Duration `json:"estimate_ns"`
}

// FileName is the cell's record file name: the ID with / as _.
func (c Cell) FileName() string { return CellFileName(c.ID) }

// CellFileName maps a cell ID to its record file name.
func CellFileName(id string) string { return strings.ReplaceAll(id, "/", "_") + ".json" }

// EstimateSummary is the plan's predicted wall time.
type EstimateSummary struct {
	Total        time.Duration `json:"total_ns"`
	TotalText    string        `json:"total"`
	ServerStarts int           `json:"server_starts"`
	Measuring    time.Duration `json:"measuring_ns"` // warmup + duration over all cells
	Prefill      time.Duration `json:"prefill_ns"`
	// Calibration is the link's measurement before the first cell.
	Calibration time.Duration  `json:"calibration_ns,omitempty"`
	Params      EstimateParams `json:"params"`
}

// workloadCell is one point of the workload cross product.
type workloadCell struct {
	w    lab.Workload
	segs []string // op, size, then varying axes
	vals map[string]string
}

// expandWorkloads is the cross product of the axes in axisDefs order, so
// cells run op by op, then size by size, as the reference study's passes.
func (c *Campaign) expandWorkloads() ([]workloadCell, error) {
	axes := map[string]Axis{}
	for _, a := range c.Axes {
		axes[a.Name] = a
	}
	out := []workloadCell{{w: lab.Workload{Seed: c.Seed}, vals: map[string]string{}}}
	for _, def := range axisDefs {
		a, ok := axes[def.name]
		if !ok {
			continue
		}
		// Checked before the product is allocated, not after.
		if len(out)*len(a.Values) > MaxCells {
			return nil, fmt.Errorf("the workload block expands to more than %d cells", MaxCells)
		}
		next := make([]workloadCell, 0, len(out)*len(a.Values))
		for _, base := range out {
			for _, v := range a.Values {
				wc := workloadCell{w: base.w, segs: append([]string(nil), base.segs...), vals: map[string]string{}}
				for k, x := range base.vals {
					wc.vals[k] = x
				}
				def.apply(&wc.w, v)
				wc.vals[def.name] = def.format(v)
				if def.name == "ratio" || def.name == "value-size" || (len(a.Values) > 1 && def.segment(v) != "") {
					wc.segs = append(wc.segs, def.segment(v))
				}
				next = append(next, wc)
			}
		}
		out = next
	}
	for i := range out {
		wc := &out[i]
		// auto is read once every axis is applied: --command comes after
		// prefill in axisDefs and decides whether a cell GETs.
		if v, ok := wc.vals["prefill"]; !ok || v == string(PrefillAuto) {
			axisByName["prefill"].apply(&wc.w, PrefillAuto)
		}
		// The op and size segments are always there, defaults included.
		r := wc.w.Resolve()
		if _, ok := axes["ratio"]; !ok {
			wc.segs = append([]string{opSegment(r.Ratio)}, wc.segs...)
		}
		if _, ok := axes["value-size"]; !ok {
			wc.segs = append(wc.segs[:1], append([]string{SizeSegment(r.ValueSz)}, wc.segs[1:]...)...)
		}
		if r.Command.Multi() { // the op segment: MGET or MSET, not GET or SET
			wc.segs[0] = string(r.Ops()[0])
		}
		threads := wc.w.Threads
		wc.w = r
		wc.w.Host, wc.w.Port = "", 0
		wc.w.Threads = threads
	}
	return out, nil
}

// validateWorkload checks a cell's workload as the bench would, naming the
// campaign line of the field at fault.
func (c *Campaign) validateWorkload(wc workloadCell) error {
	w := wc.w
	w.Host, w.Port = "127.0.0.1", lab.DefaultPort
	err := fields.Validate(w.Resolve())
	if err == nil {
		return nil
	}
	var fe *fields.FieldError
	field, msg := "", err.Error()
	if errors.As(err, &fe) {
		field, msg = fe.Name(), fe.Msg
	}
	at, ok := c.lines["workload."+field]
	if !ok {
		at = c.lines["workload"]
	}
	vals := make([]string, 0, len(wc.vals))
	for _, def := range axisDefs {
		if v, ok := wc.vals[def.name]; ok {
			vals = append(vals, def.name+"="+v)
		}
	}
	return &SpecError{File: c.File, Line: at.line, Col: at.col, Field: "workload." + field,
		Msg: fmt.Sprintf("%s (in the cell with %s)", msg, strings.Join(vals, " "))}
}

// cellsOf expands versions × rounds × workloads into ordered cells. With a
// nil resolver, versions are named by their labels.
func (c *Campaign) cellsOf(resolved []*Resolved) (*Plan, error) {
	wcs, err := c.checkedWorkloads()
	if err != nil {
		return nil, err
	}
	p := &Plan{Campaign: c}
	if p.Versions, err = c.planVersions(resolved); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed5eed))
	ids := map[string]bool{}
	for round := 1; round <= c.Repetitions; round++ {
		for _, vi := range c.versionOrder(rng, round) {
			if err := c.addBlock(p, rng, wcs, vi, round, ids); err != nil {
				return nil, err
			}
		}
	}
	p.Estimate = p.estimate()
	return p, nil
}

// checkedWorkloads expands the workload axes and refuses what no plan may
// hold: too many cells, an impossible combination (one line per distinct
// problem, not per cell), a plan estimated past MaxEstimate, refused
// before its (up to MaxCells) cells are named and hashed.
func (c *Campaign) checkedWorkloads() ([]workloadCell, error) {
	at := c.lines["workload"]
	wcs, err := c.expandWorkloads()
	if err != nil {
		return nil, SpecErrors{{File: c.File, Line: at.line, Col: at.col, Field: "workload", Msg: err.Error()}}
	}
	total := len(wcs) * len(c.Versions) * c.Repetitions
	if total > MaxCells {
		return nil, SpecErrors{{File: c.File, Line: at.line, Col: at.col, Field: "workload", Msg: fmt.Sprintf("%d cells is more than %d; split the campaign", total, MaxCells)}}
	}
	var errs SpecErrors
	seenMsg := map[string]bool{}
	for _, wc := range wcs {
		if err := c.validateWorkload(wc); err != nil {
			se := err.(*SpecError)
			key := se.Field + se.Msg[:strings.Index(se.Msg+" (in", " (in")]
			if !seenMsg[key] {
				seenMsg[key] = true
				errs = append(errs, se)
			}
		}
	}
	if len(errs) == 0 {
		errs = c.checkClusterCells(wcs)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var perRound time.Duration
	for _, wc := range wcs {
		perRound = addSat(perRound, c.Estimate.cell(wc.w))
	}
	est := c.calibrationEstimate()
	for range len(c.Versions) * c.Repetitions {
		est = addSat(est, perRound, c.Estimate.ServerStart.D())
	}
	if est > MaxEstimate {
		return nil, c.estimateTooLong(est, total)
	}
	return wcs, nil
}

// planVersions names each version's segment: its label, or what it
// resolved to when it has no label of its own; two alike are refused.
func (c *Campaign) planVersions(resolved []*Resolved) ([]PlanVersion, error) {
	var pvs []PlanVersion
	segOwner := map[string]int{}
	for i, v := range c.Versions {
		pv := PlanVersion{Spec: v, Segment: v.Label}
		if i < len(resolved) && resolved[i] != nil {
			pv.Resolved = resolved[i]
			if !v.LabelGiven {
				pv.Segment = resolved[i].Segment()
			}
		}
		if j, dup := segOwner[pv.Segment]; dup {
			return nil, SpecErrors{{File: c.File, Line: v.Line, Field: fmt.Sprintf("versions[%d]", i),
				Msg: fmt.Sprintf("resolves to %s like versions[%d]; give each a distinct label", pv.Segment, j)}}
		}
		segOwner[pv.Segment] = i
		pvs = append(pvs, pv)
	}
	return pvs, nil
}

// versionOrder is the order of the versions' blocks in round.
func (c *Campaign) versionOrder(rng *rand.Rand, round int) []int {
	order := make([]int, len(c.Versions))
	for i := range order {
		order[i] = i
	}
	switch c.Order {
	case OrderShuffle:
		shuffle(rng, order)
	default:
		// A B C | C B A | A B C …: each version's mean position over two
		// rounds is the same, so a linear drift adds equally to all.
		if round%2 == 0 {
			slices.Reverse(order)
		}
	}
	return order
}

// addBlock adds version vi's block of round to p: a cell per workload,
// shuffled when the campaign says so; ids are the cell IDs so far.
func (c *Campaign) addBlock(p *Plan, rng *rand.Rand, wcs []workloadCell, vi, round int, ids map[string]bool) error {
	b := Block{Index: len(p.Blocks), Version: vi, Round: round}
	wOrder := make([]int, len(wcs))
	for i := range wOrder {
		wOrder[i] = i
	}
	if c.Order == OrderShuffle {
		shuffle(rng, wOrder)
	}
	for _, wi := range wOrder {
		wc := wcs[wi]
		segs := append([]string{p.Versions[vi].Segment}, wc.segs...)
		segs = append(segs, fmt.Sprintf("r%d", round))
		cell := Cell{
			ID:       strings.Join(segs, "/"),
			Key:      strings.Join(wc.segs, "/"),
			Index:    len(p.Cells),
			Block:    b.Index,
			Version:  vi,
			Rep:      round,
			Workload: wc.w,
		}
		cell.Workload.Cluster = c.Versions[vi].Server.Cluster > 0
		if ids[cell.ID] {
			return SpecErrors{{File: c.File, Field: "workload", Msg: fmt.Sprintf("two cells are both named %s; values that differ only in spelling?", cell.ID)}}
		}
		ids[cell.ID] = true
		cell.Hash = cellHash(p.Versions[vi], cell.Workload, c.ClientCount())
		cell.Estimate = c.Estimate.cell(cell.Workload)
		b.Cells = append(b.Cells, cell.Index)
		p.Cells = append(p.Cells, cell)
	}
	p.Blocks = append(p.Blocks, b)
	return nil
}

// estimateTooLong refuses a plan of cells cells estimated at total.
func (c *Campaign) estimateTooLong(total time.Duration, cells int) error {
	at := c.lines["workload"]
	over := ""
	if total == math.MaxInt64 {
		over = "over "
	}
	return SpecErrors{{File: c.File, Line: at.line, Col: at.col, Field: "workload",
		Msg: fmt.Sprintf("the plan's estimated wall time is %s%d days (%d cells); at most %d: fewer values or repetitions, shorter warmup and duration, or a higher estimate.prefill-rate",
			over, total/(24*time.Hour), cells, MaxEstimate/(24*time.Hour))}}
}

// shuffle is Fisher-Yates on our own draw, so a seed gives the same plan on
// every Go release.
func shuffle(rng *rand.Rand, s []int) {
	for i := len(s) - 1; i > 0; i-- {
		j := int(rng.Uint64() % uint64(i+1)) // bias below 2^-50 for any plan size
		s[i], s[j] = s[j], s[i]
	}
}

// hashedWorkload is lab.Workload without its MarshalJSON: a cell's hash is
// its fields alone, so fields the record derives from them (seconds beside
// durations) never make a stored cell look changed.
type hashedWorkload lab.Workload

func cellHash(v PlanVersion, w lab.Workload, clients int) string {
	var b []byte
	if clients > 1 {
		// Load from several hosts is another cell; one host hashes as
		// before client counts existed.
		b, _ = json.Marshal(struct {
			V       PlanVersion
			W       hashedWorkload
			Clients int
		}{v, hashedWorkload(w), clients})
	} else {
		b, _ = json.Marshal(struct {
			V PlanVersion
			W hashedWorkload
		}{v, hashedWorkload(w)})
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// cell estimates one cell: overhead, prefill, warmup, measured window.
// Sums saturate: a hostile file gives a huge estimate (refused), never a
// negative one.
func (e EstimateParams) cell(w lab.Workload) time.Duration {
	return addSat(e.CellOverhead.D(), warmupAsRun(w), w.Duration.D(), e.prefill(w))
}

// warmupAsRun is w's warmup as the bench runs it: longer than asked when
// a probe's idle phase needs more (lab.Workload.ProbePhases).
func warmupAsRun(w lab.Workload) time.Duration {
	_, _, warm, _ := w.ProbePhases()
	return warm
}

// prefill is keyspace x value size at the prefill rate, for cells that
// prefill; computed in floating point, as the product can pass int64.
func (e EstimateParams) prefill(w lab.Workload) time.Duration {
	if !w.Prefill || e.PrefillRate <= 0 {
		return 0
	}
	secs := lab.PrefillBytes(w) / float64(e.PrefillRate)
	if secs >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(secs * float64(time.Second))
}

// addSat adds non-negative durations, stopping at the largest one.
func addSat(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		if d > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += d
	}
	return sum
}

func (p *Plan) estimate() EstimateSummary {
	e := p.Campaign.Estimate
	s := EstimateSummary{ServerStarts: len(p.Blocks), Params: e}
	s.Total = time.Duration(len(p.Blocks)) * e.ServerStart.D() // at most MaxCells hours
	for _, c := range p.Cells {
		s.Total = addSat(s.Total, c.Estimate)
		s.Measuring = addSat(s.Measuring, warmupAsRun(c.Workload), c.Workload.Duration.D())
		s.Prefill = addSat(s.Prefill, e.prefill(c.Workload))
	}
	s.Calibration = p.Campaign.calibrationEstimate()
	s.Total = addSat(s.Total, s.Calibration)
	s.TotalText = s.Total.Round(time.Second).String()
	return s
}

// EstimateOf is the wall time of the cells keep selects (nil: all), with
// one server start for each block they are in.
func (p *Plan) EstimateOf(keep func(Cell) bool) time.Duration {
	var est time.Duration
	blocks := map[int]bool{}
	for _, c := range p.Cells {
		if keep == nil || keep(c) {
			est += c.Estimate
			blocks[c.Block] = true
		}
	}
	if len(blocks) > 0 {
		est += p.Campaign.calibrationEstimate()
	}
	return est + time.Duration(len(blocks))*p.Campaign.Estimate.ServerStart.D()
}

// NewPlan expands a campaign into ordered cells. resolver may be nil: then
// cell IDs carry the version labels (selectors) instead of exact versions.
func NewPlan(ctx context.Context, c *Campaign, resolver Resolver) (*Plan, error) {
	var resolved []*Resolved
	if resolver != nil {
		for i, v := range c.Versions {
			r, err := resolver.Resolve(ctx, v)
			if err != nil {
				return nil, fmt.Errorf("resolve versions[%d] %s: %w", i, v.Selector(), err)
			}
			resolved = append(resolved, &r)
		}
	}
	return c.cellsOf(resolved)
}

// SpecHash identifies the resolved spec: the campaign file as given and
// every cell's hash in order.
func (p *Plan) SpecHash() string {
	h := sha256.New()
	h.Write(p.Campaign.Source)
	for _, c := range p.Cells {
		h.Write([]byte(c.ID + " " + c.Hash + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// VariedAxes lists the workload fields that take more than one value.
func (c *Campaign) VariedAxes() []string {
	var out []string
	for _, a := range c.Axes {
		if len(a.Values) > 1 {
			out = append(out, a.Name)
		}
	}
	sort.Strings(out)
	return out
}
