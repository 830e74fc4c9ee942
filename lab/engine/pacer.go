package engine

import "time"

// Pacer says when a worker may start its next request. It never reads a
// clock: the worker hands it the time since the stage began and how many
// requests the worker has started in the stage, so a pacer is a pure
// function of the two and is tested from a table, without sleeping.
//
// wait is how long after elapsed the next request is due (0: now); stop
// ends the worker's issuing for the stage (requests in flight complete).
// The worker asks only when a connection has a free pipeline slot.
//
// Every run is closed loop today: each connection sends its next request
// as soon as one of its -P slots frees, so the pacer never waits. An
// open-loop pacer (constant rate, poisson, ramp) plugs in here, one per
// worker, its share of the rate.
type Pacer interface {
	Pace(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool)
}

// closedLoop is today's pacer: never wait, never stop.
type closedLoop struct{}

func (closedLoop) Pace(time.Duration, uint64) (time.Duration, bool) { return 0, false }

// due asks the worker's pacer whether a request may start at t, and keeps
// its answer: a wait sets dueAt, which the worker's loop wakes up for, and
// a stop ends issuing.
func (w *worker) due(t int64) bool {
	if w.dueAt != 0 {
		if t < w.dueAt {
			return false
		}
		w.dueAt = 0
	}
	wait, stop := w.pacer.Pace(time.Duration(t), w.sent)
	switch {
	case stop:
		w.paceStopped = true
		return false
	case wait > 0:
		w.dueAt = t + int64(wait)
		return false
	}
	return true
}

// untilDue bounds a wait for events by the pacer's next due time.
func (w *worker) untilDue(t int64, limit time.Duration) time.Duration {
	if w.dueAt == 0 {
		return limit
	}
	return max(min(time.Duration(w.dueAt-t), limit), 0)
}
