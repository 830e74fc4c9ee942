package engine

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
)

// prefill writes every key once, each issuing unit its own share.
func (e *engine) prefill(ctx context.Context, progress io.Writer) error {
	w := e.w
	for _, ch := range e.choosers {
		ch.startPrefill()
	}
	// Bounded: every connection may take a full request timeout per key
	// of its share.
	per := (w.Keyspace + w.Connections - 1) / w.Connections
	bound := time.Duration(per+1) * w.RequestTimeout.D()
	s := &schedule{base: time.Now(), prefillMode: true, drainEnd: int64(bound), seconds: 1}
	e.runWorkers(ctx, s, func(el time.Duration) {
		if progress != nil {
			fmt.Fprintf(progress, "prefill %4.0fs  %d/%d keys\n", el.Seconds(), e.progressOps(phPrefill), w.Keyspace)
		}
		e.tickLive(lab.PhasePrefill, false)
	})
	e.tickLive(lab.PhasePrefill, false) // its totals, however short it was
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
		fmt.Fprintf(progress, "prefill done: %d keys of %s\n", w.Keyspace, w.ValueSz)
	}
	for _, ch := range e.choosers {
		ch.endPrefill()
	}
	return nil
}

// measureSchedule is the warmup, window and drain of w from base.
func measureSchedule(w lab.Workload, base time.Time) *schedule {
	idle, main, warmEnd, _ := w.ProbePhases()
	warm := int64(warmEnd)
	end := warm + int64(w.Duration)
	secs := int((w.Duration.D() + time.Second - 1) / time.Second)
	s := &schedule{base: base, warmupEnd: warm, measureEnd: end, drainEnd: end + drainFor(w.Pipeline, int64(w.RequestTimeout)), seconds: secs}
	s.idleStart, s.mainStart = int64(idle), int64(main)
	if !w.Ramp.IsZero() {
		s.stepLen, s.steps = int64(w.Ramp.Step), w.Ramp.Steps
	}
	return s
}

// measure runs warmup, the window and the drain. onPhase, when set, is
// called as each phase begins (warmup, measure, drain), off the workers'
// threads, so callers can cut host metrics to the measured window.
// prepareWindow gives every worker its per-second series for s, faulted
// in now, not mid-window.
func (e *engine) prepareWindow(s *schedule) {
	for _, wk := range e.workers {
		wk.prepareOpen(&e.w, s, wk.probe)
		for op := range wk.measure {
			wk.measure[op].series = make([]secStat, s.seconds)
			lat := make([]uint32, s.seconds*lab.LatBuckets)
			for i := range lat {
				lat[i] = 0
			}
			wk.measure[op].secLat = lat
		}
	}
}

// measureTicker is the measured stage's tick, once a second: a progress
// line and the live totals. The counters still hold the prefill's bytes:
// each line is the difference since the last one, over the time since.
func (e *engine) measureTicker(progress io.Writer, warm, end time.Duration) func(time.Duration) {
	lastOps, lastBytes := e.progressTotals()
	lastAt := time.Duration(0)
	return func(el time.Duration) {
		n, byt := e.progressTotals()
		if progress != nil {
			// The line is about the interval that just ended.
			phase := "measure"
			if lastAt < warm {
				phase = "warmup "
			} else if lastAt >= end {
				phase = "drain  "
			}
			gbps, ops := progressRates(byt-lastBytes, n-lastOps, el-lastAt)
			fmt.Fprintf(progress, "%s %3.0fs/%.0fs  %8.2f Gbps  %9.1f ops/s\n", phase, el.Seconds(), end.Seconds(), gbps, ops)
		}
		lastOps, lastBytes, lastAt = n, byt, el
		switch {
		case el < warm:
			e.tickLive(lab.PhaseWarmup, false)
		case el < end:
			e.tickLive(lab.PhaseMeasure, false)
		default:
			e.tickLive(lab.PhaseDrain, false)
		}
	}
}

func (e *engine) measure(ctx context.Context, progress io.Writer, onPhase func(lab.Phase)) {
	s := measureSchedule(e.w, time.Now())
	base, warm, end := s.base, s.warmupEnd, s.measureEnd
	e.prepareWindow(s)
	// The window's edges are the schedule's, cut short by a stop; the
	// process's CPU is sampled at them by timers off the workers' threads,
	// which also deliver the phase marks. Everything the timers write is
	// under procMu, and closed keeps a timer that fires after the workers
	// finished from writing what collect reads.
	var procMu sync.Mutex
	closed := false
	var sampled [2]bool
	edge := func(i int, dst *threadUsage, next lab.Phase) {
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
		onPhase(lab.PhaseWarmup)
	}
	t1 := time.AfterFunc(time.Duration(warm), func() { edge(0, &e.procStart, lab.PhaseMeasure) })
	t2 := time.AfterFunc(time.Duration(end), func() { edge(1, &e.procEnd, lab.PhaseDrain) })
	e.runWorkers(ctx, s, e.measureTicker(progress, time.Duration(warm), time.Duration(end)))
	e.tickLive(lab.PhaseDrain, true)
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
	// Workers end early when every connection died, or when a schedule
	// has no more requests (its last was meant just before the end): the
	// window is the schedule's all the same.
	if finished.Before(endAt) && e.allDead() {
		endAt = finished
	}
	startAt := base.Add(time.Duration(warm))
	if endAt.Before(startAt) { // stopped before the window opened
		startAt = endAt
	}
	e.windowStart, e.windowEnd = startAt, endAt
	for _, wk := range e.workers {
		wk.countUnsent(int64(endAt.Sub(base)))
	}
	if !sampled[0] {
		e.procStart = getUsage(unix.RUSAGE_SELF)
	}
	if !sampled[1] {
		e.procEnd = getUsage(unix.RUSAGE_SELF)
		if sampled[0] && onPhase != nil {
			onPhase(lab.PhaseDrain) // the workers beat the timer: close the window now
		}
	}
}
