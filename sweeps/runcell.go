package sweeps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// A cell's life on its running server, step by step: prepare the server,
// measure (the bench, watched and sampled), judge the result, and add the
// host's figures to the record.

// runCell runs one cell on srv into rec.
func (r *Runner) runCell(ctx context.Context, c Cell, pv PlanVersion, srv RunningServer, rec *CellRecord) {
	w, err := r.prepareCell(ctx, c, srv, rec)
	if err != nil {
		r.fail(rec, err.Error())
		return
	}
	m := r.measureCell(ctx, pv, srv, w, rec)
	r.judgeCell(ctx, rec, m)
	if m.res != nil {
		r.cellFigures(rec, m)
	}
}

// prepareCell empties the server, checks that the tuning still holds and
// points the cell's workload at the server; an error is the cell's reason.
func (r *Runner) prepareCell(ctx context.Context, c Cell, srv RunningServer, rec *CellRecord) (lab.Workload, error) {
	id := srv.Identity()
	if id.Version != "" {
		rec.Version.Resolved = &id
	}
	if err := srv.FlushAll(ctx); err != nil {
		return lab.Workload{}, fmt.Errorf("flushall: %v", err)
	}
	if r.Tuning != nil {
		rep, drifts, err := r.Tuning.Verify(ctx)
		if err != nil {
			return lab.Workload{}, fmt.Errorf("verify tuning: %v", err)
		}
		rec.Tuning = &TuningVerify{Drifts: drifts, Report: rep}
	}
	w := c.Workload
	w.Host, w.Port = srv.Addr()
	w.TLS = benchTLS(srv, w.TLS)
	return w, nil
}

// cellMeasure is what measuring a cell gave: the bench's result and error,
// why the server exited during it (nil: it did not), and the host's
// snapshots around the window.
type cellMeasure struct {
	res           *lab.Result
	err           error
	serverErr     error
	before, after *hostmetrics.Snapshot
}

// measureCell runs the bench with the server's memory and forks watched,
// the asked BGSAVEs, the NICs and the host sampled around it.
func (r *Runner) measureCell(ctx context.Context, pv PlanVersion, srv RunningServer, w lab.Workload, rec *CellRecord) cellMeasure {
	watch := watchServer(ctx, srv)
	defer watch.cancel(nil)
	// The server's memory before the bench, and its forks while it runs.
	iw := watchInfo(ctx, srv, persists(pv.Spec.Server))
	// A short cell forks only if asked: persistence rdb or bgsave-every.
	bg := startBGSaves(ctx, srv, bgsaveEvery(pv.Spec.Server, w))
	smp := r.sampleCell(ctx, srv)
	mark := func(p lab.Phase) {
		switch p {
		case lab.PhaseWarmup: // the prefill is done and no warmup request is out
			if iw != nil && w.Prefill {
				iw.prefilled()
			}
		case lab.PhaseMeasure:
			bg.windowOpened(w.Duration.D())
		}
		smp.mark(p)
	}
	nics := r.startNICs(watch.ctx, every(r.SampleEvery))
	var m cellMeasure
	m.res, m.err = r.bench(watch.ctx, w, mark, rec)
	asked, bgErrs := bg.finish()
	if iw != nil {
		iw.closeWindow() // the fork counters as the window closed, before anything else
	}
	rec.NIC = nics.finish(ctx, r, m.res)
	smp.stop()
	m.serverErr = watch.end(serverMayBeGone(m.res))
	m.before, m.after = smp.window(m.res)
	if iw != nil {
		iw.finish(rec, m.res, w)
		if persists(pv.Spec.Server) {
			rec.BGSaves = asked
			rec.Forks, rec.PersistenceNote = forkSummary(rec.Persistence, asked, bgErrs)
		}
	}
	rec.Result = m.res
	return m
}

// judgeCell gives rec its status: failed with the first reason that
// applies, else done.
func (r *Runner) judgeCell(ctx context.Context, rec *CellRecord, m cellMeasure) {
	switch {
	case m.serverErr != nil:
		r.fail(rec, fmt.Sprintf("server exited during the cell: %v", m.serverErr))
	case ctx.Err() != nil:
		r.fail(rec, "interrupted")
	case m.res == nil && m.err != nil:
		r.fail(rec, fmt.Sprintf("bench: %v", m.err))
	case m.res == nil:
		r.fail(rec, "bench returned no result")
	default:
		if why := judge(m.res); why != "" {
			r.fail(rec, why)
		} else {
			rec.Status = StatusDone
		}
	}
}

// cellFigures adds the host's figures over the window and what ran out.
func (r *Runner) cellFigures(rec *CellRecord, m cellMeasure) {
	if m.before != nil && m.after != nil {
		rec.Host = hostmetrics.Diff(m.before, m.after)
		if ops := totalOps(m.res); ops > 0 {
			// A cluster node's faults over all the cell's ops: each
			// node's share of them.
			for _, p := range rec.Host.Processes() {
				p.MinorFaultsPerOp = float64(p.MinorFaults) / float64(ops)
			}
		}
	}
	lim := hostmetrics.Label(r.limitInput(m.res, rec))
	rec.Limit = &lim
	rec.ClientLimited = lim.ClientLimited
}

// serverWatch cancels a cell's context when its server's process ends, so
// a crash costs the cell and not a request timeout per connection.
type serverWatch struct {
	ctx    context.Context // the cell's
	cancel context.CancelCauseFunc
	exited chan error
	done   chan struct{}
}

func watchServer(ctx context.Context, srv RunningServer) *serverWatch {
	cellCtx, cancel := context.WithCancelCause(ctx)
	sw := &serverWatch{ctx: cellCtx, cancel: cancel, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		select {
		case err, ok := <-srv.Exited():
			if !ok || err == nil {
				err = errors.New("exited")
			}
			sw.exited <- err
			cancel(fmt.Errorf("server exited: %w", err))
		case <-cellCtx.Done():
		}
	}()
	return sw
}

// serverMayBeGone: the bench ended as it would had the server died --
// every connection lost, a connect refused at setup, or no result -- so
// the server's exit may yet be reported.
func serverMayBeGone(res *lab.Result) bool {
	return res == nil || res.Stop.Reason == lab.StopServerLost || res.Stop.Reason == lab.StopSetupFailed
}

// end stops watching and says why the server exited (nil: it did not).
// A bench that lost the server, or could not connect to it, can end
// before the process's exit is reported: lost gives the report a moment,
// so the cell says the server died rather than that connections failed,
// and the runner starts it again for the next cell.
func (sw *serverWatch) end(lost bool) error {
	if lost {
		select {
		case <-sw.done:
		case <-time.After(serverExitGrace):
		}
	}
	sw.cancel(nil)
	<-sw.done
	select {
	case err := <-sw.exited:
		return err
	default:
		return nil
	}
}

// cellSampler snapshots the server's host for a cell: at the window's
// marks when the bencher gives them, else every SampleEvery during the
// bench, cut afterwards to the window the result reports.
type cellSampler struct {
	ctx           context.Context
	sampler       Sampler     // this machine's; nil: none
	host          HostSampler // the server's own host's, when it is remote
	pid           int
	nodes         []int
	before, after *hostmetrics.Snapshot
	series        []*hostmetrics.Snapshot
	quit, done    chan struct{}
}

// sampleCell starts sampling, when there is a sampler.
func (r *Runner) sampleCell(ctx context.Context, srv RunningServer) *cellSampler {
	hs, _ := srv.(HostSampler)
	// The server's processes are fixed once it started: asked once a
	// cell, not at every sample.
	s := &cellSampler{ctx: ctx, sampler: r.Sampler, host: hs, pid: srv.PID(), nodes: NodePIDs(srv),
		quit: make(chan struct{}), done: make(chan struct{})}
	if s.sampler == nil && s.host == nil {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every(r.SampleEvery))
		defer t.Stop()
		for {
			if snap := s.snap(); snap != nil {
				s.series = append(s.series, snap)
			}
			select {
			case <-t.C:
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

// snap is one snapshot, nil when there is no sampler or it failed.
func (s *cellSampler) snap() *hostmetrics.Snapshot {
	var snap *hostmetrics.Snapshot
	var err error
	switch {
	case s.host != nil:
		// Not the cell's context: the last snapshot is taken after the
		// bench ended it.
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		snap, err = s.host.SnapshotHost(ctx)
		cancel()
	case s.sampler != nil:
		snap, err = s.sampler.Snapshot(s.pid, s.nodes...)
	}
	if err != nil {
		return nil
	}
	return snap
}

// mark takes the snapshots at the window's edges the bencher marks.
func (s *cellSampler) mark(p lab.Phase) {
	switch p {
	case lab.PhaseMeasure:
		s.before = s.snap()
	case lab.PhaseDrain:
		s.after = s.snap()
	}
}

// stop ends the periodic samples with a last one.
func (s *cellSampler) stop() {
	close(s.quit)
	<-s.done
	if snap := s.snap(); snap != nil {
		s.series = append(s.series, snap)
	}
}

// window is the snapshots at the window's edges: the marked ones, else
// those of the series that bound the window res reports.
func (s *cellSampler) window(res *lab.Result) (before, after *hostmetrics.Snapshot) {
	if s.before == nil || s.after == nil {
		return windowOf(s.series, res)
	}
	return s.before, s.after
}
