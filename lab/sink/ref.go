package sink

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
)

// GET bodies by reference: the body's pages go into the connection's pipe
// (vmsplice) and from there into the socket (splice), so the sink copies
// none of a value's bytes and a bench that drops them with MSG_TRUNC
// leaves none copied at all on loopback. The header, trailer and small
// replies are still written. Server.Send says why the pages never change
// while the kernel holds them.

// refMin is the smallest body sent by reference; below it the two calls
// cost more than the copy.
const refMin = 32 << 10

// refSend is one connection's pipe and the splice in progress.
type refSend struct {
	pipe  *rawsock.Pipe // nil: bodies are copied
	piped int           // bytes in the pipe, not yet in the socket
	left  []byte        // the body's bytes not yet in the pipe
	got   int           // the last splice's bytes
	err   error
	chunk int                // the most one splice takes (Server.sendChunk)
	call  func(uintptr) bool // spliceOnce, made once: a method value per call escapes
}

// open makes the pipe when the connection sends by reference (Server.Send).
func (r *refSend) open(mode lab.Send) error {
	if mode == lab.SendAuto || mode == lab.SendCopy {
		return nil
	}
	p, err := rawsock.NewPipe()
	if err != nil {
		return fmt.Errorf("sink send %s: pipe: %w", mode, err)
	}
	r.pipe = p
	r.call = r.spliceOnce
	return nil
}

// takes says whether b goes by reference.
func (r *refSend) takes(b []byte) bool { return r.pipe != nil && len(b) >= refMin }

// close drops the pipe; a socket closed with bytes still queued resets,
// so no reference to the sink's pages outlives the connection.
func (r *refSend) close(raw syscall.RawConn) {
	if r.pipe == nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	})
	r.pipe.Close()
}

// spliceAll sends b by reference.
func (sc *sinkConn) spliceAll(b []byte) error {
	r := &sc.ref
	r.left, r.chunk = b, sc.s.sendChunk()
	for len(r.left) > 0 || r.piped > 0 {
		if err := sc.raw.Write(r.call); err != nil {
			return err
		}
		if r.err != nil {
			return r.err
		}
		r.piped -= r.got
		sc.sent += int64(r.got)
	}
	return nil
}

// spliceOnce fills the empty pipe from left, then splices at most chunk
// bytes into the socket; false asks the poller to wait.
func (r *refSend) spliceOnce(fd uintptr) bool {
	r.got, r.err = 0, nil
	if r.piped == 0 {
		n, err := r.pipe.Vmsplice(r.left[:min(len(r.left), r.pipe.Size)])
		if err != nil {
			r.err = fmt.Errorf("sink vmsplice: %w", err)
			return true
		}
		r.left, r.piped = r.left[n:], n
	}
	n, err := r.pipe.SpliceOut(int(fd), min(r.piped, r.chunk), true)
	if rawsock.IsAgain(err) {
		return false
	}
	r.got, r.err = n, err
	return true
}
