package engine

import (
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

// Every issuing unit (a raw connection, a valkey-go worker) asks its own
// pace.Pacer before it starts a request: Pace(time since the stage began,
// requests the unit has started in it). Closed loop is pace.ClosedLoop,
// which never waits: each connection sends its next request as soon as
// one of its -P slots frees. Open loop (--rate, --ramp, the probe) is a
// share of one schedule per unit (openloop.go), so a request whose
// connection is still busy waits in that connection's queue: the
// schedule says it is due, and it goes when a slot frees.

// intender is a pacer that says when each request was meant to go: the
// open loop's schedules. Latency is then measured from that time.
type intender interface {
	Intended(n uint64) (time.Duration, bool)
}

// pacing is one unit's state in a stage.
type pacing struct {
	pacer   pace.Pacer
	sched   intender // nil: closed loop, latency from the actual send
	sent    uint64   // requests started or dropped in the stage
	dueAt   int64    // when the next is due; 0: whenever a slot is free
	stopped bool     // the pacer has no more requests
	// limit drops a request that would start more than this after its
	// intended time (--queue-limit); 0: never.
	limit int64
	probe bool // the unit is a probe connection
}

// reset starts a stage with pacer p.
func (p *pacing) reset(pc pace.Pacer, limit time.Duration, probe bool) {
	*p = pacing{pacer: pc, limit: int64(limit), probe: probe}
	if s, ok := pc.(intender); ok {
		p.sched = s
	}
}

// maxDropsPerCall bounds the requests one due call drops, so a long stall
// at a high rate cannot hold the worker's other connections: the rest are
// dropped on the next call, at once.
const maxDropsPerCall = 4096

// due asks the pacer whether a request may start at t, and keeps its
// answer: a wait sets dueAt, which the worker's loop wakes up for, and a
// stop ends issuing. Requests that waited past the queue limit are
// dropped first, counted by their intended time.
func (p *pacing) due(w *worker, t int64) bool {
	if p.dueAt != 0 {
		if t < p.dueAt {
			return false
		}
		p.dueAt = 0
	}
	if p.sched != nil && p.limit > 0 {
		for i := 0; ; i++ {
			at, ok := p.sched.Intended(p.sent)
			if !ok || t-int64(at) <= p.limit {
				break
			}
			if i == maxDropsPerCall {
				p.dueAt = t
				return false
			}
			w.dropped(int64(at), t, p.probe)
			p.sent++
		}
	}
	wait, stop := p.pacer.Pace(time.Duration(t), p.sent)
	switch {
	case stop:
		p.stopped = true
		return false
	case wait > 0:
		p.dueAt = t + int64(wait)
		return false
	}
	return true
}

// started counts the request due calls let through, and returns its
// intended time (ns since the stage began) when it has one.
func (p *pacing) started() (intended int64, paced bool) {
	n := p.sent
	p.sent++
	if p.sched == nil {
		return 0, false
	}
	at, _ := p.sched.Intended(n)
	return int64(at), true
}

// untilDue bounds a wait for events by the earliest due time of the
// worker's units.
func (w *worker) untilDue(t int64, limit time.Duration) time.Duration {
	for _, c := range w.conns {
		if c.dueAt != 0 && !c.dead {
			limit = min(limit, time.Duration(c.dueAt-t))
		}
	}
	if w.vk != nil && w.vk.dueAt != 0 {
		limit = min(limit, time.Duration(w.vk.dueAt-t))
	}
	return max(limit, 0)
}

// isLate says whether a request sent at sent was late for its intended time.
func isLate(sent, intended int64) bool { return sent-intended > int64(lab.LateAfter) }
