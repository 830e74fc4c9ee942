package engine

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/resp"
)

type recvState int8

const (
	stHeader recvState = iota
	stPayload
)

// rconn is one connection's state machine.
type rconn struct {
	fd    int
	tls   *tlsStream // nil: plain TCP
	index int        // among all connections, for SET generations
	unit  int        // among the main connections, or the probe's
	probe bool
	addr  string // the server (in a cluster, the connection's node)
	node  int    // its node in a cluster's map; 0 otherwise
	wk    *worker
	ch    chooser
	pacing

	// pattern is the value pattern (of the one size, or of a mix's largest
	// size); mix gives each key its size, nil when every key has one.
	pattern *lab.ValueLayout
	mix     *lab.SizeMix

	gen uint64

	// send side
	cmd      []byte // request header (GET command, or SET up to the value)
	valHdr   [lab.ValueHeaderLen]byte
	tail     [lab.ValueTrailerLen + 2]byte // value trailer and the closing CRLF
	iov      []unix.Iovec                  // 4, or 4 per key of an MSET
	iovLo    int
	iovHi    int
	sending  bool
	sendLeft int
	ref      int      // the piece sent by reference (send.go); -1: none
	bs       bodySend // the means for it

	// in flight, oldest first
	q     []req
	qHead int
	qLen  int

	// receive side
	rbuf     []byte
	rlo, rhi int
	st       recvState
	lastRead int64
	// headSince is when the last reply ended: the head request's timeout
	// runs from then if it was sent before (timeout.go).
	headSince int64
	valLen    int64 // bulk length of the reply being read
	pos       int64 // bytes of value+CRLF consumed
	replyIn   uint64
	lowat     int // the socket's SO_RCVLOWAT as set by wakeFor; 0 is the kernel's 1
	failKind  errIdx
	vhdr      [lab.ValueHeaderLen]byte
	vtail     [lab.ValueTrailerLen + 2]byte
	dead      bool

	m multiState // --command mget|mset (multikey.go)
}

// failAll retires every request in flight with one error kind.
func (c *rconn) failAll(kind errIdx, t int64) {
	c.lastRead = t
	for c.qLen > 0 {
		c.complete(kind, false)
	}
	c.sending = false
}

// fail handles a broken connection: its requests fail, and it reconnects.
func (c *rconn) fail(err error) {
	kind := eConn
	if errors.Is(err, resp.ErrMalformed) || errors.Is(err, resp.ErrUnexpectedType) || errors.Is(err, resp.ErrLineTooLong) {
		kind = eProtocol
	}
	if c.fd >= 0 {
		c.bs.dropOnClose(c.fd)
	}
	c.failAll(kind, c.wk.now())
	c.reconnect()
}

func (c *rconn) close() {
	if c.fd >= 0 {
		if c.sending || c.qLen > 0 {
			c.bs.dropOnClose(c.fd)
		}
		_ = unix.EpollCtl(c.wk.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
		unix.Close(c.fd)
		c.fd, c.tls = -1, nil
	}
}

// reconnect replaces the socket. A server that refuses is gone: the
// connection is dead for the rest of the run.
func (c *rconn) reconnect() {
	c.close()
	c.rlo, c.rhi, c.st, c.replyIn, c.m.elems, c.headSince = 0, 0, stHeader, 0, 0, 0
	if !c.wk.issuing(c.wk.now()) || c.stopped {
		c.dead = true
		c.wk.dead++
		return
	}
	fd, s, err := dialConn(c.addr, 2*time.Second, c.wk.tlsCfg, c.wk.auth)
	if err == nil {
		err = c.bs.reset()
	}
	if err == nil {
		c.tls = s
		if err = c.wk.register(c, fd); err != nil {
			unix.Close(fd)
			c.fd, c.tls = -1, nil
		}
	}
	if err != nil {
		c.dead = true
		c.wk.dead++
		if c.wk.err == nil {
			c.wk.err = fmt.Errorf("reconnect to %s: %w", c.addr, err)
		}
	}
}

func (w *worker) register(c *rconn, fd int) error {
	c.fd, c.lowat = fd, 0
	// MSG_TRUNC drops payload without copying only on TCP; on any other
	// socket the kernel would copy into the small discard buffer.
	if proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || proto != unix.IPPROTO_TCP {
		w.noTrunc = true
	}
	if err := c.bs.onSocket(fd); err != nil {
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Pad: int32(c.indexInWorker())}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll add: %w", err)
	}
	return nil
}

func (c *rconn) indexInWorker() int {
	for i, x := range c.wk.conns {
		if x == c {
			return i
		}
	}
	return -1
}
