package lab

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// One cell's load can come from several client hosts at once, each
// running its own bench with a share of the connections. Merge makes the
// one record of the cell from theirs, as if one client had done it all:
// counts and bytes summed, latency histograms merged (a percentile of
// percentiles would be meaningless), per-second series aligned on the
// wall clock and summed.

// Part is one client host's record of a merged run.
type Part struct {
	// Host names the client host in messages and notes.
	Host   string
	Result *Result
	// Offset is the part's clock minus the merged record's clock (the
	// first part's): its times are moved by it before they are compared.
	Offset time.Duration
}

// Merge is the record of parts run together against one server: w is the
// workload the parts shared (connections in total). Ops and bytes are
// summed, as are the rates (each part's over its own window); the window
// is the intersection of the parts' windows; times are on the first
// part's clock. The first part that did not complete gives the stop,
// naming its host.
func Merge(w Workload, parts []Part) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge: no records")
	}
	for _, p := range parts {
		if p.Result == nil {
			return nil, fmt.Errorf("merge: no record from %s", p.Host)
		}
		if err := p.Result.CheckNulls(); err != nil {
			return nil, fmt.Errorf("merge: record from %s: %w", p.Host, err)
		}
	}
	first := parts[0].Result
	_, _, warm, _ := w.ProbePhases() // the warmup as run, as each part's
	out := &Result{
		Schema: SchemaVersion, RunID: first.RunID, Linerate: first.Linerate, Workload: w,
		Server: first.Server, Engine: first.Engine, SizeMix: first.SizeMix, // one keyspace, one seed: every part's
		Ops: map[Op]*OpResult{}, Phases: map[Phase]*PhaseTotals{}, Errors: map[ErrorKind]uint64{},
		Window: Window{Warmup: Duration(warm), Requested: w.Duration},
		Stop:   Stop{Reason: StopCompleted}, // exit code 0
	}
	on := func(p Part, t time.Time) time.Time { return t.Add(-p.Offset) }
	var winStart, winEnd time.Time
	for i, p := range parts {
		r := p.Result
		if s := on(p, r.Started); i == 0 || s.Before(out.Started) {
			out.Started = s
		}
		if e := on(p, r.Ended); i == 0 || e.After(out.Ended) {
			out.Ended = e
		}
		if out.Server == nil || (out.Server.DBSizeAfterPrefill == nil && r.Server != nil && r.Server.DBSizeAfterPrefill != nil) {
			out.Server = r.Server
		}
		if r.Window.Start != nil {
			s := on(p, *r.Window.Start)
			e := s.Add(r.Window.Measured.D())
			if winStart.IsZero() || s.After(winStart) {
				winStart = s
			}
			if winEnd.IsZero() || e.Before(winEnd) {
				winEnd = e
			}
		}
		for k, n := range r.Errors {
			out.Errors[k] += n
		}
		out.Abandoned += r.Abandoned
		for ph, t := range r.Phases {
			addPhase(out.Phases, ph, t)
		}
		for _, n := range r.Notes {
			out.Notes = append(out.Notes, p.Host+": "+n)
		}
		if r.Stop.Reason != StopCompleted && out.Stop.Reason == StopCompleted {
			out.Stop = r.Stop
			out.Stop.Error = p.Host + ": " + string(r.Stop.Reason)
			if r.Stop.Error != "" {
				out.Stop.Error += ": " + r.Stop.Error
			}
		}
	}
	if !winStart.IsZero() {
		start := winStart
		out.Window.Start = &start
		out.Window.Measured = Duration(max(winEnd.Sub(winStart), 0))
	}
	if err := mergeOps(out, parts, winStart); err != nil {
		return nil, err
	}
	out.Client = mergeClients(parts, out)
	out.Cluster = mergeCluster(parts)
	// Each part's note is kept above; the merged window judges again.
	out.EdgeBias = EdgeBiasOf(out)
	return out, nil
}

func addPhase(into map[Phase]*PhaseTotals, ph Phase, t *PhaseTotals) {
	m := into[ph]
	if m == nil {
		m = &PhaseTotals{Ops: map[Op]uint64{}}
		into[ph] = m
	}
	for op, n := range t.Ops {
		m.Ops[op] += n
	}
	m.WireSent += t.WireSent
	m.WireRecvd += t.WireRecvd
}

// mergeOps sums each operation over the parts and merges its histograms;
// seconds are aligned on winStart (the merged window's start): a part's
// second i is the merged second i minus its whole seconds of lead.
func mergeOps(out *Result, parts []Part, winStart time.Time) error {
	for _, op := range AllOps {
		var mine []*OpResult
		var leads []int
		for _, p := range parts {
			o := p.Result.Ops[op]
			if o == nil {
				continue
			}
			mine = append(mine, o)
			lead := 0
			if s := p.Result.Window.Start; s != nil && !winStart.IsZero() {
				lead = int(math.Round(winStart.Sub(s.Add(-p.Offset)).Seconds()))
			}
			leads = append(leads, lead)
		}
		if len(mine) == 0 {
			continue
		}
		m := &OpResult{Verify: VerifyCounts{Mode: mine[0].Verify.Mode}}
		var lats, ttfbs []LatencySummary
		for _, o := range mine {
			m.Ops += o.Ops
			m.OpsPerSec += o.OpsPerSec
			m.PayloadBytes += o.PayloadBytes
			m.Gbps += o.Gbps
			m.WireSent += o.WireSent
			m.WireRecvd += o.WireRecvd
			m.Misses += o.Misses
			m.Verify.Checked += o.Verify.Checked
			m.Verify.Failed += o.Verify.Failed
			m.Redirects = m.Redirects.add(o.Redirects)
			for k, n := range o.Errors {
				if m.Errors == nil {
					m.Errors = map[ErrorKind]uint64{}
				}
				m.Errors[k] += n
			}
			lats = append(lats, o.Latency)
			if o.TTFB != nil {
				ttfbs = append(ttfbs, *o.TTFB)
			}
		}
		var err error
		if m.Latency, err = MergeSummaries(lats...); err != nil {
			return fmt.Errorf("merge %s latency: %w", op, err)
		}
		if len(ttfbs) == len(mine) {
			t, err := MergeSummaries(ttfbs...)
			if err != nil {
				return fmt.Errorf("merge %s time to first byte: %w", op, err)
			}
			m.TTFB = &t
		}
		if m.Series, err = mergeSeries(mine, leads); err != nil {
			return fmt.Errorf("merge %s per-second series: %w", op, err)
		}
		out.Ops[op] = m
	}
	return nil
}

// mergeSeries sums the parts' seconds that fall on one merged second
// (seconds before the merged window are left out) and merges their
// histograms, from which the second's p99 is read again.
func mergeSeries(ops []*OpResult, leads []int) ([]SecondSample, error) {
	type acc struct {
		s     SecondSample
		hists []string
		parts int
	}
	byIdx := map[int]*acc{}
	for i, o := range ops {
		for _, s := range o.Series {
			k := s.Second - leads[i]
			if k < 0 {
				continue
			}
			a := byIdx[k]
			if a == nil {
				a = &acc{s: SecondSample{Second: k}}
				byIdx[k] = a
			}
			a.s.Ops += s.Ops
			a.s.PayloadBytes += s.PayloadBytes
			a.s.Gbps += s.Gbps
			a.s.Errors += s.Errors
			a.s.P99 = math.Max(a.s.P99, s.P99) // replaced below when the histograms merge
			if s.Histogram != "" {
				a.hists = append(a.hists, s.Histogram)
			}
			if s.Ops > 0 {
				a.parts++
			}
		}
	}
	idx := make([]int, 0, len(byIdx))
	for k := range byIdx {
		idx = append(idx, k)
	}
	sort.Ints(idx)
	out := make([]SecondSample, 0, len(idx))
	var total *hdr.Histogram
	for _, k := range idx {
		a := byIdx[k]
		if len(a.hists) > 0 && len(a.hists) >= a.parts {
			if total == nil {
				total = NewHistogram()
			}
			total.Reset()
			for _, enc := range a.hists {
				h, err := hdr.Decode([]byte(enc))
				if err != nil {
					return nil, fmt.Errorf("second %d: decode histogram: %w", k, err)
				}
				total.Merge(h)
			}
			enc, err := total.Encode(hdr.V2CompressedEncodingCookieBase)
			if err != nil {
				return nil, fmt.Errorf("second %d: encode histogram: %w", k, err)
			}
			a.s.Histogram = string(enc)
			if total.TotalCount() > 0 {
				a.s.P99 = float64(total.ValueAtQuantile(99))
			}
		}
		out = append(out, a.s)
	}
	return out, nil
}

// mergeClients adds up the parts' client usage; workers are numbered on
// from one part to the next.
func mergeClients(parts []Part, out *Result) ClientUsage {
	var cu ClientUsage
	for _, p := range parts {
		c := p.Result.Client
		cu.ProcessUserSec += c.ProcessUserSec
		cu.ProcessSysSec += c.ProcessSysSec
		cu.MinorFaults += c.MinorFaults
		cu.MaxWorkerBusy = math.Max(cu.MaxWorkerBusy, c.MaxWorkerBusy)
		base := len(cu.Workers)
		for _, wu := range c.Workers {
			wu.Worker += base
			cu.Workers = append(cu.Workers, wu)
		}
	}
	var ops, payload uint64
	for _, o := range out.Ops {
		ops += o.Ops
		payload += o.PayloadBytes
	}
	if ops > 0 {
		cu.MinorFaultsPerOp = float64(cu.MinorFaults) / float64(ops)
	}
	if payload > 0 {
		cu.CPUSecPerGB = (cu.ProcessUserSec + cu.ProcessSysSec) / (float64(payload) / 1e9)
	}
	return cu
}
