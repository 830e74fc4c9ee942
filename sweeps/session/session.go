// Package session runs a campaign from open to close: the run directory
// and its lock, servers a killed run left, the provider table (providers.go)
// and the hosts it brings up, the tuning profile applied and reverted, the
// runner or the soak, and the teardown whatever happened. The CLI parses,
// opens a session and prints.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/start"
	"github.com/linerate/linerate/tuning"
)

// InputError is an error in what the operator gave (a flag, a file),
// found before anything was made: the CLI exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// input marks err as the operator's (nil stays nil).
func input(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// Options are what a session needs beside the campaign and its run
// directory.
type Options struct {
	Operator
	// Table is the provider table; nil is Default().
	Table *Table
	// Profiles is where a campaign's tuning profile NAME is found as
	// NAME.yaml (a path in the campaign is used as is).
	Profiles string
	// TuningRoot is the tree a HostsHere kind tunes: "" or "/" is this
	// machine, anything else a fixture tree.
	TuningRoot string
	// Work is what the run needs its hosts for (the dead-man check).
	Work Work
	// Provider, when set, replaces the provider the campaign's settings
	// describe, and Row.Check is not asked (tests: an aws provider on the
	// fake, ssh hosts whose key is in memory).
	Provider infra.Provider
	// Live, when set, gets each cell's running totals from its bencher
	// (in-process or on the client host) once a second.
	Live func(*lab.Live)
	// Servers, when set, wraps the placement's server starter before any
	// server starts (live metrics note the servers this machine runs).
	Servers func(sweeps.ServerStarter) sweeps.ServerStarter
	// AgentMetrics, when set, is where the server host's agent serves its
	// host figures (agent --metrics-listen HOST:PORT, on that host); only
	// kinds whose hosts run agents (HostsAgents) take it.
	AgentMetrics string
}

func (o *Options) table() *Table {
	if o.Table == nil {
		return Default()
	}
	return o.Table
}

// prepared is a campaign checked for a run on its provider.
type prepared struct {
	row      *Row
	settings Settings
	profile  *profile // nil: the campaign has no tuning
}

// Check finds what is wrong with running c as opt says before anything
// is made (no directory, no host, no request to AWS): the provider's
// settings and the operator's options (Row.Check), the tuning profile, the
// tuning root. Its errors are *InputError.
func Check(c *sweeps.Campaign, opt Options) error {
	_, err := check(c, &opt)
	return err
}

func check(c *sweeps.Campaign, opt *Options) (*prepared, error) {
	row, s, err := opt.table().settings(c)
	if err != nil {
		return nil, input(err)
	}
	if opt.AgentMetrics != "" {
		if row.Hosts != HostsAgents {
			return nil, input(fmt.Errorf("--agent-metrics-listen: %s runs no agent on a server host (provider %s); --metrics-listen serves this machine's servers", c.File, row.Kind))
		}
		if _, _, err := net.SplitHostPort(opt.AgentMetrics); err != nil {
			return nil, input(fmt.Errorf("--agent-metrics-listen %q: %v (want HOST:PORT on the server host)", opt.AgentMetrics, err))
		}
	}
	// A provider given in place of the settings' makes their key files,
	// credentials and deadlines its own business.
	if opt.Provider == nil {
		if err := checkRow(c, row, s, &opt.Operator, opt.Work); err != nil {
			return nil, err
		}
	}
	if opt.TuningRoot != "" && opt.TuningRoot != "/" {
		if row.Hosts != HostsHere {
			return nil, input(fmt.Errorf("--tuning-root: only the local provider tunes this machine's tree (the campaign's provider is %s)", row.Kind))
		}
		if st, err := os.Stat(opt.TuningRoot); err != nil || !st.IsDir() {
			return nil, input(fmt.Errorf("--tuning-root %s: not a directory", opt.TuningRoot))
		}
	}
	prof, err := loadProfile(c, opt.Profiles)
	if err != nil {
		return nil, input(err)
	}
	return &prepared{row: row, settings: s, profile: prof}, nil
}

// checkRow is the row's Check of c's settings s, its errors located in
// c (*InputError).
func checkRow(c *sweeps.Campaign, row *Row, s Settings, op *Operator, w Work) error {
	if row.Check == nil {
		return nil
	}
	err := row.Check(s, op, w)
	if err == nil {
		return nil
	}
	var ce *CampaignError
	if fields, _ := infra.FieldErrors(err); len(fields) > 0 {
		err = c.Provider.Locate(err)
	} else if errors.As(err, &ce) {
		err = fmt.Errorf("%s: %w", c.File, err)
	}
	return input(err)
}

// Plan is c's plan as far as it is known before its hosts are up: exact
// versions where this machine starts the servers, selectors where a
// server host resolves them (Run plans again once it is up).
func Plan(ctx context.Context, c *sweeps.Campaign, t *Table) (*sweeps.Plan, error) {
	if t == nil {
		t = Default()
	}
	var res sweeps.Resolver = &start.Starter{}
	if row, ok := t.Row(c.Provider.Kind); !ok || row.Hosts == HostsAgents {
		res = nil
	}
	return sweeps.NewPlan(ctx, c, res)
}

// Only is the cell filter of an --only pattern (path.Match on cell IDs);
// nil for "".
func Only(pattern string) func(sweeps.Cell) bool {
	if pattern == "" {
		return nil
	}
	return func(c sweeps.Cell) bool { ok, _ := path.Match(pattern, c.ID); return ok }
}

// Session is one campaign's run directory with its hosts up.
type Session struct {
	c     *sweeps.Campaign
	dir   string
	opt   Options
	prep  *prepared
	store *sweeps.Store
	place *placement
	tuner hostTuner // applied; nil until then, and after the revert
	snap  json.RawMessage
	facts Facts // the preflight's
}

// Open checks the campaign (Check), takes the run directory dir (its
// lock), stops servers a killed run of it left, and brings the hosts up.
// Close it whatever happens after. A failure's last line says how what
// it left is found later, where that is known.
func Open(ctx context.Context, c *sweeps.Campaign, dir string, opt Options) (*Session, error) {
	s, err := openSession(ctx, c, dir, opt)
	return s, opt.table().withLeft(c.Provider.Kind, err)
}

func openSession(ctx context.Context, c *sweeps.Campaign, dir string, opt Options) (*Session, error) {
	prep, err := check(c, &opt)
	if err != nil {
		return nil, err
	}
	var facts Facts
	if opt.Provider == nil {
		if facts, err = prep.row.preflight(ctx, prep.settings, &opt.Operator, c.Name, nil); err != nil {
			return nil, err
		}
	}
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, dir: dir, opt: opt, prep: prep, store: st, facts: facts}
	if prev, err := sweeps.ReadRun(dir); err == nil {
		for _, r := range start.ReapOrphans(ctx, prev) {
			opt.logf("sweep: stopped %s, left running by a killed runner", r)
		}
	}
	prov := opt.Provider
	if prov == nil {
		if prov, err = prep.row.Provider(ctx, prep.settings, &s.opt.Operator, ""); err != nil {
			st.Close()
			return nil, err
		}
	}
	spec := infra.Spec{Campaign: c.Name, Dir: dir, Queues: prep.profile.queues(), Clients: c.ClientCount()}
	if s.place, err = place(ctx, prep.row, prov, spec, &s.opt); err != nil {
		st.Close()
		return nil, err
	}
	if opt.Servers != nil {
		s.place.Servers = opt.Servers(s.place.Servers)
	}
	return s, nil
}

// Left says how what a failed teardown in err left is found later ("":
// nothing is left that way).
func (t *Table) Left(kind string, err error) string {
	if row, ok := t.Row(kind); ok && row.Left != nil && err != nil {
		return row.Left(err)
	}
	return ""
}

// withLeft is err with Left's line after it, when there is one.
func (t *Table) withLeft(kind string, err error) error {
	if left := t.Left(kind, err); left != "" {
		return fmt.Errorf("%w\n%s", err, left)
	}
	return err
}

// RunOptions shape a campaign run.
type RunOptions struct {
	// Only is a pattern of the cells to run (path.Match on their IDs).
	Only        string
	MaxAttempts int
	Redo        bool
	LinkGbps    float64
	Progress    sweeps.Progress // nil: quiet
	// SampleEvery is the host snapshot interval where the bencher gives
	// no window marks; 0 is the runner's default.
	SampleEvery time.Duration
}

// Run plans the campaign on the hosts (their versions resolved there),
// tunes them, and runs the cells. A pattern that matches no cell is an
// *InputError.
func (s *Session) Run(ctx context.Context, opt RunOptions) (*sweeps.Summary, error) {
	p, err := sweeps.NewPlan(ctx, s.c, s.place.Resolver)
	if err != nil {
		return nil, err
	}
	r := &sweeps.Runner{
		Plan: p, Store: s.store, Servers: s.place.Servers, Bench: s.place.Bencher, Sampler: s.place.Sampler,
		Progress:    opt.Progress,
		Env:         &sweeps.Environment{Linerate: sweeps.ThisBuild(), Hosts: s.place.Hosts, StatedLink: s.facts.StatedLink},
		FaultCost:   s.place.FaultCost,
		MaxAttempts: opt.MaxAttempts,
		Redo:        opt.Redo,
		LinkGbps:    opt.LinkGbps,
		SampleEvery: opt.SampleEvery,
		Only:        Only(opt.Only),
		NICs:        s.place.NICs,
		ClientClock: s.place.ClientClock,
		Calibrate:   s.calibrator(),
	}
	if r.Only != nil {
		n := 0
		for _, cell := range p.Cells {
			if r.Only(cell) {
				n++
			}
		}
		if n == 0 {
			return nil, input(fmt.Errorf("--only %q matches none of the %d cells (e.g. %s)", opt.Only, len(p.Cells), p.Cells[0].ID))
		}
	}
	if r.Env.Tuning, r.Tuning, err = s.tune(ctx); err != nil {
		return nil, err
	}
	return r.Run(ctx)
}

// SoakOptions shape a soak.
type SoakOptions struct {
	Cell     string
	Duration time.Duration
}

// Soak tunes the hosts and reruns one cell of the run for a long window.
func (s *Session) Soak(ctx context.Context, opt SoakOptions) (*sweeps.SoakRecord, error) {
	soak := &sweeps.Soak{Store: s.store, CellID: opt.Cell, Duration: opt.Duration, Servers: s.place.Servers,
		Bench: s.place.Bencher, Sampler: s.place.Sampler, FaultCost: s.place.FaultCost,
		NICs: s.place.NICs, ClientClock: s.place.ClientClock}
	var err error
	if _, soak.Tuning, err = s.tune(ctx); err != nil {
		return nil, err
	}
	rec, err := soak.Run(ctx)
	if errors.Is(err, sweeps.ErrNoSuchCell) {
		err = input(err)
	}
	return rec, err
}

// tune applies the campaign's profile once, keeping the snapshot in the
// run directory (sweep run and soak share it, so either reverts what a
// killed one left); it returns the snapshot for the record and the check
// to run before each cell.
func (s *Session) tune(ctx context.Context) (json.RawMessage, sweeps.TuningCheck, error) {
	p := s.prep.profile
	if p == nil {
		return nil, nil, nil
	}
	if s.tuner != nil {
		return s.snap, s.tuner, nil
	}
	t := s.place.Tuner(p.text, p.prof)
	snap, err := t.Apply(ctx, s.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.where, err)
	}
	s.tuner, s.snap = t, snap
	return snap, t, nil
}

// Close reverts the tuning, then takes the hosts down, then lets go of
// the run directory, also after a failure or Ctrl-C: what the session
// started must not outlive it. Each step gets a context of its own that
// survives ctx's cancellation. A failure's last line says how what it
// left is found later, where that is known.
func (s *Session) Close(ctx context.Context) error {
	var errs []error
	if s.tuner != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if err := s.tuner.Revert(rctx); err != nil {
			snap := filepath.Join(s.dir, tuning.SnapshotFile)
			if s.place.agentsTune {
				snap = "each host's agent keeps its own " + tuning.SnapshotFile + " (ssh, aws: ~/.cache/linerate/agent/; netns: agent-server/ and agent-client/ in the run directory) and reverts when its session ends"
			}
			errs = append(errs, fmt.Errorf("%w (snapshot: %s)", err, snap))
		} else {
			s.tuner = nil
		}
		cancel()
	}
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	if err := s.place.Down(dctx); err != nil {
		errs = append(errs, fmt.Errorf("take the hosts down: %w", err))
	}
	s.store.Close()
	return s.opt.table().withLeft(s.c.Provider.Kind, errors.Join(errs...))
}
