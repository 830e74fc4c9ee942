package engine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/resp"
)

// onReadable consumes everything the socket has.
func (c *rconn) onReadable() error {
	for {
		if err := c.process(); err != nil {
			return err
		}
		n, err := c.readMore()
		if err != nil {
			if rawsock.IsAgain(err) {
				return nil
			}
			if err == unix.EINTR {
				continue
			}
			return err
		}
		if n == 0 {
			return errPeerClosed
		}
	}
}

var errPeerClosed = errors.New("server closed the connection")

// readMore reads from the socket in the cheapest way the current position
// in the reply allows: discard in the kernel where nothing is checked, the
// scratch buffer where every byte is, the small buffer otherwise.
func (c *rconn) readMore() (int, error) {
	w := c.wk
	if c.st == stPayload && c.rlo == c.rhi {
		lo, hi := c.checkedRange()
		if c.pos >= lo && c.pos < hi {
			want := hi - c.pos
			c.wakeFor(want)
			if c.failKind != ok || w.w.Verify != lab.VerifyFull {
				if !w.noTrunc {
					n, err := rawsock.Discard(c.fd, int(min(want, rawsock.MaxDiscard)))
					if rawsock.TruncRefused(err) {
						w.noTrunc = true // this kernel copies; fall back for good
						return c.readMore()
					}
					if n > 0 {
						c.gotBytes(n)
						c.pos += int64(n)
					}
					return n, err
				}
			}
			n, err := c.read(w.scratch[:min(want, int64(len(w.scratch)))])
			if n > 0 {
				c.gotBytes(n)
				if c.failKind == ok && w.w.Verify == lab.VerifyFull && !c.bodyChecks(c.pos, w.scratch[:n]) {
					c.failKind = eBadContent
				}
				c.pos += int64(n)
			}
			return n, err
		}
	}
	c.wakeFor(0)
	if c.rlo == c.rhi {
		c.rlo, c.rhi = 0, 0
	} else if c.rhi == len(c.rbuf) {
		if c.rlo == 0 {
			return 0, resp.ErrLineTooLong
		}
		c.rhi = copy(c.rbuf, c.rbuf[c.rlo:c.rhi])
		c.rlo = 0
	}
	n, err := c.read(c.rbuf[c.rhi:])
	if n > 0 {
		c.gotBytes(n)
		c.rhi += n
	}
	return n, err
}

// wakeFor sets how many bytes the kernel gathers before it wakes this
// connection's worker, for left bytes of the payload still to come
// (rawsock.LowatFor). readMore calls it before every read, and the worker
// waits only after a read found nothing, so it never waits for more than
// is coming. Plain TCP only: under TLS the socket's bytes are records,
// not the payload. A failed setsockopt leaves c.lowat as it was, so the
// next read asks again; on an open socket it does not fail.
func (c *rconn) wakeFor(left int64) {
	want := 1
	if c.tls == nil {
		want = rawsock.LowatFor(left)
	}
	if want != max(c.lowat, 1) && rawsock.SetRecvLowat(c.fd, want) == nil {
		c.lowat = want
	}
}

// checkedRange is the part of the value that is not looked at in the small
// buffer: the body for --verify header and full, everything but the CRLF
// for none, and all of it for a reply already known to be wrong.
func (c *rconn) checkedRange() (lo, hi int64) {
	if c.failKind != ok || c.wk.w.Verify == lab.VerifyNone || c.valLen < lab.MinVerifiableSize {
		return 0, c.valLen
	}
	return lab.ValueHeaderLen, c.valLen - lab.ValueTrailerLen
}

func (c *rconn) gotBytes(n int) {
	c.lastRead = c.wk.now()
	c.replyIn += uint64(n)
	if c.qLen > 0 && c.q[c.qHead].firstAt == 0 {
		c.q[c.qHead].firstAt = c.lastRead
	}
}

// process parses replies out of the small buffer.
func (c *rconn) process() error {
	for c.rlo < c.rhi {
		if c.qLen == 0 {
			return fmt.Errorf("%w: %d bytes with no request in flight", resp.ErrMalformed, c.rhi-c.rlo)
		}
		head := &c.q[c.qHead]
		if head.firstAt == 0 {
			head.firstAt = c.lastRead
		}
		switch c.st {
		case stHeader:
			h, err := resp.ParseHeader(c.rbuf[c.rlo:c.rhi])
			if err == resp.ErrNeedMore {
				return nil
			}
			if err != nil {
				return err
			}
			c.rlo += h.Used
			if err := c.onHeader(head, h); err != nil {
				return err
			}
		case stPayload:
			end := c.valLen + 2
			k := min(int64(c.rhi-c.rlo), end-c.pos)
			c.absorb(c.rbuf[c.rlo : c.rlo+int(k)])
			c.rlo += int(k)
			c.pos += k
			if c.pos == end {
				c.finishBulk(head)
			}
		}
	}
	return nil
}

// onHeader handles a reply line: simple replies complete here, bulk
// replies switch to the payload state.
func (c *rconn) onHeader(head *req, h resp.Header) error {
	if head.multi && head.op == opGet {
		return c.onMGetHeader(head, h)
	}
	prefilled := c.wk.w.Prefill
	switch {
	case h.Kind == resp.Error:
		if c.wk.route == nil || !c.redirect(head, h.Line) {
			c.complete(eServer, false)
		}
	case head.op == opSet && h.Kind == resp.Simple:
		c.complete(ok, false)
	case h.Kind == resp.Bulk && h.N > int64(lab.MaxValueSize):
		return fmt.Errorf("%w: bulk length %d is beyond any value this client writes", resp.ErrMalformed, h.N)
	case head.op == opGet && h.Kind == resp.Bulk && h.N >= 0:
		c.st, c.valLen, c.pos, c.failKind = stPayload, h.N, 0, ok
		if h.N != head.size {
			c.failKind = eWrongLength
		}
	case head.op == opGet && (h.Kind == resp.Bulk || h.Kind == resp.Null):
		if prefilled {
			c.complete(eNilPrefill, false)
		} else {
			c.complete(ok, true)
		}
	default:
		return fmt.Errorf("%w: %c reply to %s", resp.ErrUnexpectedType, h.Kind, opNames[head.op])
	}
	return nil
}

// absorb keeps the bytes of the value that verification reads: the header,
// the trailer and the closing CRLF. p starts at c.pos.
func (c *rconn) absorb(p []byte) {
	off := c.pos
	if off < lab.ValueHeaderLen {
		copy(c.vhdr[off:], p)
	}
	tailLo := c.valLen - lab.ValueTrailerLen
	if c.valLen < lab.MinVerifiableSize {
		tailLo = c.valLen
	}
	if end := off + int64(len(p)); end > tailLo {
		s := max(off, tailLo)
		copy(c.vtail[s-tailLo:], p[s-off:])
	}
	if c.failKind == ok && c.wk.w.Verify == lab.VerifyFull && !c.bodyChecks(off, p) {
		c.failKind = eBadContent
	}
}

func (c *rconn) finishBulk(head *req) {
	c.st = stHeader
	kind, framed := c.bulkResult(head)
	if !framed {
		// The framing itself is off; the connection cannot be trusted.
		c.complete(eProtocol, false)
		c.fail(fmt.Errorf("%w: bulk reply not closed by CRLF", resp.ErrMalformed))
		return
	}
	if head.multi {
		c.elementDone(kind, false)
		return
	}
	c.complete(kind, false)
}

// bulkResult judges a value read whole (valLen bytes and CRLF through
// absorb): whether it was closed by CRLF, and if so how it checked.
func (c *rconn) bulkResult(head *req) (kind errIdx, framed bool) {
	kind = c.failKind
	n := c.valLen
	crlf := c.vtail[lab.ValueTrailerLen:]
	if n < lab.MinVerifiableSize {
		crlf = c.vtail[:2]
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		return eProtocol, false
	}
	key := head.key
	if head.multi {
		key = c.elemKey()
	}
	if kind == ok && c.wk.w.Verify != lab.VerifyNone && n >= lab.MinVerifiableSize {
		l := c.pattern.Prefix(n)
		if _, good := l.CheckEnds(c.vhdr[:], c.vtail[:lab.ValueTrailerLen], key); !good {
			kind = eBadContent
		}
	}
	return kind, true
}

// bodyChecks compares p, at offset off of the value being read, with the
// pattern of its size (asked only while the reply is not known wrong, so
// its length is the one its request expects).
func (c *rconn) bodyChecks(off int64, p []byte) bool {
	l := c.pattern.Prefix(c.valLen)
	return l.CheckBody(off, p)
}

// complete retires the oldest request and records it.
func (c *rconn) complete(kind errIdx, miss bool) {
	r := c.q[c.qHead]
	c.qHead = (c.qHead + 1) % len(c.q)
	c.qLen--
	in := c.replyIn
	c.replyIn = 0
	c.headSince = c.lastRead
	c.wk.record(&r, kind, miss, c.lastRead, in)
}
