package engine

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
)

// openStats is one worker's figures beyond closed loop's: pacing (sent,
// late, dropped), a ramp's steps, a mix's size classes and the probe. A
// paced request counts by its intended send time, so a request late into
// the next step still belongs to the step that meant to send it. Like the
// rest of a worker's state, only the worker writes it and collect reads it
// after the run; everything is allocated before the stage starts.
type openStats struct {
	// The main load's requests intended in the window: each due one is
	// completed, failed, dropped or unsent (countUnsent, at the end);
	// sent is completed + failed.
	sent, late, dropped       uint64
	completed, failed, unsent uint64
	// The main load's lateness by when each request was sent or dropped
	// in the window: the window's LatenessBins parts, and each ramp
	// step's (steps x LatenessBins).
	lateBins     [lab.LatenessBins]lab.LatenessBin
	stepLateBins []lab.LatenessBin

	steps   []stepStat // a ramp: per step
	stepLat []uint32   // steps x LatBuckets, latency from the intended time
	stepSvc []uint32   // steps x LatBuckets, service time

	service [2]*hdr.Histogram // per op in the window; nil unless paced

	classes  [2][]classStat // per op and size class of a mix; nil for one size
	classLat [2][]uint32    // classes x LatBuckets

	probe *probeStats // nil without --probe
}

type stepStat struct{ sent, ops, errs, late, dropped, unsent, bytes uint64 }

type classStat struct{ ops, bytes, errs uint64 }

// probeStats is the probe's figures: idle is its idle phase (alone, in
// the warmup), the rest the measured window, each by intended send time.
type probeStats struct {
	lat, svc, idle                 *hdr.Histogram
	sent, ops, errs, late, dropped uint64
	secOps                         []uint64 // per second of the window
	secLat                         []uint32 // seconds x LatBuckets
}

// inWindow says whether intended time at falls in the measured window.
func (s *schedule) inWindow(at int64) bool { return at >= s.warmupEnd && at < s.measureEnd }

// stepOf is the ramp step intended time at falls in; -1 outside the ramp.
func (s *schedule) stepOf(at int64) int {
	if s.stepLen == 0 || !s.inWindow(at) {
		return -1
	}
	return min(int((at-s.warmupEnd)/s.stepLen), s.steps-1)
}

// binOf is the part of the window (of LatenessBins) time t falls in; t
// must be in the window.
func (s *schedule) binOf(t int64) int {
	return min(int((t-s.warmupEnd)*lab.LatenessBins/(s.measureEnd-s.warmupEnd)), lab.LatenessBins-1)
}

// stepBinOf is the part of ramp step i (of LatenessBins) t falls in.
func (s *schedule) stepBinOf(i int, t int64) int {
	return i*lab.LatenessBins + min(int((t-s.warmupEnd-int64(i)*s.stepLen)*lab.LatenessBins/s.stepLen), lab.LatenessBins-1)
}

// addLate files the lateness of a main-load request sent or dropped at t
// (whenever it was intended): how far behind its schedule the queue was
// then. Outside the window it is nothing.
func (w *worker) addLate(t, late int64) {
	if !w.sched.inWindow(t) {
		return
	}
	b := &w.open.lateBins[w.sched.binOf(t)]
	b.N++
	b.Sum += float64(late)
	if i := w.sched.stepOf(t); i >= 0 {
		b := &w.open.stepLateBins[w.sched.stepBinOf(i, t)]
		b.N++
		b.Sum += float64(late)
	}
}

// issuedPaced counts a paced request started at t, intended at at.
func (w *worker) issuedPaced(at, t int64, probe bool) {
	late := isLate(t, at)
	if probe {
		if p := w.open.probe; p != nil && w.sched.inWindow(at) {
			p.sent++
			p.late += b2u(late)
		}
		return
	}
	w.addLate(t, t-at)
	if w.sched.inWindow(at) {
		w.open.sent++
		w.open.late += b2u(late)
	}
	if i := w.sched.stepOf(at); i >= 0 {
		w.open.steps[i].sent++
		w.open.steps[i].late += b2u(late)
	}
}

// dropped counts a paced request never sent, intended at at and given up
// at t: it would have waited past the queue limit.
func (w *worker) dropped(at, t int64, probe bool) {
	if probe {
		if p := w.open.probe; p != nil && w.sched.inWindow(at) {
			p.dropped++
		}
		return
	}
	w.addLate(t, t-at)
	if w.sched.inWindow(at) {
		w.open.dropped++
	}
	if i := w.sched.stepOf(at); i >= 0 {
		w.open.steps[i].dropped++
	}
}

// countUnsent counts the main load's requests of the window that were
// still owed when it ended at end (ns since base; before the schedule's
// end when the run was stopped): neither sent nor dropped.
func (w *worker) countUnsent(end int64) {
	end = min(end, w.sched.measureEnd)
	count := func(p *pacing) {
		if p.sched == nil || p.probe {
			return
		}
		for n := p.sent; ; n++ {
			d, ok := p.sched.Intended(n)
			at := int64(d)
			if !ok || at >= end {
				return
			}
			if !w.sched.inWindow(at) {
				continue
			}
			w.open.unsent++
			if i := w.sched.stepOf(at); i >= 0 {
				w.open.steps[i].unsent++
			}
		}
	}
	for _, c := range w.conns {
		count(&c.pacing)
	}
	if w.vk != nil {
		count(&w.vk.pacing)
	}
}

// settled files a main-load request of the window that was sent and
// ended: answered (kind ok) or failed, abandoned included.
func (w *worker) settled(r *req, kind errIdx) {
	if !r.paced || r.probe || !w.sched.inWindow(r.intended) {
		return
	}
	if kind == ok {
		w.open.completed++
	} else {
		w.open.failed++
	}
}

// abandon cuts off the requests still queued on c: they fail unanswered
// (the run ended, or the connection was reset under them).
func (c *rconn) abandon() {
	c.wk.abandoned += uint64(c.qLen)
	for i := 0; i < c.qLen; i++ {
		r := &c.q[(c.qHead+i)%len(c.q)]
		c.wk.settled(r, eConn)
	}
	c.qLen, c.sending = 0, false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// recordStep files a paced request of the main load in its ramp step,
// whatever phase it completed in (the last step's end in the drain).
func (w *worker) recordStep(r *req, kind errIdx, miss bool, t, from, sent int64) {
	i := w.sched.stepOf(r.intended)
	if i < 0 {
		return
	}
	st := &w.open.steps[i]
	switch {
	case kind != ok:
		st.errs++
	case !miss:
		st.ops++
		st.bytes += uint64(r.size)
		w.open.stepLat[i*lab.LatBuckets+lab.LatBucket((t-from)/1000)]++
		w.open.stepSvc[i*lab.LatBuckets+lab.LatBucket((t-sent)/1000)]++
	}
}

// recordClass files a request of the window in its size class; lat is
// its latency in ns when it succeeded.
func (w *worker) recordClass(r *req, kind errIdx, lat int64) {
	cs := w.open.classes[r.op]
	if cs == nil || r.class < 0 {
		return
	}
	c := &cs[r.class]
	if kind != ok {
		c.errs++
		return
	}
	c.ops++
	c.bytes += uint64(r.size)
	w.open.classLat[r.op][int(r.class)*lab.LatBuckets+lab.LatBucket(lat/1000)]++
}

// recordProbe files a probe GET: alone (intended in the warmup's second
// quarter, before the main load starts) or under load (intended in the
// window); the rest of the warmup is neither.
func (w *worker) recordProbe(r *req, kind errIdx, miss bool, t, from, sent int64) {
	p := w.open.probe
	if p == nil || !r.paced {
		return // the prefill's SETs
	}
	good := kind == ok && !miss
	switch {
	case r.intended < w.sched.mainStart:
		if good && r.intended >= w.sched.idleStart {
			lab.RecordUs(p.idle, t-from)
		}
	case w.sched.inWindow(r.intended):
		if !good {
			p.errs++
			return
		}
		p.ops++
		lab.RecordUs(p.lat, t-from)
		lab.RecordUs(p.svc, t-sent)
		sec := min(int((r.intended-w.sched.warmupEnd)/int64(time.Second)), len(p.secOps)-1)
		p.secOps[sec]++
		p.secLat[sec*lab.LatBuckets+lab.LatBucket((t-from)/1000)]++
	}
}

// prepareOpen allocates a worker's open-loop state for the measure stage:
// steps for a ramp, classes for a mix, histograms for what is paced.
func (w *worker) prepareOpen(wl *lab.Workload, s *schedule, probe bool) {
	o := &w.open
	*o = openStats{}
	if wl.OpenLoop() {
		for op := range o.service {
			o.service[op] = lab.NewHistogram()
		}
	}
	if s.steps > 0 {
		o.steps = make([]stepStat, s.steps)
		o.stepLateBins = make([]lab.LatenessBin, s.steps*lab.LatenessBins)
		o.stepLat = make([]uint32, s.steps*lab.LatBuckets)
		o.stepSvc = make([]uint32, s.steps*lab.LatBuckets)
	}
	if _, one := wl.ValueSz.Single(); !one {
		n := len(wl.ValueSz.Classes())
		for op := range o.classes {
			o.classes[op] = make([]classStat, n)
			o.classLat[op] = make([]uint32, n*lab.LatBuckets)
		}
	}
	if probe {
		o.probe = &probeStats{lat: lab.NewHistogram(), svc: lab.NewHistogram(), idle: lab.NewHistogram(),
			secOps: make([]uint64, s.seconds), secLat: make([]uint32, s.seconds*lab.LatBuckets)}
	}
}
