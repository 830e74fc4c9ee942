package engine

import "time"

// Every worker asks a pace.Pacer before it starts a request on a free
// pipeline slot: Pace(time since the stage began, requests the worker has
// started in it). Every run is closed loop today (pace.ClosedLoop: each
// connection sends its next request as soon as one of its -P slots frees,
// never a wait); an open-loop schedule (pace.Schedule, a worker's Share)
// plugs in through engine.pacers.

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
