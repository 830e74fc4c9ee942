package sweeps

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// ServerStarter starts one server version (pinned, with its settings) and
// returns it running and answering. infra's launchers implement it.
type ServerStarter interface {
	Start(ctx context.Context, v PlanVersion, logDir string) (RunningServer, error)
}

// RunningServer is a started server.
type RunningServer interface {
	// Addr is where the bench connects.
	Addr() (host string, port int)
	// PID is the server process on this host for thread sampling; 0 when
	// it is not a local process.
	PID() int
	// Identity is what the server says it is (INFO server).
	Identity() Resolved
	// Info returns selected INFO facts for the environment record.
	Info(ctx context.Context) (map[string]string, error)
	// FlushAll empties the server between cells.
	FlushAll(ctx context.Context) error
	// Exited yields the process's end (nil error for a clean exit) and is
	// then closed; it never yields while the server runs.
	Exited() <-chan error
	Stop(ctx context.Context) error
}

// Bencher runs one cell's load. mark, when the bencher can, is called with
// lab.PhaseMeasure as the measured window opens and lab.PhaseDrain as it
// closes, so host metrics cover exactly the window; without marks they
// cover the whole bench call.
type Bencher interface {
	Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error)
}

// Sampler snapshots a host, the server's process and a cluster's other
// nodes; hostmetrics.Sampler is the real one.
type Sampler interface {
	Snapshot(pid int, nodes ...int) (*hostmetrics.Snapshot, error)
}

// ClusterServer is a RunningServer of several processes on its host
// (server.cluster: N): the nodes besides PID's, for thread sampling.
type ClusterServer interface {
	NodePIDs() []int
}

// NodePIDs is srv's other processes to sample beside PID(): a cluster's
// other nodes; nil for one process.
func NodePIDs(srv RunningServer) []int {
	if c, ok := srv.(ClusterServer); ok {
		return c.NodePIDs()
	}
	return nil
}

// HostSampler is a RunningServer that samples its own host: a server on a
// remote host, whose /proc only its agent there can read. The runner uses
// it instead of Sampler.
type HostSampler interface {
	SnapshotHost(ctx context.Context) (*hostmetrics.Snapshot, error)
}

// TuningCheck compares the hosts with the campaign's tuning profile before
// each cell (an IRQ moved by a device reset, irqbalance restarted): the
// report is stored with the cell, and drift is a note, not a failure.
type TuningCheck interface {
	Verify(ctx context.Context) (report json.RawMessage, drifts int, err error)
}

// Runner executes a plan into a store.
type Runner struct {
	Plan     *Plan
	Store    *Store
	Servers  ServerStarter
	Bench    Bencher
	Sampler  Sampler      // nil: no host metrics
	Tuning   TuningCheck  // nil: no tuning profile
	Progress Progress     // nil: quiet
	Env      *Environment // written at start and whenever a server starts; may be nil
	// MaxAttempts bounds how often a failing cell is tried over all runs.
	MaxAttempts int
	// Redo reruns cells that are already done.
	Redo bool
	// Only, when set, restricts the run to the cells it accepts.
	Only func(Cell) bool
	// LinkGbps and FaultCost feed the limit label (see hostmetrics.LimitInput).
	LinkGbps  float64
	FaultCost time.Duration
	// StopTimeout bounds stopping a server; 0: its version's
	// ServerSettings.StopBound.
	StopTimeout time.Duration
	// SampleEvery is the host snapshot interval when the bencher gives no
	// window marks (default 500ms).
	SampleEvery time.Duration
	// NICs are the hosts' data interfaces whose driver counters each cell
	// records (runner_nic.go); ClientClock is the client host's clock
	// minus this machine's, which the records' times are on.
	NICs        []NICSource
	ClientClock time.Duration
	nicInfo     []NICInfo
	// Calibrate, when set, runs once before the first cell that runs (not
	// when every cell is kept) and returns the link's figures, stored in
	// the environment record and held against each cell (Link).
	Calibrate func(ctx context.Context) (*Link, error)
	Link      *Link
}

// DefaultMaxAttempts is how often a failing cell is tried before the
// campaign stops retrying it.
const DefaultMaxAttempts = 3

// serverExitGrace is how long a cell whose bench lost the server waits for
// the server's exit to be reported before it is judged.
const serverExitGrace = 3 * time.Second

// Summary is what a run did.
type Summary struct {
	Planned       int           `json:"planned"`
	Ran           int           `json:"ran"`
	Done          int           `json:"done"`     // done now, this run or earlier
	Kept          int           `json:"kept"`     // done earlier and not rerun
	Stale         int           `json:"stale"`    // done earlier for a different spec, rerun
	Failed        []Failure     `json:"failed"`   // failed now (includes given up)
	GivenUp       int           `json:"given_up"` // failed MaxAttempts times, not tried again
	ClientLimited []string      `json:"client_limited,omitempty"`
	Shaped        []Shaped      `json:"link_allowance,omitempty"` // cells whose NIC counted an allowance exceeded
	Interrupted   bool          `json:"interrupted"`
	Elapsed       time.Duration `json:"elapsed_ns"`
}

// ExitCode is how `sweep run` ends after the run: 130 interrupted, 1 when
// a cell failed, 0 when every cell it ran is done.
func (s *Summary) ExitCode() int {
	switch {
	case s.Interrupted:
		return exitcode.Interrupted
	case len(s.Failed) > 0:
		return exitcode.Errors
	}
	return exitcode.OK
}

// Failure is a failed cell in the summary.
type Failure struct {
	CellID   string `json:"cell_id"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts"`
}

// Run executes every cell that needs it and returns the summary. A failed
// cell is recorded and the run goes on; Run returns an error only for
// problems with the store itself. Cancelling ctx stops after writing what
// was done; the cell in flight is not recorded and runs next time.
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	start := time.Now()
	if err := r.begin(); err != nil {
		return nil, err
	}
	prev, err := ReadRun(r.Store.Dir)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Planned: len(r.Plan.Cells)}
	todo := r.todo(prev, sum)
	if r.Progress != nil {
		r.Progress.Begin(len(todo), r.Plan.EstimateOf(func(c Cell) bool { _, ok := todo[c.Index]; return ok }))
	}
	if err := r.calibrate(ctx, len(todo)); err != nil {
		return nil, err
	}
	for _, b := range r.Plan.Blocks {
		var cells []Cell
		for _, ci := range b.Cells {
			if _, ok := todo[ci]; ok {
				cells = append(cells, r.Plan.Cells[ci])
			}
		}
		if len(cells) == 0 {
			continue
		}
		if err := r.runBlock(ctx, b, cells, todo, sum); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
	}
	r.countDone(sum)
	sort.Slice(sum.Failed, func(i, j int) bool { return sum.Failed[i].CellID < sum.Failed[j].CellID })
	sum.Elapsed = time.Since(start)
	if r.Progress != nil {
		r.Progress.End(sum)
	}
	return sum, nil
}

// begin sets the defaults left zero and writes the plan and the
// environment into the store.
func (r *Runner) begin() error {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if err := r.Store.WriteSpec(r.Plan); err != nil {
		return err
	}
	if r.Env == nil {
		return nil
	}
	if r.Env.Created.IsZero() {
		r.Env.Created = time.Now().UTC()
	}
	r.Env.Campaign = r.Plan.Campaign.Name
	r.Env.SpecHash = r.Plan.SpecHash()
	r.Env.TuningProfile = r.Plan.Campaign.Tuning
	return r.Store.WriteEnv(r.Env)
}

// todo is the cells to run, by index, each with its previous record (nil:
// none or not to be built on); what is kept, stale or given up is counted
// into sum.
func (r *Runner) todo(prev *Run, sum *Summary) map[int]*CellRecord {
	todo := map[int]*CellRecord{}
	for _, c := range r.Plan.Cells {
		if r.Only != nil && !r.Only(c) {
			continue
		}
		old := prev.Cells[c.ID]
		switch {
		case old == nil:
			todo[c.Index] = nil
		case old.Hash != c.Hash:
			sum.Stale++
			todo[c.Index] = nil // a different cell under the same name: start over
		case r.Redo:
			todo[c.Index] = nil
		case old.Status == StatusDone:
			sum.Kept++
		case old.Attempts >= r.MaxAttempts:
			sum.GivenUp++
			sum.Failed = append(sum.Failed, Failure{CellID: c.ID, Reason: old.Reason, Attempts: old.Attempts})
		default:
			todo[c.Index] = old
		}
	}
	return todo
}

// countDone counts everything done now, from the store: the truth on disk.
func (r *Runner) countDone(sum *Summary) {
	final, err := ReadRun(r.Store.Dir)
	if err != nil {
		return
	}
	for _, c := range r.Plan.Cells {
		if rec := final.Cells[c.ID]; rec != nil && rec.Status == StatusDone && rec.Hash == c.Hash {
			sum.Done++
			if rec.ClientLimited {
				sum.ClientLimited = append(sum.ClientLimited, c.ID)
			}
			if a := Allowances(rec.NIC); len(a) > 0 {
				sum.Shaped = append(sum.Shaped, Shaped{CellID: c.ID, Counters: strings.Join(a, ", ")})
			}
		}
	}
}

// runBlock starts the block's server once and runs its cells; a server
// that dies is started again for the next cell.
func (r *Runner) runBlock(ctx context.Context, b Block, cells []Cell, todo map[int]*CellRecord, sum *Summary) error {
	pv := r.Plan.Versions[b.Version]
	var srv RunningServer
	stop := func() {
		if srv != nil {
			bound := r.StopTimeout
			if bound <= 0 {
				bound = pv.Spec.Server.StopBound()
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
			_ = srv.Stop(sctx)
			cancel()
			srv = nil
		}
	}
	defer stop()
	var startErr error
	for _, c := range cells {
		if ctx.Err() != nil {
			return nil
		}
		if srv != nil {
			select {
			case <-srv.Exited():
				srv = nil // died after the last cell; its cell recorded why
			default:
			}
		}
		// A start that failed is not tried again in this block: each try
		// can take the launcher's whole start timeout.
		if srv == nil && startErr == nil {
			srv, startErr = r.Servers.Start(ctx, pv, r.Store.LogDir())
			if startErr == nil {
				r.recordServer(ctx, pv, srv)
			} else {
				srv = nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if r.Progress != nil {
			r.Progress.CellStart(c)
		}
		rec := r.newRecord(c, pv, todo[c.Index])
		if startErr != nil {
			r.fail(rec, fmt.Sprintf("server start: %v", startErr))
		} else {
			r.runCell(ctx, c, pv, srv, rec)
			if ctx.Err() != nil && rec.Status != StatusDone {
				return nil // interrupted: the cell in flight is not recorded
			}
		}
		rec.Ended = time.Now().UTC()
		if err := r.Store.WriteCell(rec); err != nil {
			return err
		}
		sum.Ran++
		if rec.Status == StatusFailed {
			sum.Failed = append(sum.Failed, Failure{CellID: c.ID, Reason: rec.Reason, Attempts: rec.Attempts})
		}
		if r.Progress != nil {
			r.Progress.CellEnd(c, rec)
		}
		if rec.Status == StatusFailed && srv != nil {
			select {
			case <-srv.Exited():
				srv = nil
			default:
			}
		}
	}
	return nil
}

func (r *Runner) newRecord(c Cell, pv PlanVersion, old *CellRecord) *CellRecord {
	rec := &CellRecord{
		Campaign: r.Plan.Campaign.Name, CellID: c.ID, Key: c.Key, Hash: c.Hash,
		Index: c.Index, Rep: c.Rep, Workload: c.Workload, Attempts: 1,
		Started: time.Now().UTC(),
		Version: VersionID{Label: pv.Spec.Label, Segment: pv.Segment, Selector: pv.Spec.Selector(),
			Runtime: pv.Spec.Runtime, Env: pv.Spec.Env, Resolved: pv.Resolved},
	}
	if old != nil {
		rec.Attempts = old.Attempts + 1
		rec.History = append(append([]Attempt(nil), old.History...), Attempt{Ended: old.Ended, Reason: old.Reason})
	}
	return rec
}

func (r *Runner) fail(rec *CellRecord, reason string) {
	rec.Status = StatusFailed
	rec.Reason = reason
}

// judge says why a finished bench is not a valid cell, or "".
func judge(res *lab.Result) string {
	if res.Stop.Reason != lab.StopCompleted {
		msg := string(res.Stop.Reason)
		if msg == "" {
			msg = "no stop reason"
		}
		if res.Stop.Error != "" {
			msg += ": " + res.Stop.Error
		}
		if n := errorSummary(res.Errors); n != "" {
			msg += " (" + n + ")"
		}
		return msg
	}
	if n := errorSummary(res.Errors); n != "" {
		return "request errors: " + n
	}
	var bad uint64
	for _, o := range res.Ops {
		bad += o.Verify.Failed
	}
	if bad > 0 {
		return fmt.Sprintf("verify: %d replies failed", bad)
	}
	if totalOps(res) == 0 {
		if g := res.Ops[lab.OpGet]; g != nil && g.Misses > 0 {
			// Not a timing matter: a longer window would miss as much.
			return fmt.Sprintf("all %d GETs found no key: nothing wrote the keyspace; prefill it (workload.prefill: true)", g.Misses)
		}
		// Every request outlived the window: there is no figure, only a
		// zero that would read as "this version moves nothing".
		return fmt.Sprintf("no request completed inside the %s window; lengthen duration or lower connections", res.Window.Requested)
	}
	return ""
}

func errorSummary(m map[lab.ErrorKind]uint64) string {
	var parts []string
	for k, v := range m {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func totalOps(res *lab.Result) uint64 {
	var n uint64
	for _, o := range res.Ops {
		n += o.Ops
	}
	return n
}

// recordServer adds a started server's facts to the environment record.
func (r *Runner) recordServer(ctx context.Context, pv PlanVersion, srv RunningServer) {
	if r.Env == nil {
		return
	}
	info, _ := srv.Info(ctx)
	f := ServerFacts{Segment: pv.Segment, Selector: pv.Spec.Selector(), Resolved: srv.Identity(), Info: info, Started: time.Now().UTC(),
		TLS: benchTLS(srv, lab.TLS{}).On}
	for i, s := range r.Env.Servers {
		if s.Segment == f.Segment {
			r.Env.Servers[i] = f
			_ = r.Store.WriteEnv(r.Env)
			return
		}
	}
	r.Env.Servers = append(r.Env.Servers, f)
	_ = r.Store.WriteEnv(r.Env)
}
