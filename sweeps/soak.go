package sweeps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/stats"
)

// SoakSchema names the layout of SoakRecord.
const SoakSchema = "linerate.soak/v1"

// SoakRecord is one long rerun of a campaign cell with its drift analysis,
// stored in the run directory's soak/.
type SoakRecord struct {
	Schema   string              `json:"schema"`
	Campaign string              `json:"campaign"`
	CellID   string              `json:"cell_id"`
	Started  time.Time           `json:"started"`
	Ended    time.Time           `json:"ended"`
	Version  VersionID           `json:"version"`
	Workload lab.Workload        `json:"workload"`
	Status   CellStatus          `json:"status"`
	Reason   string              `json:"reason,omitempty"`
	Result   *lab.Result         `json:"result,omitempty"`
	Host     *hostmetrics.Window `json:"host,omitempty"`
	Limit    *hostmetrics.Limit  `json:"limit,omitempty"`
	Tuning   *TuningVerify       `json:"tuning,omitempty"` // the check before the window
	// Memory, Persistence and the fork summary are the cell record's
	// (CellRecord): the server's memory, and its forks per second of the
	// long window.
	Memory          *MemoryRecord       `json:"memory,omitempty"`
	Persistence     []PersistenceSecond `json:"persistence,omitempty"`
	Forks           *int64              `json:"forks,omitempty"`
	BGSaves         int                 `json:"bgsaves,omitempty"`
	PersistenceNote string              `json:"persistence_note,omitempty"`
	// Drift judges each op's per-second Gbps series.
	Drift map[lab.Op]stats.Drift `json:"drift,omitempty"`
	// Original is the campaign cell's Gbps per op, for "the short run held".
	Original map[lab.Op]float64 `json:"original_gbps,omitempty"`
	// Held is the soak's mean Gbps per op.
	Held map[lab.Op]float64 `json:"held_gbps,omitempty"`
	// Clients and NIC are as in a cell record: each client host's own
	// record, each host's NIC counters over the window.
	Clients []ClientRecord `json:"clients,omitempty"`
	NIC     []NICDelta     `json:"nic,omitempty"`
}

// SoakDrift analyses every op's per-second Gbps series of a result.
func SoakDrift(res *lab.Result, opt stats.DriftOptions) (map[lab.Op]stats.Drift, map[lab.Op]float64) {
	drift, held := map[lab.Op]stats.Drift{}, map[lab.Op]float64{}
	if res == nil {
		return drift, held
	}
	for op, o := range res.Ops {
		xs := make([]float64, len(o.Series))
		for i, s := range o.Series {
			xs[i] = s.Gbps
		}
		drift[op] = stats.AnalyzeDrift(xs, opt)
		held[op] = o.Gbps
	}
	return drift, held
}

// ErrNoSuchCell is a soak of a cell the run directory does not have.
var ErrNoSuchCell = errors.New("no such cell")

// Soak reruns one cell of a run directory for a long window.
type Soak struct {
	Store    *Store
	CellID   string
	Duration time.Duration
	Servers  ServerStarter
	Bench    Bencher
	Sampler  Sampler
	Drift    stats.DriftOptions
	// FaultCost feeds the limit label (see hostmetrics.LimitInput).
	FaultCost time.Duration
	LinkGbps  float64
	// Tuning, when the campaign has a profile, is checked before the
	// window as for a campaign cell; nil: no check.
	Tuning TuningCheck
	// NICs and ClientClock are the runner's: each host's NIC is read
	// around the window. The link the run calibrated (env.json) labels it.
	NICs        []NICSource
	ClientClock time.Duration
}

// SoakCell is the stored record of cell id in the run directory dir, or
// ErrNoSuchCell. It only reads, so callers check with it before they take
// the directory's lock or bring any host up.
func SoakCell(dir, id string) (*CellRecord, error) {
	run, err := ReadRun(dir)
	if err != nil {
		return nil, err
	}
	cell := run.Cells[id]
	if cell == nil {
		return nil, fmt.Errorf("%w: %s has no cell %s; it has %s", ErrNoSuchCell, dir, id, someIDs(run, 5))
	}
	return cell, nil
}

// Run starts the cell's server version, reruns its workload for Duration,
// judges the drift and stores the record in soak/.
func (s *Soak) Run(ctx context.Context) (*SoakRecord, error) {
	cell, err := SoakCell(s.Store.Dir, s.CellID)
	if err != nil {
		return nil, err
	}
	c, err := LoadCampaign(filepath.Join(s.Store.Dir, CampaignFile))
	if err != nil {
		return nil, fmt.Errorf("the stored campaign no longer loads: %w", err)
	}
	var pv *PlanVersion
	for _, v := range c.Versions {
		if v.Label == cell.Version.Label {
			pv = &PlanVersion{Spec: v, Segment: cell.Version.Segment, Resolved: cell.Version.Resolved}
		}
	}
	if pv == nil {
		return nil, fmt.Errorf("version %q of %s is not in the stored campaign", cell.Version.Label, s.CellID)
	}
	w := cell.Workload
	w.Duration = lab.Duration(s.Duration)
	rec := &SoakRecord{Schema: SoakSchema, Campaign: c.Name, CellID: s.CellID, Started: time.Now().UTC(),
		Version: cell.Version, Workload: w, Original: map[lab.Op]float64{}}
	if cell.Result != nil {
		for op, o := range cell.Result.Ops {
			rec.Original[op] = o.Gbps
		}
	}
	srv, err := s.Servers.Start(ctx, *pv, s.Store.LogDir())
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", pv.Segment, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = srv.Stop(sctx)
		cancel()
	}()
	r := &Runner{Plan: &Plan{Campaign: c}, Bench: s.Bench, Sampler: s.Sampler, FaultCost: s.FaultCost, LinkGbps: s.LinkGbps, Tuning: s.Tuning,
		NICs: s.NICs, ClientClock: s.ClientClock}
	if run, err := ReadRun(s.Store.Dir); err == nil && run.Env != nil {
		r.Link = run.Env.Link
	}
	cr := &CellRecord{}
	r.runCell(ctx, Cell{ID: s.CellID, Workload: w}, *pv, srv, cr)
	rec.Ended = time.Now().UTC()
	rec.Status, rec.Reason, rec.Result, rec.Host, rec.Limit, rec.Tuning = cr.Status, cr.Reason, cr.Result, cr.Host, cr.Limit, cr.Tuning
	rec.Memory, rec.Persistence = cr.Memory, cr.Persistence
	rec.Forks, rec.BGSaves, rec.PersistenceNote = cr.Forks, cr.BGSaves, cr.PersistenceNote
	rec.Clients, rec.NIC = cr.Clients, cr.NIC
	rec.Drift, rec.Held = SoakDrift(cr.Result, s.Drift)
	name := strings.TrimSuffix(CellFileName(s.CellID), ".json") + "-" + rec.Started.Format("20060102T150405Z")
	if err := s.Store.WriteSoak(name, rec); err != nil {
		return rec, err
	}
	return rec, nil
}

func someIDs(r *Run, n int) string {
	ids := make([]string, 0, len(r.Cells))
	for id := range r.Cells {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return "no cells yet"
	}
	if len(ids) > n {
		return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
	}
	return strings.Join(ids, ", ")
}

// SoakText renders a soak record's verdict per op.
func SoakText(r *SoakRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak %s for %s: %s", r.CellID, r.Workload.Duration, r.Status)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	b.WriteString("\n")
	ops := make([]string, 0, len(r.Drift))
	for op := range r.Drift {
		ops = append(ops, string(op))
	}
	sort.Strings(ops)
	for _, o := range ops {
		op := lab.Op(o)
		d := r.Drift[op]
		fmt.Fprintf(&b, "  %s: held %.2f Gbps", op, r.Held[op])
		if g, ok := r.Original[op]; ok {
			fmt.Fprintf(&b, " (campaign cell %.2f)", g)
		}
		fmt.Fprintf(&b, "; %s: first third %.2f, last third %.2f (%+.1f%%)", d.Verdict, d.FirstThird.Mean, d.LastThird.Mean, d.Change*100)
		if d.Step != nil {
			fmt.Fprintf(&b, "; step at second %d from %.2f to %.2f", d.Step.At, d.Step.Before, d.Step.After)
		}
		b.WriteString("\n")
	}
	if r.Limit != nil {
		fmt.Fprintf(&b, "  limit: %s (%s)\n", r.Limit.Kind, r.Limit.Detail)
	}
	return b.String()
}
