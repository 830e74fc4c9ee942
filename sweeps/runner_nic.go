package sweeps

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Each host's NIC driver counters are read while a cell runs, every
// SampleEvery (the remote bench gives no window marks), and cut to the
// window the record reports, as the host snapshots are.

// nicRead is one read of one source.
type nicRead struct {
	at  time.Time // on the client host's clock, as the record's times
	c   nicstats.Counters
	err error
}

// nicWindow samples the runner's NIC sources during one cell.
type nicWindow struct {
	infos []NICInfo
	mu    sync.Mutex
	reads [][]nicRead // per source, in time order
	stop  chan struct{}
	done  chan struct{}
}

// nicInfos reads each source's name once per run.
func (r *Runner) nicInfos(ctx context.Context) []NICInfo {
	if r.nicInfo == nil {
		r.nicInfo = make([]NICInfo, len(r.NICs))
		for i, s := range r.NICs {
			info, err := s.NIC(ctx)
			if err != nil {
				info.Host = "?"
				info.Interface = err.Error()
			}
			r.nicInfo[i] = info
		}
	}
	return r.nicInfo
}

// startNICs reads every source now and then every interval until finish;
// nil when the runner has none.
func (r *Runner) startNICs(ctx context.Context, every time.Duration) *nicWindow {
	if len(r.NICs) == 0 {
		return nil
	}
	w := &nicWindow{infos: r.nicInfos(ctx), reads: make([][]nicRead, len(r.NICs)),
		stop: make(chan struct{}), done: make(chan struct{})}
	w.readAll(ctx, r)
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				w.readAll(ctx, r)
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}

// readAll reads every source at once: the hosts answer in parallel.
func (w *nicWindow) readAll(ctx context.Context, r *Runner) {
	var wg sync.WaitGroup
	for i, s := range r.NICs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			at := time.Now().Add(r.ClientClock)
			c, err := s.Counters(rctx)
			w.mu.Lock()
			w.reads[i] = append(w.reads[i], nicRead{at: at, c: c, err: err})
			w.mu.Unlock()
		}()
	}
	wg.Wait()
}

// finish reads once more and returns each source's deltas over the
// record's window (over everything read when the record has no window).
func (w *nicWindow) finish(ctx context.Context, r *Runner, res *lab.Result) []NICDelta {
	if w == nil {
		return nil
	}
	close(w.stop)
	<-w.done
	// Not the cell's context: the last read comes after the bench ended it.
	w.readAll(context.WithoutCancel(ctx), r)
	out := make([]NICDelta, len(w.infos))
	for i, info := range w.infos {
		out[i].NICInfo = info
		var ok []nicRead
		for _, rd := range w.reads[i] {
			if rd.err == nil {
				ok = append(ok, rd)
			} else {
				out[i].Error = rd.err.Error()
			}
		}
		times := make([]time.Time, len(ok))
		for j, rd := range ok {
			times[j] = rd.at
		}
		a, b, found := windowIndex(times, res)
		if !found {
			if out[i].Error == "" {
				out[i].Error = "fewer than two reads"
			}
			continue
		}
		out[i].Error = ""
		out[i].Deltas = nicstats.Delta(ok[a].c, ok[b].c)
	}
	return out
}

// windowIndex picks, from times in order, the pair that best covers the
// result's measured window (it ended at res.Ended and lasted
// Window.Measured): the first at or after its start, the last at or before
// its end. Without a usable window it spans them all.
func windowIndex(times []time.Time, res *lab.Result) (a, b int, ok bool) {
	if len(times) < 2 {
		return 0, 0, false
	}
	a, b = 0, len(times)-1
	if res == nil || res.Ended.IsZero() || res.Window.Measured <= 0 {
		return a, b, true
	}
	start := res.Ended.Add(-res.Window.Measured.D())
	ai, bi := -1, -1
	for i, t := range times {
		if ai < 0 && !t.Before(start) {
			ai = i
		}
		if !t.After(res.Ended) {
			bi = i
		}
	}
	if ai >= 0 && bi > ai {
		return ai, bi, true
	}
	return a, b, true
}

// windowOf is windowIndex over host snapshots.
func windowOf(series []*hostmetrics.Snapshot, res *lab.Result) (a, b *hostmetrics.Snapshot) {
	times := make([]time.Time, len(series))
	for i, s := range series {
		times[i] = s.At
	}
	ai, bi, ok := windowIndex(times, res)
	if !ok {
		return nil, nil
	}
	return series[ai], series[bi]
}

// bench runs the cell's load: from every client host when the bencher
// has several, their records kept in rec.
func (r *Runner) bench(ctx context.Context, w lab.Workload, mark func(lab.Phase), rec *CellRecord) (*lab.Result, error) {
	if hb, ok := r.Bench.(HostsBencher); ok {
		res, parts, err := hb.BenchHosts(ctx, w, mark)
		rec.Clients = parts
		return res, err
	}
	return r.Bench.Bench(ctx, w, mark)
}

// limitInput is the evidence the limit label reads, beside the host
// metrics: the calibrated link and the NICs' allowance counters.
func (r *Runner) limitInput(res *lab.Result, rec *CellRecord) hostmetrics.LimitInput {
	in := hostmetrics.LimitInput{Result: res, Server: rec.Host, LinkGbps: r.LinkGbps, FaultCost: r.FaultCost,
		Allowance: Allowances(rec.NIC)}
	if r.Link != nil && r.LinkGbps == 0 {
		in.CalibratedDown, in.CalibratedUp = r.Link.GET.Gbps, r.Link.SET.Gbps
	}
	return in
}

// every is the sampling interval: d, or 500ms.
func every(d time.Duration) time.Duration {
	if d <= 0 {
		return 500 * time.Millisecond
	}
	return d
}

// calibrate measures the link once, before the first of n cells to run,
// and records it in the environment record.
func (r *Runner) calibrate(ctx context.Context, n int) error {
	if r.Calibrate == nil || n == 0 {
		return nil
	}
	l, err := r.Calibrate(ctx)
	if err != nil {
		return fmt.Errorf("link calibration: %w", err)
	}
	r.Link = l
	if r.Env != nil {
		r.Env.Link = l
		return r.Store.WriteEnv(r.Env)
	}
	return nil
}
