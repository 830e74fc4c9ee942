package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// RunOptions are the parts of a run that are not the workload.
type RunOptions struct {
	Given    []string  // the command line as typed, stored in the record
	Progress io.Writer // one line a second; nil for quiet
	RunID    string
	// OnPhase is called as warmup, the measured window and the drain begin,
	// so host metrics can be cut to the window. It must return quickly.
	OnPhase func(Phase)
	// Live, when set, gets the run's running totals once a second (the
	// progress tick) and once more, Final, when the workers have stopped.
	// It is called off the workers' threads and must return quickly.
	Live func(*Live)
}

// RunError carries the exit code that goes with a failed run.
type RunError struct {
	Reason StopReason
	Err    error
}

func (e *RunError) Error() string { return string(e.Reason) + ": " + e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Run executes one bench run. It returns a Result whenever it got far
// enough to have measured anything or to say why it could not, together
// with an error when the run did not complete.
func Run(ctx context.Context, given Workload, opt RunOptions) (*Result, error) {
	w := given.Resolve()
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if len(w.CPUList) > 0 {
		if err := checkCPUs(w.CPUList); err != nil {
			return nil, err
		}
	}
	res := newResult(w, opt)
	fail := func(reason StopReason, err error) (*Result, error) {
		res.Ended = time.Now().UTC()
		res.Stop = Stop{Reason: reason, Error: err.Error(), ExitCode: exitCodeFor(reason)}
		return res, &RunError{Reason: reason, Err: err}
	}

	ctl, err := DialControl(ctx, w)
	if err != nil {
		if strings.Contains(err.Error(), "NOAUTH") {
			err = fmt.Errorf("%w (the server wants a password: -a, --user, or $LINERATE_PASSWORD)", err)
		}
		return fail(StopSetupFailed, err)
	}
	defer ctl.Close()
	if res.Server, err = ctl.ServerInfo(ctx); err != nil {
		return fail(StopSetupFailed, err)
	}
	if lim, ok := res.Server.Config["proto-max-bulk-len"]; ok {
		if n, err := strconv.ParseInt(lim, 10, 64); err == nil && int64(w.ValueSz) > n {
			return fail(StopSetupFailed, &FieldError{Field: "-s/--value-size",
				Msg: fmt.Sprintf("%d bytes exceeds the server's proto-max-bulk-len (%d); raise it with CONFIG SET proto-max-bulk-len or use a smaller -s", int64(w.ValueSz), n)})
		}
	}
	if w.Prefill {
		// Refused before a connection is opened for load: a prefill that
		// cannot fit ends in evictions, OOM errors or a killed server.
		if err := checkPrefillFits(w, res.Server, hostMemAvailable); err != nil {
			return fail(StopSetupFailed, err)
		}
	}
	var e *engine
	if w.Engine == EngineValkeyGo {
		e, err = newValkeyGoEngine(w)
	} else {
		e, err = newEngine(w)
	}
	if err != nil {
		return fail(StopSetupFailed, err)
	}
	defer e.shutdown()
	e.onLive = opt.Live
	if res.Server != nil {
		e.serverName = res.Server.Name + "-" + res.Server.Version
	}

	if w.Prefill {
		if err := e.prefill(ctx, opt.Progress); err != nil {
			return fail(stopReasonFor(ctx, StopSetupFailed), err)
		}
		n, err := ctl.DBSize(ctx)
		if err != nil {
			return fail(StopSetupFailed, err)
		}
		res.Server.DBSizeAfterPrefill = &n
		if n < int64(w.Keyspace) {
			return fail(StopSetupFailed, fmt.Errorf("prefill wrote %d keys but DBSIZE is %d", w.Keyspace, n))
		}
	}
	e.measure(ctx, opt.Progress, opt.OnPhase)
	e.collect(res)
	res.Ended = time.Now().UTC()
	return res, finishStop(ctx, res, e)
}

func newResult(w Workload, opt RunOptions) *Result {
	id := opt.RunID
	if id == "" {
		id = fmt.Sprintf("%s-%04x", time.Now().UTC().Format("20060102T150405Z"), rand.Intn(1<<16))
	}
	return &Result{
		Schema:   SchemaVersion,
		RunID:    id,
		Linerate: Build(),
		Started:  time.Now().UTC(),
		Given:    opt.Given,
		Workload: w,
		Ops:      map[Op]*OpResult{},
		Phases:   map[Phase]*PhaseTotals{},
		Errors:   map[ErrorKind]uint64{},
		Engine:   EngineInfo{Name: w.Engine},
		Window:   Window{Warmup: w.Warmup, Requested: w.Duration},
	}
}

func exitCodeFor(r StopReason) int {
	switch r {
	case StopCompleted:
		return ExitOK
	case StopErrors:
		return ExitErrors
	case StopSetupFailed:
		return ExitSetupFailed
	case StopServerLost:
		return ExitServerLost
	case StopInterrupted:
		return ExitInterrupted
	}
	return ExitErrors
}

func stopReasonFor(ctx context.Context, otherwise StopReason) StopReason {
	if ctx.Err() != nil {
		return StopInterrupted
	}
	return otherwise
}

// finishStop decides how the run ended from what the workers saw.
func finishStop(ctx context.Context, res *Result, e *engine) error {
	var errCount uint64
	for _, n := range res.Errors {
		errCount += n
	}
	reason := StopCompleted
	var err error
	switch {
	case ctx.Err() != nil:
		reason, err = StopInterrupted, errors.New("interrupted before the window closed")
	case e.allDead():
		reason, err = StopServerLost, fmt.Errorf("every connection failed: %w", e.firstErr())
	case errCount > 0:
		reason, err = StopErrors, fmt.Errorf("%d requests failed (see errors)", errCount)
	}
	res.Stop = Stop{Reason: reason, ExitCode: exitCodeFor(reason)}
	if err != nil {
		res.Stop.Error = err.Error()
		return &RunError{Reason: reason, Err: err}
	}
	return nil
}

// engine is the raw engine's coordinator: it owns the workers.
type engine struct {
	w       Workload
	layout  *ValueLayout
	workers []*worker
	stop    atomic.Bool
	sched   *schedule
	loop    func(*worker) // nil: the raw engine's epoll loop
	// prefillRanges assigns each worker its keys; nil: the raw engine's
	// per-connection ranges.
	prefillRanges func(per int)
	closers       []func()
	onLive        func(*Live) // RunOptions.Live; nil: nobody listens
	serverName    string

	procStart, procEnd threadUsage
	windowStart        time.Time
	windowEnd          time.Time
	stoppedAt          time.Time // when Ctrl-C stopped the run; zero otherwise
}

func newEngine(w Workload) (*engine, error) {
	e := &engine{w: w, layout: NewValueLayout(int64(w.ValueSz), w.Seed)}
	// Workers block in epoll_wait; each needs a P to run when it wakes, so
	// never let GOMAXPROCS be the queue they wait in.
	if runtime.GOMAXPROCS(0) < w.Threads+1 {
		runtime.GOMAXPROCS(w.Threads + 1)
	}
	auth := authCommand(w)
	for i := 0; i < w.Threads; i++ {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("epoll create: %w", err)
		}
		wk := e.newWorker(i)
		wk.auth, wk.epfd = auth, epfd
		wk.noTrunc = os.Getenv("LINERATE_NO_MSG_TRUNC") == "1"
		wk.scratch = make([]byte, scratchSize)
		for j := range wk.scratch { // fault the pages in now
			wk.scratch[j] = 0xff
		}
		e.workers = append(e.workers, wk)
	}
	keysPer := max(w.Keyspace/w.Connections, 1)
	for i := 0; i < w.Connections; i++ {
		wk := e.workers[i%w.Threads]
		fd, err := dialRaw(w.Addr(), 5*time.Second)
		if err == nil && auth != nil {
			if err = authRaw(fd, auth); err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("open connection %d to %s: %w", i, w.Addr(), err)
		}
		src := rand.NewSource(int64(w.Seed)*1_000_003 + int64(i))
		c := &rconn{
			fd: -1, index: i, wk: wk, rng: rand.New(src),
			cmd:     make([]byte, 0, 64+2*w.KeySize),
			q:       make([]req, w.Pipeline),
			rbuf:    make([]byte, recvBufSize),
			seqNext: uint32((i * keysPer) % w.Keyspace),
		}
		if w.KeyDist.Kind == KeyZipf {
			c.zipf = rand.NewZipf(c.rng, w.KeyDist.Alpha, 1, uint64(w.Keyspace-1))
		}
		wk.conns = append(wk.conns, c)
		if err := wk.register(c, fd); err != nil {
			unix.Close(fd)
			e.shutdown()
			return nil, err
		}
	}
	return e, nil
}

// newWorker makes a worker's recording state; the pages of its histograms
// are faulted in here, before anything is measured.
func (e *engine) newWorker(i int) *worker {
	wk := &worker{id: i, cpu: -1, w: &e.w, layout: e.layout, stop: &e.stop, addr: e.w.Addr(), epfd: -1}
	if len(e.w.CPUList) > 0 {
		wk.cpu = e.w.CPUList[i%len(e.w.CPUList)]
	}
	for op := range wk.measure {
		wk.measure[op].lat = newHistogram()
		wk.measure[op].ttfb = newHistogram()
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

// prefill writes every key once, each connection its own range.
func (e *engine) prefill(ctx context.Context, progress io.Writer) error {
	w := e.w
	per := (w.Keyspace + w.Connections - 1) / w.Connections
	if e.prefillRanges != nil {
		e.prefillRanges(per)
	} else {
		for _, wk := range e.workers {
			for _, c := range wk.conns {
				lo := min(c.index*per, w.Keyspace)
				c.seqNext, c.prefillEnd = uint32(lo), uint32(min(lo+per, w.Keyspace))
			}
		}
	}
	// Bounded: every connection may take a full request timeout per key.
	bound := time.Duration(per+1) * w.RequestTimeout.D()
	s := &schedule{base: time.Now(), prefillMode: true, drainEnd: int64(bound), seconds: 1}
	e.runWorkers(ctx, s, func(el time.Duration) {
		if progress != nil {
			fmt.Fprintf(progress, "prefill %4.0fs  %d/%d keys\n", el.Seconds(), e.progressOps(phPrefill), w.Keyspace)
		}
		e.tickLive(PhasePrefill, false)
	})
	e.tickLive(PhasePrefill, false) // its totals, however short it was
	var errs uint64
	for _, wk := range e.workers {
		for k := range wk.phases[phPrefill].errs {
			errs += wk.phases[phPrefill].errs[k]
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("prefill interrupted")
	}
	if errs > 0 || e.allDead() {
		return fmt.Errorf("prefill: %d of %d SETs failed (%v)", errs, w.Keyspace, e.firstErr())
	}
	if progress != nil {
		fmt.Fprintf(progress, "prefill done: %d keys of %s\n", w.Keyspace, Size(e.layout.Size))
	}
	// Restore each connection's own start for sequential access.
	keysPer := max(w.Keyspace/w.Connections, 1)
	for _, wk := range e.workers {
		for _, c := range wk.conns {
			c.seqNext = uint32((c.index * keysPer) % w.Keyspace)
		}
	}
	return nil
}

// tickLive hands the running totals to RunOptions.Live.
func (e *engine) tickLive(p Phase, final bool) {
	if e.onLive != nil {
		e.onLive(e.live(p, final))
	}
}

// measure runs warmup, the window and the drain. onPhase, when set, is
// called as each phase begins (warmup, measure, drain), off the workers'
// threads, so callers can cut host metrics to the measured window.
func (e *engine) measure(ctx context.Context, progress io.Writer, onPhase func(Phase)) {
	w := e.w
	base := time.Now()
	warm := int64(w.Warmup)
	end := warm + int64(w.Duration)
	secs := int((w.Duration.D() + time.Second - 1) / time.Second)
	s := &schedule{base: base, warmupEnd: warm, measureEnd: end, drainEnd: end + int64(w.RequestTimeout), seconds: secs}
	for _, wk := range e.workers {
		for op := range wk.measure {
			wk.measure[op].series = make([]secStat, secs)
			lat := make([]uint32, secs*latBuckets)
			for i := range lat { // fault the pages in now, not mid-window
				lat[i] = 0
			}
			wk.measure[op].secLat = lat
		}
	}
	// The window's edges are the schedule's, cut short by a stop; the
	// process's CPU is sampled at them by timers off the workers' threads,
	// which also deliver the phase marks. Everything the timers write is
	// under procMu, and closed keeps a timer that fires after the workers
	// finished from writing what collect reads.
	var procMu sync.Mutex
	closed := false
	var sampled [2]bool
	edge := func(i int, dst *threadUsage, next Phase) {
		procMu.Lock()
		defer procMu.Unlock()
		if closed {
			return
		}
		*dst, sampled[i] = getUsage(unix.RUSAGE_SELF), true
		if onPhase != nil {
			onPhase(next)
		}
	}
	if onPhase != nil {
		onPhase(PhaseWarmup)
	}
	t1 := time.AfterFunc(time.Duration(warm), func() { edge(0, &e.procStart, PhaseMeasure) })
	t2 := time.AfterFunc(time.Duration(end), func() { edge(1, &e.procEnd, PhaseDrain) })
	// The counters still hold the prefill's bytes: each line is the
	// difference since the last one, over the time since the last one.
	lastBytes, lastAt := e.progressBytes(), time.Duration(0)
	e.runWorkers(ctx, s, func(el time.Duration) {
		byt := e.progressBytes()
		if progress != nil {
			// The line is about the interval that just ended.
			phase := "measure"
			if lastAt < time.Duration(warm) {
				phase = "warmup "
			} else if lastAt >= time.Duration(end) {
				phase = "drain  "
			}
			gbps, ops := progressRates(byt-lastBytes, Size(e.layout.Size), el-lastAt)
			fmt.Fprintf(progress, "%s %3.0fs/%.0fs  %8.2f Gbps  %9.1f ops/s\n", phase, el.Seconds(),
				time.Duration(end).Seconds(), gbps, ops)
		}
		lastBytes, lastAt = byt, el
		switch {
		case el < time.Duration(warm):
			e.tickLive(PhaseWarmup, false)
		case el < time.Duration(end):
			e.tickLive(PhaseMeasure, false)
		default:
			e.tickLive(PhaseDrain, false)
		}
	})
	e.tickLive(PhaseDrain, true)
	t1.Stop()
	t2.Stop()
	finished := time.Now()
	procMu.Lock()
	defer procMu.Unlock()
	closed = true
	endAt := base.Add(time.Duration(end))
	if st := e.stoppedAt; !st.IsZero() && st.Before(endAt) {
		endAt = st
	}
	if finished.Before(endAt) { // every connection died
		endAt = finished
	}
	startAt := base.Add(time.Duration(warm))
	if endAt.Before(startAt) { // stopped before the window opened
		startAt = endAt
	}
	e.windowStart, e.windowEnd = startAt, endAt
	if !sampled[0] {
		e.procStart = getUsage(unix.RUSAGE_SELF)
	}
	if !sampled[1] {
		e.procEnd = getUsage(unix.RUSAGE_SELF)
		if sampled[0] && onPhase != nil {
			onPhase(PhaseDrain) // the workers beat the timer: close the window now
		}
	}
}
