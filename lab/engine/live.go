package engine

import (
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/lab"
)

// The workers' live counts behind lab.Live: each worker counts into its
// own liveWorker, and only the progress tick sums them.

const liveBuckets = 19 // len(lab.LiveLatencyBounds) + 1

var liveBoundsNs = func() (b [liveBuckets - 1]int64) {
	for i, s := range lab.LiveLatencyBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// liveCell is one worker's counts for one phase and op.
type liveCell struct {
	lat   [liveBuckets]atomic.Uint64
	latNs atomic.Uint64
	bytes atomic.Uint64 // payload of the OK requests
	miss  atomic.Uint64
	errs  [numErrKinds]atomic.Uint64
}

// liveWorker is one worker's live counts, by phase and op.
type liveWorker [4][2]liveCell

// add counts one finished request of size bytes; latNs is its latency as
// the record takes it. Three atomic adds on success, uncontended: only
// this worker writes here.
func (lw *liveWorker) add(phase, op int, kind errIdx, miss bool, latNs, size int64) {
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
		c.bytes.Add(uint64(size))
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

// progressTotals is the requests and payload of prefill, warmup and the
// window: what the progress lines show (the drain is not load the run
// chose).
func (e *engine) progressTotals() (ops, bytes uint64) {
	for _, ph := range []int{phPrefill, phWarmup, phMeasure} {
		ops += e.progressOps(ph)
		for _, wk := range e.workers {
			for op := range wk.live[ph] {
				bytes += wk.live[ph][op].bytes.Load()
			}
		}
	}
	return ops, bytes
}

// live sums every worker's counts into one tick for Options.Live.
func (e *engine) live(phase lab.Phase, final bool) *lab.Live {
	l := &lab.Live{At: time.Now(), Phase: phase, Server: e.serverName, Final: final}
	for ph := range phaseOrder {
		for op := range opNames {
			c := lab.LiveCount{Phase: phaseOrder[ph], Op: e.opName(ph, op), Latency: make([]uint64, liveBuckets)}
			var latNs, errN uint64
			for _, wk := range e.workers {
				cell := &wk.live[ph][op]
				c.PayloadBytes += cell.bytes.Load()
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
							c.Errors = map[lab.ErrorKind]uint64{}
						}
						c.Errors[errorKinds[k]] += v
						errN += v
					}
				}
			}
			if c.OK+c.Misses+errN == 0 {
				continue
			}
			c.LatencySum = float64(latNs) / 1e9
			l.Counts = append(l.Counts, c)
		}
	}
	return l
}
