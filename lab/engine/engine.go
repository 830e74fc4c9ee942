package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

// engine is the raw engine's coordinator: it owns the workers.
type engine struct {
	w       lab.Workload
	layout  *lab.ValueLayout // the pattern of the largest value size
	route   *route           // a cluster's (bench --cluster); nil otherwise
	mix     *lab.SizeMix     // each key's size; nil when all have one
	workers []*worker
	stop    atomic.Bool
	sched   *schedule
	kind    kind // raw or valkey-go (kind.go)
	// pacers makes each issuing unit's pacer for the run (warmup, window,
	// drain): a main-load connection of the raw engine, a valkey-go
	// worker; nil: closed loop. probePacers is the probe connections'.
	// The prefill is always closed loop. (openloop.go builds both.)
	pacers      func(unit int) pace.Pacer
	probePacers func(unit int) pace.Pacer
	// probeLayout is the probe's values; nil without --probe.
	probeLayout *lab.ValueLayout
	// choosers are the issuing units' op/key choosers, to move them
	// between the prefill and the run.
	choosers []*chooser
	closers  []func()
	onLive   func(*lab.Live) // Options.Live; nil: nobody listens
	// serverName is the server's name-version, for the live ticks.
	serverName string

	procStart, procEnd threadUsage
	windowStart        time.Time
	windowEnd          time.Time
	stoppedAt          time.Time // when Ctrl-C stopped the run; zero otherwise
}

// newWorker makes a worker's recording state; the pages of its histograms
// are faulted in here, before anything is measured.
func (e *engine) newWorker(i int) *worker {
	wk := &worker{id: i, cpu: -1, w: &e.w, layout: e.layout, mix: e.mix, stop: &e.stop, addr: e.w.Addr(), epfd: -1}
	if len(e.w.CPUList) > 0 {
		wk.cpu = e.w.CPUList[i%len(e.w.CPUList)]
	}
	for op := range wk.measure {
		wk.measure[op].lat = lab.NewHistogram()
		wk.measure[op].ttfb = lab.NewHistogram()
	}
	return wk
}

func (e *engine) shutdown() {
	for _, wk := range e.workers {
		wk.shutdown()
	}
	for _, f := range e.closers {
		f()
	}
	e.closers = nil
}

func (e *engine) allDead() bool {
	for _, wk := range e.workers {
		if wk.dead == 0 || wk.dead < len(wk.conns) {
			return false
		}
	}
	return len(e.workers) > 0
}

func (e *engine) firstErr() error {
	for _, wk := range e.workers {
		if wk.err != nil {
			return wk.err
		}
	}
	return errors.New("connections closed by the server")
}

// runWorkers starts every worker on sched and waits, calling tick once a
// second and cancelling on ctx.
func (e *engine) runWorkers(ctx context.Context, sched *schedule, tick func(elapsed time.Duration)) {
	e.sched = sched
	var wg sync.WaitGroup
	for _, wk := range e.workers {
		wk.sched = sched
		wk.paced = false
		for _, c := range wk.conns {
			pc := e.pacerOf(c.unit, c.probe, sched.prefillMode)
			c.reset(pc, e.w.QueueLimit.D(), c.probe)
			// Only a pacer that can wait needs the loop to wake for it.
			_, closed := pc.(pace.ClosedLoop)
			wk.paced = wk.paced || !closed
		}
		if wk.vk != nil {
			wk.vk.reset(e.pacerOf(wk.id, false, sched.prefillMode), e.w.QueueLimit.D(), false)
		}
		wg.Add(1)
		go func() { defer wg.Done(); e.kind.run(wk) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			e.stoppedAt = time.Now()
			e.stop.Store(true)
			<-done
			return
		case <-t.C:
			if tick != nil {
				tick(time.Since(sched.base))
			}
		}
	}
}

// pacerOf is a unit's pacer for a stage.
func (e *engine) pacerOf(unit int, probe, prefill bool) pace.Pacer {
	switch {
	case prefill:
		return pace.ClosedLoop{}
	case probe && e.probePacers != nil:
		return e.probePacers(unit)
	case !probe && e.pacers != nil:
		return e.pacers(unit)
	}
	return pace.ClosedLoop{}
}

// tickLive hands the running totals to Options.Live.
func (e *engine) tickLive(p lab.Phase, final bool) {
	if e.onLive != nil {
		e.onLive(e.live(p, final))
	}
}
