package engine

import "github.com/linerate/linerate/lab/fields"

// --request-timeout is one request's limit, also in a pipeline: a request
// queued behind others on its connection cannot be answered before the
// one ahead of it is, so its clock starts when it is sent or when the
// reply ahead of it ended, whichever is later. Sixteen pipelined 64 MiB
// GETs each get the whole timeout, not a sixteenth of it; a reply that
// stalls, before its first byte or in the middle of its value, still
// times out one timeout after its clock started.

// deadlineStart is when the head request's timeout clock started.
func (c *rconn) deadlineStart() int64 {
	return max(c.q[c.qHead].issued, c.headSince)
}

// timeOut fails the head request, alone, as a timeout. The connection's
// stream cannot be resynchronized, so it is reset; the requests queued
// behind the head were cut off by that reset, not timed out: they are
// abandoned, as those still in flight when a run ends.
func (c *rconn) timeOut(t int64) {
	c.lastRead = t
	c.complete(eTimeout, false)
	c.abandon()
	c.reconnect()
}

// drainFor is how long the requests in flight when the window closes may
// take to complete: each its own timeout, one after another on its
// connection, but never more than fields.MaxRequestTimeout in all (unless
// one timeout is longer): a deep pipeline of long timeouts would otherwise
// bound the run by days. Requests still open then are abandoned.
func drainFor(pipeline int, timeout int64) int64 {
	return min(int64(pipeline)*timeout, max(timeout, int64(fields.MaxRequestTimeout)))
}
