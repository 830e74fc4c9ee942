package engine

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
)

// SET bodies by reference (--send). A SET goes out as the command and
// the value's header, the value's body, then its trailer and CRLF. The
// header and trailer carry the key and generation and are written with
// writev (copied), as is every GET; with --send splice or zerocopy the
// body's pages are handed to the kernel by reference instead:
//
//   - splice: vmsplice puts references to the body's pages into the
//     connection's pipe, splice moves them into the socket, and the
//     socket's buffers point at the pages until the server acknowledged
//     them. Nothing is copied on this side.
//   - zerocopy: send with MSG_ZEROCOPY pins the pages until the kernel
//     reports their send complete on the socket's error queue. On
//     loopback and a veth pair the kernel copies at delivery and says so
//     (SO_EE_CODE_ZEROCOPY_COPIED): it pays off only on a NIC that
//     gathers from user pages.
//
// Why the pages are never written while the kernel holds them: the body
// is ValueLayout.Body, written once by lab.NewValueLayout before the first
// connection opens and shared read-only by every request of the run (the
// per-request bytes, header and trailer, live in each connection's own
// valHdr and tail and are always copied). The layout is the engine's until
// Run returns, and a connection closed with bytes still in flight is reset
// (SO_LINGER 0: its queued buffers, and their page references, are dropped
// at close), so memory the Go heap might reuse after the run is not on the
// wire either.

// refMin is the smallest body sent by reference: below it a vmsplice and
// a splice cost more than the copy they save.
const refMin = 32 << 10

// zcReapAt is how many zerocopy sends may await their completion before
// the connection reads its error queue.
const zcReapAt = 32

// bodySend is one connection's means of sending bodies by reference.
type bodySend struct {
	pipe   *rawsock.Pipe // splice; nil otherwise
	piped  int           // bytes in the pipe, not yet in the socket
	zc     *rawsock.Zerocopy
	zcSent uint32 // zerocopy sends made
}

// sendPlan is how the raw engine sends: SET bodies' mode, and the most
// bytes of a request one send call carries.
type sendPlan struct {
	mode lab.Send
	call int // rawsock.SendChunk, wholeRequest, or under TLS tlsChunk of plaintext
}

// wholeRequest bounds a writev by nothing but the request: the socket
// takes what fits in its buffer and the rest goes on the next call.
const wholeRequest = 1 << 30

// callName is the record's engine.send_call for a plan's call bound.
func callName(call int) string {
	if call == wholeRequest {
		return "request"
	}
	return fmt.Sprintf("%dKiB", call>>10)
}

// chooseSend plans the sends for asked on a path that stays on this host
// (local) or leaves it. auto is copy under TLS (sealing a record copies
// whatever the socket does) and on a local path, splice elsewhere where
// the kernel gives a pipe. Zerocopy is never picked by auto: on loopback
// and veth it copies anyway, and on a NIC only its completions would
// tell.
//
// On a local path (loopback) copy writes each request whole. There a
// send call delivers into the receiver's queue inside the call, so
// nothing is gained by sending in chunks, and splice's page references
// are copied out by the receiver all the same: SET 1 MiB against valkey
// 9.1 (2 I/O threads), 8 connections, alternated over 4 rounds, copied
// whole moved 22.8-26.6 Gbit/s at 0.18-0.22 client CPU-s/GB, spliced
// 17-30 at 0.17-0.37 (two modes, by where the kernel ran the receive),
// copied in 128 KiB calls 19-23 at 0.27-0.32. Off this host the calls
// stay rawsock.SendChunk: one flow on a veth pair sends a megabyte call
// in bursts (that constant's comment), and with 4 flows whole calls
// moved 7 % less there.
func chooseSend(asked lab.Send, tls, local bool) (sendPlan, error) {
	plan := sendPlan{mode: asked, call: rawsock.SendChunk}
	switch {
	case tls && (asked == lab.SendAuto || asked == lab.SendCopy):
		return sendPlan{mode: lab.SendCopy, call: tlsChunk}, nil
	case tls:
		return sendPlan{}, fmt.Errorf("--send %s: under --tls every byte is sealed into a TLS record, a copy; use --send copy or auto", asked) // Validate refuses it first
	case asked == lab.SendAuto && local:
		plan.mode = lab.SendCopy
	case asked == lab.SendAuto:
		plan.mode = lab.SendSplice
		p, err := rawsock.NewPipe()
		if err != nil {
			plan.mode = lab.SendCopy
		} else {
			p.Close()
		}
	}
	if plan.mode == lab.SendCopy && local {
		plan.call = wholeRequest
	}
	return plan, nil
}

// hostLocal says whether traffic to host stays on this host: host is a
// loopback address or one of this network namespace's own (addrs), which
// the kernel delivers through its loopback device. A name that does not
// resolve is taken as remote; the connection says why it fails.
func hostLocal(host string, addrs func() ([]net.Addr, error)) bool {
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	own, err := addrs()
	if err != nil {
		own = nil
	}
	for _, ip := range ips {
		if ip.IsLoopback() {
			continue
		}
		if !ownsIP(own, ip) {
			return false
		}
	}
	return true
}

// ownsIP says whether ip is one of addrs.
func ownsIP(addrs []net.Addr, ip net.IP) bool {
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// open makes the connection's means for mode.
func (b *bodySend) open(mode lab.Send) error {
	switch mode {
	case lab.SendSplice:
		p, err := rawsock.NewPipe()
		if err != nil {
			return fmt.Errorf("--send splice: pipe: %w", err)
		}
		b.pipe = p
	case lab.SendZerocopy:
		b.zc = &rawsock.Zerocopy{}
	}
	return nil
}

// onSocket readies a new socket of the connection: SO_ZEROCOPY.
func (b *bodySend) onSocket(fd int) error {
	if b.zc == nil {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1); err != nil {
		return fmt.Errorf("--send zerocopy: setsockopt SO_ZEROCOPY: %w", err)
	}
	b.zcSent, b.zc.Done = 0, 0
	return nil
}

// reset forgets a broken socket's bytes: the pipe's references go with
// a fresh pipe.
func (b *bodySend) reset() error {
	if b.pipe == nil || b.piped == 0 {
		return nil
	}
	b.pipe.Close()
	b.piped = 0
	p, err := rawsock.NewPipe()
	if err != nil {
		return fmt.Errorf("--send splice: pipe: %w", err)
	}
	b.pipe = p
	return nil
}

// dropOnClose makes closing fd drop what its send queue holds (SO_LINGER
// 0: a reset) when the connection sends by reference: a request cut off
// must not leave page references behind it.
func (b *bodySend) dropOnClose(fd int) {
	if b.pipe != nil || b.zc != nil {
		_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	}
}

func (b *bodySend) close() {
	if b.pipe != nil {
		b.pipe.Close()
	}
}

// byRef says whether the request being issued sends body by reference.
func (b *bodySend) byRef(body []byte) bool {
	return (b.pipe != nil || b.zc != nil) && len(body) >= refMin
}

// sendStep sends the next piece of the request: the pieces before the
// body by reference with writev, that body by its own means.
func (c *rconn) sendStep() (int, error) {
	if c.iovLo == c.ref {
		if c.bs.pipe != nil {
			return c.spliceBody()
		}
		return c.zerocopyBody()
	}
	hi := min(c.iovHi, c.iovLo+maxIov)
	if c.ref > c.iovLo {
		hi = c.ref
	}
	n, err := c.writev(c.iov[c.iovLo:hi])
	if err == nil {
		c.advance(n)
	}
	return n, err
}

// advance moves the request's pieces past n bytes sent.
func (c *rconn) advance(n int) {
	for n > 0 {
		v := &c.iov[c.iovLo]
		l := int(v.Len)
		if n < l {
			v.Base = (*byte)(unsafe.Add(unsafe.Pointer(v.Base), n))
			v.SetLen(l - n)
			return
		}
		n -= l
		c.iovLo++
	}
}

// spliceBody fills the empty pipe with references to the body's next
// pages, then splices at most rawsock.SendChunk of them into the socket.
func (c *rconn) spliceBody() (int, error) {
	v, p := &c.iov[c.ref], c.bs.pipe
	if c.bs.piped == 0 {
		n, err := p.Vmsplice(unsafe.Slice(v.Base, min(int(v.Len), p.Size)))
		if err != nil {
			return 0, fmt.Errorf("vmsplice: %w", err)
		}
		v.Base = (*byte)(unsafe.Add(unsafe.Pointer(v.Base), n))
		v.SetLen(int(v.Len) - n)
		c.bs.piped = n
	}
	// The trailer follows: the last pages need not leave alone.
	n, err := p.SpliceOut(c.fd, min(c.bs.piped, rawsock.SendChunk), true)
	if err != nil {
		return 0, err
	}
	c.bs.piped -= n
	if c.bs.piped == 0 && v.Len == 0 {
		c.iovLo++
	}
	return n, nil
}

// zerocopyBody sends at most rawsock.SendChunk of the body with
// MSG_ZEROCOPY. When the socket's notification memory is spent (ENOBUFS)
// and reading the completions frees none, the chunk is copied instead:
// the request never waits for a completion that has no event to wake it.
func (c *rconn) zerocopyBody() (int, error) {
	b := &c.bs
	if b.zcSent-b.zc.Done >= zcReapAt {
		if err := rawsock.ReapZerocopy(c.fd, b.zc); err != nil {
			return 0, fmt.Errorf("zerocopy completions: %w", err)
		}
	}
	v := &c.iov[c.ref]
	chunk := unsafe.Slice(v.Base, min(int(v.Len), rawsock.SendChunk))
	n, err := rawsock.SendZerocopy(c.fd, chunk)
	if errors.Is(err, unix.ENOBUFS) {
		if err = rawsock.ReapZerocopy(c.fd, b.zc); err == nil {
			n, err = rawsock.WritevUpTo(c.fd, c.iov[c.ref:c.ref+1], rawsock.SendChunk)
		}
	} else if err == nil {
		b.zcSent++
	}
	if err != nil {
		return 0, err
	}
	c.advance(n)
	return n, nil
}
