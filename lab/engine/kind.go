package engine

import "github.com/linerate/linerate/lab"

// kind is what differs between the two engines over one coordinator, one
// schedule and one record: how a worker runs its share of the load, and
// what the record can say of how it ran.
type kind interface {
	// run is a worker's loop, returning when its share is done.
	run(*worker)
	// describe fills in how payloads left the socket (res.Engine).
	describe(e *engine, res *lab.Result)
	// threadFigures says whether the workers are pinned threads reading
	// their own sockets, so per-worker CPU and the first reply byte
	// (TTFB) are known.
	threadFigures() bool
}

// rawKind is the raw engine: one epoll loop per pinned thread (worker.go).
type rawKind struct {
	send sendPlan // SET bodies: copy, splice or zerocopy, and the call bound (send.go)
}

func (rawKind) run(wk *worker)      { wk.run() }
func (rawKind) threadFigures() bool { return true }

func (k rawKind) describe(e *engine, res *lab.Result) {
	w := &e.w
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
	switch {
	case w.Command == lab.CommandMSet:
		res.Engine.Send = string(lab.SendCopy) // an MSET's pieces are all written (multikey.go)
		res.Engine.SendCall = callName(k.send.call)
	case w.Ratio.Sets > 0 || w.Prefill:
		res.Engine.Send, res.Engine.SendCall = string(k.send.mode), callName(k.send.call)
	}
}

// valkeyGoKind is the cross-check: goroutines over valkey-go clients
// (valkeygo.go), which copy every reply into memory.
type valkeyGoKind struct{}

func (valkeyGoKind) run(wk *worker)      { wk.runValkeyGo() }
func (valkeyGoKind) threadFigures() bool { return false }

func (valkeyGoKind) describe(_ *engine, res *lab.Result) { res.Engine.Discard = "client" }
