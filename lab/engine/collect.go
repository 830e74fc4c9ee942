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

// collect merges the workers' state into res, after they stopped.
func (e *engine) collect(res *lab.Result) {
	w := e.w
	window := e.windowEnd.Sub(e.windowStart)
	if window < 0 {
		window = 0
	}
	_, _, warm, _ := w.ProbePhases() // a probe's idle phase can lengthen the warmup
	res.Window = lab.Window{Warmup: lab.Duration(warm), Requested: w.Duration, Measured: lab.Duration(window)}
	if !e.windowStart.IsZero() {
		start := e.windowStart.UTC()
		res.Window.Start = &start
	}
	if e.route != nil {
		res.Cluster = e.clusterRecord()
	}
	res.Engine.Discard = "msg_trunc"
	if w.Verify == lab.VerifyFull {
		res.Engine.Discard = "read"
	}
	for _, wk := range e.workers {
		if wk.noTrunc {
			res.Engine.Discard = "read"
		}
	}
	if w.TLS.On {
		res.Engine.Discard = "tls" // decrypted, then read: MSG_TRUNC cannot apply
	}
	if e.loop != nil {
		res.Engine.Discard = "client"
	} else if w.Ratio.Sets > 0 || w.Prefill || w.Command == lab.CommandMSet {
		res.Engine.Send = string(e.send)
		if w.Command == lab.CommandMSet {
			res.Engine.Send = string(lab.SendCopy) // an MSET's pieces are all written (multikey.go)
		}
	}

	var totalOps, totalPayload uint64
	secHist := lab.NewHistogram() // reused for every second
	for opi := range opNames {
		op := e.opName(phMeasure, opi)
		if (op.Base() == lab.OpGet && w.Ratio.Gets == 0) || (op.Base() == lab.OpSet && w.Ratio.Sets == 0) {
			continue
		}
		lat := lab.NewHistogram()
		ttfb := lab.NewHistogram()
		or := &lab.OpResult{Verify: lab.VerifyCounts{Mode: w.Verify}, Errors: map[lab.ErrorKind]uint64{}}
		series := make([]lab.SecondSample, 0)
		var clamped uint64
		for _, wk := range e.workers {
			st := &wk.measure[opi]
			lat.Merge(st.lat)
			ttfb.Merge(st.ttfb)
			or.Ops += st.ops
			or.PayloadBytes += st.payload
			or.WireSent += st.wireOut
			or.WireRecvd += st.wireIn
			or.Misses += st.misses
			or.Verify.Checked += st.checked
			or.Verify.Failed += st.fails
			clamped += st.clamped
			for k, n := range st.errs {
				if n > 0 {
					or.Errors[errorKinds[k]] += n
				}
			}
			for i, s := range st.series {
				for len(series) <= i {
					series = append(series, lab.SecondSample{Second: len(series)})
				}
				series[i].Ops += s.ops
				series[i].PayloadBytes += s.bytes
				series[i].Errors += s.errors
			}
		}
		// Each second's p99 and histogram from the workers' per-second buckets.
		counts := make([]uint64, lab.LatBuckets)
		for i := range series {
			clear(counts)
			var total uint64
			for _, wk := range e.workers {
				st := &wk.measure[opi]
				if i >= len(st.series) {
					continue
				}
				for b, n := range st.secLat[i*lab.LatBuckets : (i+1)*lab.LatBuckets] {
					counts[b] += uint64(n)
					total += uint64(n)
				}
			}
			if total == 0 {
				continue
			}
			series[i].P99 = bucketQuantile(counts, total, 99)
			var err error
			if series[i].Histogram, err = lab.EncodeSecond(secHist, counts); err != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("%s second %d: %v", op, i, err))
			}
		}
		// The last second may be partial when the window was cut short.
		for i := range series {
			span := time.Second
			if rest := window - time.Duration(i)*time.Second; rest < span {
				span = max(rest, 0)
			}
			if span > 0 {
				series[i].Gbps = round3(float64(series[i].PayloadBytes) * 8 / 1e9 / span.Seconds())
			}
		}
		or.Series = series
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
		if or.Latency, err = lab.Summarize(lat); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
		if w.OpenLoop() {
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
			or.Service = &s
		}
		or.Sizes = e.collectSizes(opi, window)
		if op.Base() == lab.OpGet && e.loop == nil { // valkey-go does not show the first reply byte
			s, err := lab.Summarize(ttfb)
			if err != nil {
				res.Notes = append(res.Notes, err.Error())
			}
			or.TTFB = &s
		}
		if window > 0 && or.Ops > 0 && or.Ops < minOpsForFigure {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: only %d requests completed in the %s window: one more or less moves the figure by %.0f%%; lengthen -d",
				op, or.Ops, window.Round(time.Millisecond), 100/float64(or.Ops)))
		}
		if clamped > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %d latencies above one hour were recorded as one hour", op, clamped))
		}
		if len(or.Errors) == 0 {
			or.Errors = nil
		}
		res.Ops[op] = or
		totalOps += or.Ops
		totalPayload += or.PayloadBytes
	}

	res.MarkEdgeBias()

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

	// Client cost over the window.
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
	for _, wk := range e.workers {
		if e.loop != nil {
			// valkey-go runs goroutines, not pinned threads: there is no
			// per-worker CPU to report, so none is (absent, not zero).
			break
		}
		if wk.probe {
			continue // not one of -t: its CPU is in the process's
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
	res.Client = cu
	res.Notes = append(res.Notes, cu.Notes()...)
	e.collectOpen(res, window)
	if e.loop != nil {
		res.Notes = append(res.Notes, "valkey-go engine: no per-worker CPU or TTFB; a client limit cannot be told from this record (use the raw engine)")
	}
}

func round3(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
}
