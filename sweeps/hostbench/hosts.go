package hostbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// HostsBencher runs each cell's load from several client hosts at once
// (clients: N): every host runs `linerate bench` with its share of the
// connections, and all of them wait for one moment (bench --start-at) on
// this machine's clock, moved onto each host's by its measured offset.
// The cell's record is their merge (lab.Merge); each host's own is kept.
type HostsBencher struct {
	Hosts []infra.Host
	// Offsets are each host's clock minus this machine's, as its agent
	// measured it (sweeps.HostFacts.ClockOffset); nil: one clock (netns).
	Offsets []time.Duration
	// Live, when set, gets the hosts' running totals summed.
	Live func(*lab.Live)
	// Lead is how far ahead the start is set: long enough for every host
	// to have its bench started. Default 3s.
	Lead time.Duration
}

// Bench implements sweeps.Bencher: the merged record.
func (b HostsBencher) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	res, _, err := b.BenchHosts(ctx, w, mark)
	return res, err
}

// prefillWindow is the measured window of the prefill step: a bench must
// measure something, and this is as little as it can.
const prefillWindow = lab.Duration(time.Millisecond)

// BenchHosts implements sweeps.HostsBencher. A cell that prefills has its
// keys written first by the first host alone, a bench of its own whose
// requests count in the merged record's prefill phase: a bench waits for
// --start-at before it connects, so hosts that each prefilled would open
// their windows whenever their prefills ended.
func (b HostsBencher) BenchHosts(ctx context.Context, w lab.Workload, _ func(lab.Phase)) (*lab.Result, []sweeps.ClientRecord, error) {
	if len(b.Hosts) == 0 {
		return nil, nil, errors.New("no client host")
	}
	var pre *lab.Result
	if w.Prefill {
		var err error
		if pre, err = b.prefill(ctx, w); err != nil {
			return nil, nil, err
		}
		w.Prefill = false
	}
	// A host that gives no record fails the cell: the others are stopped
	// rather than left to run out their windows for nothing.
	hctx, stopAll := context.WithCancelCause(ctx)
	defer stopAll(nil)
	recs := b.benchAll(hctx, stopAll, w)
	parts := make([]lab.Part, 0, len(recs))
	var failed []error
	for i, r := range recs {
		if r.Result == nil {
			if cause := context.Cause(hctx); ctx.Err() == nil && cause != nil && !strings.HasPrefix(cause.Error(), r.Host+" ") {
				recs[i].Error = "stopped: " + cause.Error()
				continue // not the cause: stopped because of it
			}
			failed = append(failed, fmt.Errorf("%s: %s", r.Host, r.Error))
			continue
		}
		parts = append(parts, lab.Part{Host: r.Host, Result: r.Result, Offset: b.offset(i) - b.offset(0)})
	}
	if len(failed) > 0 {
		// A host that gave no record fails the cell, named; the others'
		// records are kept for the look.
		return nil, recs, fmt.Errorf("client hosts gave no record: %w", errors.Join(failed...))
	}
	merged, err := lab.Merge(mergedWorkload(w, recs), parts)
	if err != nil {
		return nil, recs, err
	}
	if pre != nil {
		foldPrefill(merged, pre)
	}
	return merged, recs, nil
}

// prefill writes the cell's keys from the first host alone, in a bench of
// the shortest window.
func (b HostsBencher) prefill(ctx context.Context, w lab.Workload) (*lab.Result, error) {
	pw := w
	pw.Warmup, pw.Duration = 0, prefillWindow
	res, err := HostBencher{Host: b.Hosts[0]}.Bench(ctx, pw, nil)
	if res == nil || res.Stop.Reason != lab.StopCompleted {
		why := err
		if res != nil {
			why = fmt.Errorf("%s: %s", res.Stop.Reason, res.Stop.Error)
		}
		return nil, fmt.Errorf("prefill from %s: %w", hostName(b.Hosts[0]), why)
	}
	return res, nil
}

// benchAll runs each host's share of w at once, all starting at the same
// moment (Lead from now, each on its own clock), and returns each host's
// record; the first host to give none stops the others through stopAll.
func (b HostsBencher) benchAll(hctx context.Context, stopAll context.CancelCauseFunc, w lab.Workload) []sweeps.ClientRecord {
	lead := b.Lead
	if lead <= 0 {
		lead = 3 * time.Second
	}
	start := time.Now().Add(lead)
	n := len(b.Hosts)
	recs := make([]sweeps.ClientRecord, n)
	lives := make([]*lab.Live, n)
	var liveMu sync.Mutex
	var wg sync.WaitGroup
	for i, h := range b.Hosts {
		hw := share(w, i, n)
		hb := HostBencher{Host: h, Args: []string{"--start-at", strconv.FormatInt(start.Add(b.offset(i)).UnixNano(), 10)}}
		if b.Live != nil {
			hb.Live = func(l *lab.Live) {
				liveMu.Lock()
				defer liveMu.Unlock()
				lives[i] = l
				b.Live(lab.SumLive(lives))
			}
		}
		recs[i].Host = hostName(h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := hb.Bench(hctx, hw, nil)
			recs[i].Result = res
			if err != nil {
				recs[i].Error = err.Error()
			}
			if res == nil && context.Cause(hctx) == nil {
				stopAll(fmt.Errorf("%s gave no record", recs[i].Host))
			}
		}()
	}
	wg.Wait()
	return recs
}

func (b HostsBencher) offset(i int) time.Duration {
	if i < len(b.Offsets) {
		return b.Offsets[i]
	}
	return 0
}

// share is host i's part of w among n hosts: the connections split as
// evenly as they go (the first hosts take one more), worker threads at
// most its connections, a seed of its own so the hosts do not send the
// same key sequence.
func share(w lab.Workload, i, n int) lab.Workload {
	total := w.Resolve().Connections
	w.Connections = total / n
	if i < total%n {
		w.Connections++
	}
	if w.Threads > w.Connections {
		w.Threads = w.Connections
	}
	w.Seed += uint64(i)
	return w
}

// mergedWorkload is the workload the hosts ran together: the first host's
// as it resolved it, with the cell's total connections and every host's
// worker threads.
func mergedWorkload(w lab.Workload, recs []sweeps.ClientRecord) lab.Workload {
	m := recs[0].Result.Workload
	m.Connections, m.Seed, m.Prefill = w.Resolve().Connections, w.Seed, w.Prefill
	m.Threads = 0
	for _, r := range recs {
		m.Threads += r.Result.Workload.Threads
	}
	return m
}

// foldPrefill counts the prefill step's requests in the merged record's
// prefill phase and keeps the key count it checked.
func foldPrefill(m, pre *lab.Result) {
	m.Workload.Prefill = true
	tot := &lab.PhaseTotals{Ops: map[lab.Op]uint64{}}
	for _, t := range pre.Phases {
		for op, n := range t.Ops {
			tot.Ops[op] += n
		}
		tot.WireSent += t.WireSent
		tot.WireRecvd += t.WireRecvd
	}
	if p := m.Phases[lab.PhasePrefill]; p != nil {
		for op, n := range p.Ops {
			tot.Ops[op] += n
		}
		tot.WireSent += p.WireSent
		tot.WireRecvd += p.WireRecvd
	}
	m.Phases[lab.PhasePrefill] = tot
	for k, n := range pre.Errors {
		m.Errors[k] += n
	}
	if pre.Server != nil && pre.Server.DBSizeAfterPrefill != nil && m.Server != nil {
		s := *m.Server
		s.DBSizeAfterPrefill = pre.Server.DBSizeAfterPrefill
		m.Server = &s
	}
}

// hostName is a client host with its data address, for records and
// messages.
func hostName(h infra.Host) string {
	if a := h.DataAddr(); a.IsValid() {
		return h.Name() + " (" + a.String() + ")"
	}
	return h.Name()
}
