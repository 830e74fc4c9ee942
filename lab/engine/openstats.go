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
	sent, late, dropped uint64 // the main load, intended in the window

	steps   []stepStat // a ramp: per step
	stepLat []uint32   // steps x LatBuckets, latency from the intended time
	stepSvc []uint32   // steps x LatBuckets, service time

	service [2]*hdr.Histogram // per op in the window; nil unless paced

	classes  [2][]classStat // per op and size class of a mix; nil for one size
	classLat [2][]uint32    // classes x LatBuckets

	probe *probeStats // nil without --probe
}

type stepStat struct{ sent, ops, errs, late, dropped, bytes uint64 }

type classStat struct{ ops, bytes, errs uint64 }

// probeStats is the probe's figures: idle is the warmup's first half,
// the rest the measured window, each by intended send time.
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
	if w.sched.inWindow(at) {
		w.open.sent++
		w.open.late += b2u(late)
	}
	if i := w.sched.stepOf(at); i >= 0 {
		w.open.steps[i].sent++
		w.open.steps[i].late += b2u(late)
	}
}

// dropped counts a paced request never sent: it would have waited past
// the queue limit.
func (w *worker) dropped(at int64, probe bool) {
	if probe {
		if p := w.open.probe; p != nil && w.sched.inWindow(at) {
			p.dropped++
		}
		return
	}
	if w.sched.inWindow(at) {
		w.open.dropped++
	}
	if i := w.sched.stepOf(at); i >= 0 {
		w.open.steps[i].dropped++
	}
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
