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
	layout  *lab.ValueLayout
	workers []*worker
	stop    atomic.Bool
	sched   *schedule
	loop    func(*worker) // nil: the raw engine's epoll loop
	// pacers makes each worker's pacer for the run (warmup, window, drain);
	// nil: closed loop. The prefill is always closed loop.
	pacers func(worker int) pace.Pacer
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
	wk := &worker{id: i, cpu: -1, w: &e.w, layout: e.layout, stop: &e.stop, addr: e.w.Addr(), epfd: -1}
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
	loop := e.loop
	if loop == nil {
		loop = (*worker).run
	}
	for _, wk := range e.workers {
		wk.sched = sched
		wk.pacer, wk.sent, wk.dueAt, wk.paceStopped = pace.Pacer(pace.ClosedLoop{}), 0, 0, false
		if e.pacers != nil && !sched.prefillMode {
			wk.pacer = e.pacers(wk.id)
		}
		wg.Add(1)
		go func() { defer wg.Done(); loop(wk) }()
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

// tickLive hands the running totals to Options.Live.
func (e *engine) tickLive(p lab.Phase, final bool) {
	if e.onLive != nil {
		e.onLive(e.live(p, final))
	}
}
