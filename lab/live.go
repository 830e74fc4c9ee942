package lab

import (
	"sync/atomic"
	"time"
)

// Live figures: what a run has done so far, read by the coordinator once a
// second (the progress tick) for the progress lines and live metrics
// (sweeps/metrics, --metrics-listen). Each worker counts into its own
// liveWorker, with no lock and no allocation; only the tick reads across
// workers. The record itself never comes from these counters: it is merged
// from the workers' own state after they stop, and the two must agree.

// LiveLatencyBounds are the upper bounds, in seconds, of the live latency
// histogram's buckets (1-2-5 steps from 100 µs to 50 s); a last bucket
// holds what is above. The record's percentiles come from HDR histograms.
var LiveLatencyBounds = []float64{
	0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
	0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50,
}

const liveBuckets = 19 // len(LiveLatencyBounds) + 1

var liveBoundsNs = func() (b [liveBuckets - 1]int64) {
	for i, s := range LiveLatencyBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// Live is a run's running totals at one tick. Counts only grow within a
// run; each tick is a new value the receiver may keep.
type Live struct {
	At     time.Time   `json:"at"`
	Phase  Phase       `json:"phase"`            // the phase the run is in
	Server string      `json:"server,omitempty"` // name-version, as INFO says
	Final  bool        `json:"final,omitempty"`  // the run's last tick: the totals are complete
	Counts []LiveCount `json:"counts"`           // per phase and op, those with any request
}

// LiveCount is one phase and operation so far. Requests count in the
// phase they completed in, as in the record.
type LiveCount struct {
	Phase        Phase                `json:"phase"`
	Op           Op                   `json:"op"`
	OK           uint64               `json:"ok"`     // successful, value delivered or stored
	Misses       uint64               `json:"misses"` // nil replies for keys never written
	Errors       map[ErrorKind]uint64 `json:"errors,omitempty"`
	PayloadBytes uint64               `json:"payload_bytes"` // OK x value size
	// LatencySum (seconds) and Latency (counts per LiveLatencyBounds
	// bucket, not cumulative) cover the OK requests.
	LatencySum float64  `json:"latency_sum_s"`
	Latency    []uint64 `json:"latency"`
}

// Count is the figures of one phase and op, or nil.
func (l *Live) Count(p Phase, op Op) *LiveCount {
	for i := range l.Counts {
		if l.Counts[i].Phase == p && l.Counts[i].Op == op {
			return &l.Counts[i]
		}
	}
	return nil
}

// liveCell is one worker's counts for one phase and op.
type liveCell struct {
	lat   [liveBuckets]atomic.Uint64
	latNs atomic.Uint64
	miss  atomic.Uint64
	errs  [numErrKinds]atomic.Uint64
}

// liveWorker is one worker's live counts, by phase and op.
type liveWorker [4][2]liveCell

// add counts one finished request; latNs is first byte sent to last byte
// received. Two atomic adds on success, uncontended: only this worker
// writes here.
func (lw *liveWorker) add(phase, op int, kind errIdx, miss bool, latNs int64) {
	c := &lw[phase][op]
	switch {
	case kind != ok:
		c.errs[kind].Add(1)
	case miss:
		c.miss.Add(1)
	default:
		b := 0
		for b < len(liveBoundsNs) && latNs > liveBoundsNs[b] {
			b++
		}
		c.lat[b].Add(1)
		c.latNs.Add(uint64(max(latNs, 0)))
	}
}

// okCount is the successful requests of one phase (every op) so far.
func (lw *liveWorker) okCount(phase int) (n uint64) {
	for op := range lw[phase] {
		for i := range lw[phase][op].lat {
			n += lw[phase][op].lat[i].Load()
		}
	}
	return n
}

// progressOps is the successful requests of one phase over every worker.
func (e *engine) progressOps(phase int) (n uint64) {
	for _, wk := range e.workers {
		n += wk.live.okCount(phase)
	}
	return n
}

// progressBytes is the payload moved in prefill, warmup and the window:
// what the progress lines show (the drain is not load the run chose).
func (e *engine) progressBytes() uint64 {
	var n uint64
	for _, ph := range []int{phPrefill, phWarmup, phMeasure} {
		n += e.progressOps(ph)
	}
	return n * uint64(e.layout.Size)
}

// live sums every worker's counts into one tick for RunOptions.Live.
func (e *engine) live(phase Phase, final bool) *Live {
	l := &Live{At: time.Now(), Phase: phase, Server: e.serverName, Final: final}
	for ph := range phaseOrder {
		for op := range opNames {
			c := LiveCount{Phase: phaseOrder[ph], Op: opNames[op], Latency: make([]uint64, liveBuckets)}
			var latNs, errN uint64
			for _, wk := range e.workers {
				cell := &wk.live[ph][op]
				for i := range cell.lat {
					v := cell.lat[i].Load()
					c.Latency[i] += v
					c.OK += v
				}
				latNs += cell.latNs.Load()
				c.Misses += cell.miss.Load()
				for k := range cell.errs {
					if v := cell.errs[k].Load(); v > 0 {
						if c.Errors == nil {
							c.Errors = map[ErrorKind]uint64{}
						}
						c.Errors[errorKinds[k]] += v
						errN += v
					}
				}
			}
			if c.OK+c.Misses+errN == 0 {
				continue
			}
			c.PayloadBytes = c.OK * uint64(e.layout.Size)
			c.LatencySum = float64(latNs) / 1e9
			l.Counts = append(l.Counts, c)
		}
	}
	return l
}
