package engine

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/internal/rawsock"
)

// TLS in the raw engine. The workers keep their design: one
// pinned thread, one epoll loop, non-blocking sockets. Each TLS connection
// is a crypto/tls client over fdConn, a net.Conn on the raw socket that
// never blocks once the handshake is done:
//
//   - Reads: fdConn.Read returns a temporary net.Error on EAGAIN, which
//     crypto/tls passes up without poisoning the connection (a partial
//     record stays in its buffer), so the epoll loop calls tls.Conn.Read
//     exactly where it called read(2), until EAGAIN as edge triggering
//     wants.
//   - Writes: crypto/tls makes any write error permanent, so fdConn.Write
//     never fails: it appends the ciphertext to a buffer of its own, which
//     the loop flushes to the socket (at once, and again on EPOLLOUT). At
//     most tlsChunk of plaintext is sealed per call, and only when the
//     buffer is empty, so it stays that small and the socket's send
//     buffer, not this one, is where a slow server makes the client wait.
//
// A goroutine per connection would have needed a second request/reply
// loop beside the workers' and would have put the Go scheduler between
// the pinned threads and their sockets; this keeps one loop for both.
// What costs: every GET byte is decrypted in user space and copied out
// through the worker's reused scratch buffer, so MSG_TRUNC cannot apply
// (the record's engine.discard says "tls"); bytes are counted as the
// plaintext the server's INFO counters count, payload plus protocol.
//
// A TLS 1.3 session with AES-GCM then leaves crypto/tls: its records are
// read and written by tlsrecord.go, which allocates nothing per request.
// kTLS (setsockopt TCP_ULP "tls" with those same keys, so the kernel
// decrypts and read(2) returns plaintext) is not built: the kernels this
// was written on have no tls ULP (ENOENT), and the decrypt stays in this
// process either way unless the NIC offloads it.

// tlsChunk is the most plaintext sealed per write call: 16 full records.
const tlsChunk = 256 << 10

// tlsStream is one connection's TLS session.
type tlsStream struct {
	conn *tls.Conn
	fc   fdConn
	rec  *recordLayer // TLS 1.3 with AES-GCM: the records after the handshake (tlsrecord.go); nil: crypto/tls's
}

// handshakeTLS runs the TLS handshake on a connected non-blocking socket,
// blocking (poll) until timeout, then leaves the session non-blocking.
func handshakeTLS(fd int, cfg *tls.Config, timeout time.Duration) (*tlsStream, error) {
	s := &tlsStream{fc: fdConn{fd: fd, deadline: time.Now().Add(timeout)}}
	s.fc.out = make([]byte, 0, tlsChunk+tlsChunk/8) // records' headers and tags
	var keys keyLog
	cfg = cfg.Clone()
	cfg.KeyLogWriter = &keys
	// No session resumption: a server may then send no ticket at all, and
	// none can arrive inside the handshake's reads (tlsrecord.go).
	cfg.SessionTicketsDisabled, cfg.ClientSessionCache = true, nil
	s.conn = tls.Client(&s.fc, cfg)
	if err := s.conn.Handshake(); err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	rec, err := newRecordLayer(fd, s.conn.ConnectionState(), &keys)
	if err != nil {
		return nil, err
	}
	s.rec = rec
	s.fc.deadline = time.Time{}
	return s, nil
}

// authTLS is authRaw over a TLS session, still in blocking mode.
func authTLS(s *tlsStream, cmd []byte) error {
	s.fc.deadline = time.Now().Add(authTimeout)
	defer func() { s.fc.deadline = time.Time{} }()
	if s.rec != nil {
		return s.authRecords(cmd)
	}
	if _, err := s.conn.Write(cmd); err != nil {
		return fmt.Errorf("send AUTH: %w", err)
	}
	return readAuthReply(oneByte{s.conn})
}

// authRecords is authTLS on the session's own records, blocking (poll)
// until the deadline.
func (s *tlsStream) authRecords(cmd []byte) error {
	var iov [1]unix.Iovec
	rawsock.SetIov(&iov[0], cmd)
	s.rec.seal(iov[:])
	for {
		err := s.rec.flush()
		if err == nil {
			break
		}
		if !rawsock.IsAgain(err) {
			return fmt.Errorf("send AUTH: %w", err)
		}
		if err := s.fc.wait(unix.POLLOUT); err != nil {
			return fmt.Errorf("send AUTH: %w", err)
		}
	}
	return readAuthReply(oneByte{blockingRecords{s}})
}

// blockingRecords reads the session's records, polling until the deadline.
type blockingRecords struct{ s *tlsStream }

func (b blockingRecords) Read(p []byte) (int, error) {
	for {
		n, err := b.s.rec.Read(p)
		switch {
		case err == nil:
			return n, nil
		case err == errServerClosed:
			return 0, io.EOF
		case rawsock.IsAgain(err):
			if err := b.s.fc.wait(unix.POLLIN); err != nil {
				return 0, err
			}
		case err != unix.EINTR:
			return 0, err
		}
	}
}

// oneByte reads one byte at a time, so nothing past the AUTH reply leaves
// the session's buffer.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:1]) }

// dialConn opens a data connection: TCP, the TLS handshake when cfg is
// set, AUTH when auth is. On error nothing stays open.
func dialConn(addr string, timeout time.Duration, cfg *tls.Config, auth []byte) (int, *tlsStream, error) {
	fd, err := dialRaw(addr, timeout)
	if err != nil {
		return -1, nil, err
	}
	var s *tlsStream
	if cfg != nil {
		if s, err = handshakeTLS(fd, cfg, timeout); err == nil && auth != nil {
			err = authTLS(s, auth)
		}
	} else if auth != nil {
		err = authRaw(fd, auth)
	}
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, s, nil
}

// read reads the connection's plaintext into p: (0, nil) when the server
// closed, EAGAIN when nothing more is there now, as rawsock.Read.
func (c *rconn) read(p []byte) (int, error) {
	if c.tls == nil {
		return rawsock.Read(c.fd, p)
	}
	if c.tls.rec != nil {
		n, err := c.tls.rec.Read(p)
		if err == errServerClosed {
			return 0, nil
		}
		return n, err
	}
	n, err := c.tls.conn.Read(p)
	switch {
	case n > 0:
		return n, nil // an error with data comes again on the next read
	case errors.Is(err, errAgain):
		return 0, unix.EAGAIN
	case errors.Is(err, io.EOF):
		return 0, nil
	}
	return 0, err
}

// writev sends iov's bytes: up to the plan's call bound for plain TCP
// (sendPlan: rawsock.SendChunk, or the whole request); for TLS up to
// tlsChunk (the plan's bound under TLS) sealed into the session, once earlier ciphertext has left. It
// returns the plaintext bytes taken, or EAGAIN, as rawsock.Writev.
func (c *rconn) writev(iov []unix.Iovec) (int, error) {
	if c.tls == nil {
		return rawsock.WritevUpTo(c.fd, iov, c.wk.send.call)
	}
	if r := c.tls.rec; r != nil {
		if err := r.flush(); err != nil {
			return 0, err
		}
		n := r.seal(iov)
		if err := r.flush(); err != nil && !rawsock.IsAgain(err) {
			return 0, err
		}
		return n, nil
	}
	if err := c.tls.fc.flush(); err != nil {
		return 0, err
	}
	n := 0
	for _, v := range iov {
		p := unsafe.Slice(v.Base, v.Len)
		if room := tlsChunk - n; len(p) > room {
			p = p[:room]
		}
		m, err := c.tls.conn.Write(p) // fdConn.Write cannot fail
		n += m
		if err != nil {
			return 0, err
		}
		if n == tlsChunk {
			break
		}
	}
	if err := c.tls.fc.flush(); err != nil && !rawsock.IsAgain(err) {
		return 0, err
	}
	return n, nil
}

// onWritable sends what the socket now takes: ciphertext left over from
// a request already sealed, then the rest of the request being sent.
func (c *rconn) onWritable(t int64) error {
	if c.tls != nil {
		var err error
		if c.tls.rec != nil {
			err = c.tls.rec.flush()
		} else {
			err = c.tls.fc.flush()
		}
		if err != nil && !rawsock.IsAgain(err) {
			return err
		}
	}
	if c.sending {
		return c.flush(t)
	}
	return nil
}

// fdConn is the net.Conn crypto/tls runs over: the raw socket, blocking
// (poll) until deadline while it is set (handshake, AUTH), non-blocking
// once it is zero.
type fdConn struct {
	fd       int
	deadline time.Time
	out      []byte // sealed, not yet taken by the socket
	outOff   int
}

// errAgain is EAGAIN as crypto/tls must see it to retry later: temporary.
var errAgain net.Error = againError{}

type againError struct{}

func (againError) Error() string   { return "socket would block" }
func (againError) Timeout() bool   { return false }
func (againError) Temporary() bool { return true }

func (f *fdConn) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case rawsock.IsAgain(err):
			if f.deadline.IsZero() {
				return 0, errAgain
			}
			if err := f.wait(unix.POLLIN); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write keeps the ciphertext for flush; in blocking mode it flushes now.
func (f *fdConn) Write(p []byte) (int, error) {
	f.out = append(f.out, p...)
	if f.deadline.IsZero() {
		return len(p), nil
	}
	for {
		err := f.flush()
		if err == nil {
			return len(p), nil
		}
		if !rawsock.IsAgain(err) {
			return 0, err
		}
		if err := f.wait(unix.POLLOUT); err != nil {
			return 0, err
		}
	}
}

// flush writes the kept ciphertext until done or EAGAIN.
func (f *fdConn) flush() error { return flushOut(f.fd, &f.out, &f.outOff) }

// flushOut writes (*out)[*off:] to fd until done (then empties *out) or
// an error, EAGAIN included; *off says how far it got.
func flushOut(fd int, out *[]byte, off *int) error {
	for *off < len(*out) {
		n, err := rawsock.Write(fd, (*out)[*off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		*off += n
	}
	*out, *off = (*out)[:0], 0
	return nil
}

// wait polls for ev until the deadline.
func (f *fdConn) wait(ev int16) error {
	for {
		left := time.Until(f.deadline)
		if left <= 0 {
			return errTLSTimeout
		}
		fds := []unix.PollFd{{Fd: int32(f.fd), Events: ev}}
		_, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		return err
	}
}

var errTLSTimeout = errors.New("no answer before the deadline")

// The rest of net.Conn: crypto/tls's client uses none of it for a
// session whose configuration names the server.
func (f *fdConn) Close() error                     { return nil } // the rconn owns the fd
func (f *fdConn) LocalAddr() net.Addr              { return nil }
func (f *fdConn) RemoteAddr() net.Addr             { return nil }
func (f *fdConn) SetDeadline(time.Time) error      { return nil }
func (f *fdConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fdConn) SetWriteDeadline(time.Time) error { return nil }
