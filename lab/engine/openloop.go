package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

// Open loop: the run's schedules, built before it starts, and
// their figures, merged after it stops.
//
// The main load's schedule runs from its start (0, or after the probe's
// idle phase: lab.Workload.ProbePhases) to the end of the window: --rate
// at its rate throughout; --ramp at its first step's rate in the warmup,
// then its steps, which are the window. Each issuing
// unit (a raw connection, a valkey-go worker) sends its own share of it
// (pace.Chain.Share), so a request whose connection is busy waits in that
// connection's queue, and the queue's wait is in its latency. The probe's
// schedule runs from the start to the end of the window, shared over its
// connections.

// Seeds of the schedules' poisson draws, apart from each other and from
// the key and op choice.
const (
	warmSeed  = 0x3a11
	probeSeed = 0x9b0be
)

// planPacing builds the schedules of a paced run and sets the units'
// pacers; a closed-loop run keeps none.
func (e *engine) planPacing() error {
	w := e.w
	if !w.Paced() {
		return nil
	}
	sched := measureSchedule(w, time.Time{})
	warm, end := time.Duration(sched.warmupEnd), time.Duration(sched.measureEnd)
	start := time.Duration(sched.mainStart)
	main, err := mainSchedule(w, start, warm, end)
	if err != nil {
		return err
	}
	units := w.Connections
	if w.Engine == lab.EngineValkeyGo {
		units = w.Connections * w.Pipeline
	}
	switch {
	case main != nil:
		shares, err := shareOut(main, units)
		if err != nil {
			return err
		}
		e.pacers = func(unit int) pace.Pacer { return shares[unit] }
	case start > 0:
		e.pacers = func(int) pace.Pacer { return pace.After(start) }
	}
	if w.Probe.IsZero() {
		return nil
	}
	ops, err := w.Probe.OpsPerSec()
	if err != nil {
		return fmt.Errorf("--probe %s: %w", w.Probe, err)
	}
	s, err := pace.Constant(ops, end, w.Arrival, w.Seed^probeSeed)
	if err != nil {
		return fmt.Errorf("--probe %s: %w", w.Probe, err)
	}
	probe, err := pace.NewChain(0, s)
	if err != nil {
		return err
	}
	shares, err := shareOut(probe, lab.ProbeConnections)
	if err != nil {
		return err
	}
	e.probePacers = func(unit int) pace.Pacer { return shares[unit] }
	return nil
}

// mainSchedule is the main load's schedule from start to end, its window
// from warm; nil in closed loop.
func mainSchedule(w lab.Workload, start, warm, end time.Duration) (*pace.Chain, error) {
	mean := w.MeanValueBytes()
	switch {
	case !w.Rate.IsZero():
		s, err := pace.FromRate(w.Rate, mean, end-start, w.Arrival, w.Seed)
		if err != nil {
			return nil, fmt.Errorf("--rate %s: %w", w.Rate, err)
		}
		return pace.NewChain(start, s)
	case !w.Ramp.IsZero():
		steps, err := pace.FromRamp(w.Ramp, mean, w.Arrival, w.Seed)
		if err != nil {
			return nil, err
		}
		if warm <= start {
			return pace.NewChain(warm, steps)
		}
		first, err := pace.Constant(steps.Rate(0), warm-start, w.Arrival, w.Seed^warmSeed)
		if err != nil {
			return nil, err
		}
		return pace.NewChain(start, first, steps)
	}
	return nil, nil
}

// shareOut is one share of c per unit.
func shareOut(c *pace.Chain, units int) ([]*pace.Chain, error) {
	out := make([]*pace.Chain, units)
	for i := range out {
		var err error
		if out[i], err = c.Share(i, units); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// offered is the main load's offered rate in requests per second: the
// rate, or a ramp's step rates (a bit rate over the keys' mean size).
func offered(w lab.Workload) (rate float64, steps []float64) {
	mean := w.MeanValueBytes()
	if !w.Ramp.IsZero() {
		steps, _ = w.Ramp.StepRates(mean) // validated with the workload
		var sum float64
		for _, r := range steps {
			sum += r
		}
		return sum / float64(len(steps)), steps
	}
	rate, _ = w.Rate.OpsPerSec(mean)
	return rate, nil
}

// collectOpen merges the open-loop figures into res, after collect's
// per-op figures: the pacing, a ramp's steps and knee, the probe, and a
// mix's realized sizes (with a warning when -n is too few for it).
func (e *engine) collectOpen(res *lab.Result, window time.Duration) {
	w := e.w
	if _, one := w.ValueSz.Single(); !one {
		r := w.ValueSz.Realize(w.Seed, w.Keyspace)
		res.SizeMix = &r
		if warn := w.ValueSz.Warning(w.Seed, w.Keyspace); warn != "" {
			res.Notes = append(res.Notes, warn)
		}
	}
	if w.OpenLoop() {
		rate, rates := offered(w)
		ol := &lab.OpenLoopResult{Arrival: w.Arrival, QueueLimit: w.QueueLimit, Offered: round3(rate)}
		var bins [lab.LatenessBins]lab.LatenessBin
		for _, wk := range e.workers {
			o := &wk.open
			ol.Sent += o.sent
			ol.Late += o.late
			ol.Dropped += o.dropped
			ol.Completed += o.completed
			ol.Failed += o.failed
			ol.Unsent += o.unsent
			addLateBins(bins[:], o.lateBins[:])
		}
		ol.Due = ol.Completed + ol.Failed + ol.Dropped + ol.Unsent
		if ol.Sent != ol.Completed+ol.Failed {
			res.Notes = append(res.Notes, fmt.Sprintf("open loop: %d requests of the window sent, %d completed and %d failed: the accounting does not close", ol.Sent, ol.Completed, ol.Failed))
		}
		var done uint64
		for _, o := range res.Ops {
			done += o.Ops
		}
		if window > 0 {
			ol.Achieved = round3(float64(done) / window.Seconds())
		}
		if slope, ok := lab.LatenessSlope(bins[:], time.Duration(w.Duration)); ok {
			ol.LatenessSlope = round4(slope)
		}
		lab.JudgeOpenLoop(ol) // the summary prints ol.Why()
		res.OpenLoop = ol
		if rates != nil {
			res.Steps = e.collectSteps(rates)
			res.Knee = pace.Knee(res.Steps)
		}
	}
	if !w.Probe.IsZero() {
		res.Probe = e.collectProbe(res)
	}
}

// collectSteps merges the workers' steps.
func (e *engine) collectSteps(rates []float64) []lab.StepResult {
	step := e.w.Ramp.Step
	out := make([]lab.StepResult, len(rates))
	lat := make([]uint64, lab.LatBuckets)
	svc := make([]uint64, lab.LatBuckets)
	bins := make([]lab.LatenessBin, lab.LatenessBins)
	for i := range out {
		s := lab.StepResult{Step: i, Start: lab.Duration(time.Duration(i) * step.D()), Length: step, Offered: round3(rates[i])}
		clear(lat)
		clear(svc)
		clear(bins)
		var bytes uint64
		for _, wk := range e.workers {
			if len(wk.open.steps) <= i {
				continue
			}
			st := wk.open.steps[i]
			s.Sent += st.sent
			s.Ops += st.ops
			s.Errors += st.errs
			s.Late += st.late
			s.Dropped += st.dropped
			s.Unsent += st.unsent
			bytes += st.bytes
			addLateBins(bins, wk.open.stepLateBins[i*lab.LatenessBins:(i+1)*lab.LatenessBins])
			addBuckets(lat, wk.open.stepLat[i*lab.LatBuckets:(i+1)*lab.LatBuckets])
			addBuckets(svc, wk.open.stepSvc[i*lab.LatBuckets:(i+1)*lab.LatBuckets])
		}
		s.Achieved = round3(float64(s.Ops) / step.Seconds())
		s.Gbps = round3(float64(bytes) * 8 / 1e9 / step.Seconds())
		s.Latency, s.Service = bucketLatency(lat), bucketLatency(svc)
		if slope, ok := lab.LatenessSlope(bins, step.D()); ok {
			s.LatenessSlope = round4(slope)
		}
		out[i] = s
	}
	return out
}

// collectSizes is one op's figures per size class of the mix; nil for one
// size.
func (e *engine) collectSizes(opi int, window time.Duration) []lab.SizeResult {
	classes := e.w.ValueSz.Classes()
	if e.mix == nil {
		return nil
	}
	out := make([]lab.SizeResult, len(classes))
	lat := make([]uint64, lab.LatBuckets)
	for i, class := range classes {
		r := lab.SizeResult{Class: class}
		clear(lat)
		for _, wk := range e.workers {
			cs := wk.open.classes[opi]
			if len(cs) <= i {
				continue
			}
			r.Ops += cs[i].ops
			r.PayloadBytes += cs[i].bytes
			r.Errors += cs[i].errs
			addBuckets(lat, wk.open.classLat[opi][i*lab.LatBuckets:(i+1)*lab.LatBuckets])
		}
		if window > 0 {
			r.Gbps = round3(float64(r.PayloadBytes) * 8 / 1e9 / window.Seconds())
		}
		r.Latency = bucketLatency(lat)
		out[i] = r
	}
	return out
}

// collectProbe merges the probe's figures and states what the main load
// added to its p99, with that difference's noise band.
func (e *engine) collectProbe(res *lab.Result) *lab.ProbeResult {
	w := e.w
	ops, _ := w.Probe.OpsPerSec()
	p := &lab.ProbeResult{Probe: w.Probe, Offered: round3(ops), Connections: lab.ProbeConnections}
	lat, svc, idle := lab.NewHistogram(), lab.NewHistogram(), lab.NewHistogram()
	secs := 0
	for _, wk := range e.workers {
		if ps := wk.open.probe; ps != nil {
			lat.Merge(ps.lat)
			svc.Merge(ps.svc)
			idle.Merge(ps.idle)
			p.Sent += ps.sent
			p.Ops += ps.ops
			p.Errors += ps.errs
			p.Late += ps.late
			p.Dropped += ps.dropped
			secs = max(secs, len(ps.secOps))
		}
	}
	var err error
	if p.Latency, err = lab.Summarize(lat); err != nil {
		res.Notes = append(res.Notes, "probe: "+err.Error())
	}
	if p.Service, err = lab.Summarize(svc); err != nil {
		res.Notes = append(res.Notes, "probe: "+err.Error())
	}
	if p.Idle, err = lab.Summarize(idle); err != nil {
		res.Notes = append(res.Notes, "probe: "+err.Error())
	}
	idleStart, mainStart, _, planned := w.ProbePhases()
	p.IdleLength = lab.Duration(mainStart - idleStart)
	if n := p.Idle.Count; n < lab.ProbeIdleSamples {
		p.IdleShort = true
		why := fmt.Sprintf("its %s alone planned about %.0f; the rest failed, were dropped or did not arrive", p.IdleLength, planned)
		if planned < lab.ProbeIdleSamples {
			why = fmt.Sprintf("at %.4g/s its %s alone (at most %s) plan only %.0f", ops, p.IdleLength, lab.MaxProbeIdle, planned)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("probe: the idle p99 rests on %d GETs, fewer than %d: %s; its band is wide", n, lab.ProbeIdleSamples, why))
	}
	if p.Latency.Count > 0 && p.Idle.Count > 0 {
		lLo, lHi := lab.P99Interval(lat)
		iLo, iHi := lab.P99Interval(idle)
		var measurable bool
		p.AddedP99, p.AddedLow, p.AddedHigh, measurable = lab.AddedP99(p.Latency.P99, lLo, lHi, p.Idle.P99, iLo, iHi)
		p.NoEffect = !measurable
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("probe: %d GETs completed alone and %d under load: no added latency to state", p.Idle.Count, p.Latency.Count))
	}
	counts := make([]uint64, lab.LatBuckets)
	for i := 0; i < secs; i++ {
		sec := lab.ProbeSecond{Second: i}
		clear(counts)
		for _, wk := range e.workers {
			if ps := wk.open.probe; ps != nil && i < len(ps.secOps) {
				sec.Ops += ps.secOps[i]
				addBuckets(counts, ps.secLat[i*lab.LatBuckets:(i+1)*lab.LatBuckets])
			}
		}
		if l := bucketLatency(counts); l != nil {
			sec.P99 = l.P99
		}
		p.Series = append(p.Series, sec)
	}
	if p.Dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("probe: %d GETs would have waited more than --queue-limit %s and were dropped: the probe's latency is a floor", p.Dropped, w.QueueLimit))
	}
	return p
}

func addLateBins(dst, src []lab.LatenessBin) {
	for i, b := range src {
		dst[i].N += b.N
		dst[i].Sum += b.Sum
	}
}

// round4 keeps a slope's four decimals: a tenth of the verdict's bound.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

func addBuckets(dst []uint64, src []uint32) {
	for i, n := range src {
		dst[i] += uint64(n)
	}
}

// bucketLatency reads count, p50, p95 and p99 from log-histogram buckets
// (each value a bucket's middle, within ±5%); nil when they are empty.
func bucketLatency(counts []uint64) *lab.StepLatency {
	var total uint64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return nil
	}
	return &lab.StepLatency{Count: int64(total), P50: bucketQuantile(counts, total, 50),
		P95: bucketQuantile(counts, total, 95), P99: bucketQuantile(counts, total, 99)}
}

// bucketQuantile is the pct-th percentile of the buckets: the middle of
// the bucket where the rank, rounded to nearest, is reached.
func bucketQuantile(counts []uint64, total, pct uint64) float64 {
	// HdrHistogram's rank rule (round, not ceil), so the per-second
	// histograms of the .hlog give the series' p99 exactly.
	target := min(max((total*pct*2+100)/200, 1), total)
	var cum uint64
	for b, n := range counts {
		if cum += n; cum >= target {
			return math.Round(lab.LatBucketValue(b))
		}
	}
	return 0
}
