package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/linerate/linerate/lab"
)

// minOpsForFigure: fewer completed requests make a coarse figure, and the
// record says so.
const minOpsForFigure = 20

// collect merges the workers' state into res, after they stopped: each
// worker's figures are its own (record.go), merged here one worker at a
// time into one set per operation and phase, then turned into the record.
func (e *engine) collect(res *lab.Result) {
	window := max(e.windowEnd.Sub(e.windowStart), 0)
	_, _, warm, _ := e.w.ProbePhases() // a probe's idle phase can lengthen the warmup
	res.Window = lab.Window{Warmup: lab.Duration(warm), Requested: e.w.Duration, Measured: lab.Duration(window)}
	if !e.windowStart.IsZero() {
		start := e.windowStart.UTC()
		res.Window.Start = &start
	}
	if e.route != nil {
		res.Cluster = e.clusterRecord()
	}
	e.kind.describe(e, res)
	var totalOps, totalPayload uint64
	for opi := range opNames {
		op := e.opName(phMeasure, opi)
		if (op.Base() == lab.OpGet && e.w.Ratio.Gets == 0) || (op.Base() == lab.OpSet && e.w.Ratio.Sets == 0) {
			continue
		}
		or := e.opResult(opi, op, window, res)
		res.Ops[op] = or
		totalOps += or.Ops
		totalPayload += or.PayloadBytes
	}
	res.MarkEdgeBias()
	e.collectPhases(res)
	res.Client = e.clientUsage(window, totalOps, totalPayload)
	res.Notes = append(res.Notes, res.Client.Notes()...)
	e.collectOpen(res, window)
	if !e.kind.threadFigures() {
		res.Notes = append(res.Notes, "valkey-go engine: no per-worker CPU or TTFB; a client limit cannot be told from this record (use the raw engine)")
	}
}

// merge adds another worker's figures of the same operation to s.
func (s *opStats) merge(o *opStats) {
	s.lat.Merge(o.lat)
	s.ttfb.Merge(o.ttfb)
	s.clamped += o.clamped
	s.ops += o.ops
	s.payload += o.payload
	s.wireOut += o.wireOut
	s.wireIn += o.wireIn
	s.misses += o.misses
	s.checked += o.checked
	s.fails += o.fails
	for k, n := range o.errs {
		s.errs[k] += n
	}
	for len(s.series) < len(o.series) {
		s.series = append(s.series, secStat{})
	}
	for i, x := range o.series {
		s.series[i].ops += x.ops
		s.series[i].bytes += x.bytes
		s.series[i].errors += x.errors
	}
	if n := len(o.secLat) - len(s.secLat); n > 0 {
		s.secLat = append(s.secLat, make([]uint32, n)...)
	}
	for i, n := range o.secLat {
		s.secLat[i] += n
	}
}

// merged is operation opi's figures over every worker.
func (e *engine) merged(opi int) *opStats {
	all := &opStats{lat: lab.NewHistogram(), ttfb: lab.NewHistogram()}
	for _, wk := range e.workers {
		all.merge(&wk.measure[opi])
	}
	return all
}

// opResult is operation opi's record over the window; its notes go to res.
func (e *engine) opResult(opi int, op lab.Op, window time.Duration, res *lab.Result) *lab.OpResult {
	st := e.merged(opi)
	or := &lab.OpResult{Verify: lab.VerifyCounts{Mode: e.w.Verify, Checked: st.checked, Failed: st.fails},
		Ops: st.ops, PayloadBytes: st.payload, WireSent: st.wireOut, WireRecvd: st.wireIn, Misses: st.misses}
	for k, n := range st.errs {
		if n > 0 {
			if or.Errors == nil {
				or.Errors = map[lab.ErrorKind]uint64{}
			}
			or.Errors[errorKinds[k]] += n
		}
	}
	or.Series = secondSeries(st, op, window, res)
	if e.route != nil {
		or.Redirects = &lab.Redirects{}
		for _, wk := range e.workers {
			or.Redirects.Moved += wk.redir[phMeasure][opi][redirMoved]
			or.Redirects.Ask += wk.redir[phMeasure][opi][redirAsk]
		}
	}
	if window > 0 {
		or.OpsPerSec = round3(float64(or.Ops) / window.Seconds())
		or.Gbps = round3(float64(or.PayloadBytes) * 8 / 1e9 / window.Seconds())
	}
	var err error
	if or.Latency, err = lab.Summarize(st.lat); err != nil {
		res.Notes = append(res.Notes, err.Error())
	}
	if e.w.OpenLoop() {
		or.Service = e.serviceSummary(opi, res)
	}
	or.Sizes = e.collectSizes(opi, window)
	if op.Base() == lab.OpGet && e.kind.threadFigures() { // valkey-go does not show the first reply byte
		s, err := lab.Summarize(st.ttfb)
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
		or.TTFB = &s
	}
	opNotes(res, op, or.Ops, st.clamped, window)
	return or
}

// serviceSummary is a paced run's service time of operation opi, from
// the real send.
func (e *engine) serviceSummary(opi int, res *lab.Result) *lab.LatencySummary {
	svc := lab.NewHistogram()
	for _, wk := range e.workers {
		if h := wk.open.service[opi]; h != nil {
			svc.Merge(h)
		}
	}
	s, err := lab.Summarize(svc)
	if err != nil {
		res.Notes = append(res.Notes, err.Error())
	}
	return &s
}

// opNotes says when an operation's figure rests on few requests, or
// latencies were clamped.
func opNotes(res *lab.Result, op lab.Op, ops, clamped uint64, window time.Duration) {
	if window > 0 && ops > 0 && ops < minOpsForFigure {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: only %d requests completed in the %s window: one more or less moves the figure by %.0f%%; lengthen -d",
			op, ops, window.Round(time.Millisecond), 100/float64(ops)))
	}
	if clamped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: %d latencies above one hour were recorded as one hour", op, clamped))
	}
}

// secondSeries is the merged per-second figures: counts, each second's
// p99 and histogram from its latency buckets, and its rate (the last
// second may be partial when the window was cut short).
func secondSeries(st *opStats, op lab.Op, window time.Duration, res *lab.Result) []lab.SecondSample {
	series := make([]lab.SecondSample, len(st.series))
	secHist := lab.NewHistogram() // reused for every second
	counts := make([]uint64, lab.LatBuckets)
	for i, s := range st.series {
		series[i] = lab.SecondSample{Second: i, Ops: s.ops, PayloadBytes: s.bytes, Errors: s.errors}
		clear(counts)
		addBuckets(counts, st.secLat[i*lab.LatBuckets:(i+1)*lab.LatBuckets])
		var total uint64
		for _, n := range counts {
			total += n
		}
		if total > 0 {
			series[i].P99 = bucketQuantile(counts, total, 99)
			var err error
			if series[i].Histogram, err = lab.EncodeSecond(secHist, counts); err != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("%s second %d: %v", op, i, err))
			}
		}
		span := time.Second
		if rest := window - time.Duration(i)*time.Second; rest < span {
			span = max(rest, 0)
		}
		if span > 0 {
			series[i].Gbps = round3(float64(series[i].PayloadBytes) * 8 / 1e9 / span.Seconds())
		}
	}
	return series
}

// collectPhases fills in every phase's totals, the run's errors by kind
// and its abandoned requests.
func (e *engine) collectPhases(res *lab.Result) {
	for pi, ph := range phaseOrder {
		pt := &lab.PhaseTotals{Ops: map[lab.Op]uint64{}}
		any := false
		for _, wk := range e.workers {
			ps := &wk.phases[pi]
			for op, n := range ps.ops {
				if n > 0 {
					pt.Ops[e.opName(pi, op)] += n
					any = true
				}
			}
			pt.WireSent += ps.wireOut
			pt.WireRecvd += ps.wireIn
			for k, n := range ps.errs {
				if n > 0 {
					res.Errors[errorKinds[k]] += n
				}
			}
		}
		if any {
			res.Phases[ph] = pt
		}
	}
	for _, wk := range e.workers {
		res.Abandoned += wk.abandoned
	}
	if res.Abandoned > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d requests were cut off unanswered (in flight when the run ended, or queued behind a timed-out request on its connection) and are not counted", res.Abandoned))
	}
}

// clientUsage is the client's cost over the window: the process's, and
// each pinned worker's.
func (e *engine) clientUsage(window time.Duration, totalOps, totalPayload uint64) lab.ClientUsage {
	proc := e.procEnd.sub(e.procStart)
	cu := lab.ClientUsage{
		ProcessUserSec: round3(proc.user.Seconds()),
		ProcessSysSec:  round3(proc.sys.Seconds()),
		MinorFaults:    proc.minflt,
	}
	if totalOps > 0 {
		cu.MinorFaultsPerOp = round3(float64(proc.minflt) / float64(totalOps))
	}
	if totalPayload > 0 {
		cu.CPUSecPerGB = round3((proc.user + proc.sys).Seconds() / (float64(totalPayload) / 1e9))
	}
	// valkey-go runs goroutines, not pinned threads: there is no
	// per-worker CPU to report, so none is (absent, not zero).
	for _, wk := range e.workers {
		if !e.kind.threadFigures() || wk.probe { // the probe's worker is not one of -t: its CPU is in the process's
			continue
		}
		u := wk.usageEnd.sub(wk.usageStart)
		wu := lab.WorkerUsage{Worker: wk.id, Connections: len(wk.conns), UserSec: round3(u.user.Seconds()),
			SysSec: round3(u.sys.Seconds()), MinorFaults: u.minflt}
		if wk.cpu >= 0 {
			c := wk.cpu
			wu.CPU = &c
		}
		if window > 0 {
			wu.Busy = round3((u.user + u.sys).Seconds() / window.Seconds())
		}
		cu.MaxWorkerBusy = max(cu.MaxWorkerBusy, wu.Busy)
		cu.Workers = append(cu.Workers, wu)
	}
	return cu
}

func round3(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
}
