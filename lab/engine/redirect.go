package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/resp"
)

// A cluster's redirects, kept per worker as [phase][op][kind].
const (
	redirMoved = iota
	redirAsk
)

// maxHops bounds how often one request follows a redirect: a slot that
// keeps moving is an error, not a loop.
const maxHops = 3

// maxRedraw bounds how many keys a connection draws past ones whose slot
// left its node before it sends one anyway (and follows the MOVED).
const maxRedraw = 8

var askingCmd = []byte("*1\r\n$6\r\nASKING\r\n")

// sideConn is a worker's blocking connection to one node, used only to
// send a redirected request again; it is opened at the first redirect to
// that node.
type sideConn struct {
	nc   net.Conn
	r    *bufio.Reader
	out  []byte
	hdr  [lab.ValueHeaderLen]byte
	tail [lab.ValueTrailerLen + 2]byte
}

// parseRedirect reads "MOVED <slot> <host:port>" or "ASK <slot>
// <host:port>"; a node that announces no host (":port") is on from's.
func parseRedirect(line []byte, from string) (kind, slot int, addr string, ok bool) {
	f := bytes.Fields(line)
	if len(f) != 3 {
		return 0, 0, "", false
	}
	switch string(f[0]) {
	case "MOVED":
		kind = redirMoved
	case "ASK":
		kind = redirAsk
	default:
		return 0, 0, "", false
	}
	s, err := strconv.Atoi(string(f[1]))
	if err != nil || s < 0 || s >= cluster.Slots {
		return 0, 0, "", false
	}
	addr = string(f[2])
	if addr[0] == ':' {
		host, _, _ := net.SplitHostPort(from)
		addr = net.JoinHostPort(host, addr[1:])
	}
	return kind, s, addr, true
}

// redirect handles an error reply to head on a cluster connection: a
// MOVED or ASK is followed and head completes here (true); any other
// error is the caller's (false).
func (c *rconn) redirect(head *req, line []byte) bool {
	w := c.wk
	kind, slot, addr, ok := parseRedirect(line, c.addr)
	if !ok {
		return false
	}
	var res errIdx
	miss := false
	for hop := 0; ; hop++ {
		w.redir[w.sched.phaseAt(w.now())][head.op][kind]++
		if kind == redirMoved {
			w.owner[slot] = int16(w.route.m.NodeOf(addr))
		}
		var again []byte
		res, miss, again = c.retry(head, kind == redirAsk, addr)
		if again == nil {
			break
		}
		if kind, slot, addr, ok = parseRedirect(again, addr); !ok || hop+1 == maxHops {
			res = eServer
			break
		}
	}
	c.lastRead = w.now()
	c.complete(res, miss)
	return true
}

// retry sends head again at addr on the worker's side connection to it
// and reads the reply whole, checking a GET's value as the epoll loop
// does. A reply that is itself a redirect comes back as again.
func (c *rconn) retry(head *req, asking bool, addr string) (kind errIdx, miss bool, again []byte) {
	w := c.wk
	sc, err := w.sideTo(addr)
	if err != nil {
		w.sideErr(err)
		return eConn, false, nil
	}
	_ = sc.nc.SetDeadline(time.Now().Add(w.w.RequestTimeout.D()))
	kind, miss, again, err = c.sideRoundTrip(sc, head, asking)
	if err != nil {
		sc.nc.Close()
		delete(w.side, addr)
		w.sideErr(fmt.Errorf("redirected request to %s: %w", addr, err))
		return eConn, false, nil
	}
	return kind, miss, again
}

func (w *worker) sideErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

// sideTo is the worker's side connection to addr, opened (and
// authenticated) on first use.
func (w *worker) sideTo(addr string) (*sideConn, error) {
	if sc := w.side[addr]; sc != nil {
		return sc, nil
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("redirect to %s: %w", addr, err)
	}
	sc := &sideConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	if w.auth != nil {
		_ = nc.SetDeadline(time.Now().Add(authTimeout))
		if _, err := nc.Write(w.auth); err == nil {
			var line []byte
			if line, err = readLine(sc.r); err == nil && string(line) != "+OK\r\n" {
				err = fmt.Errorf("AUTH refused: %s", resp.Printable(line))
			}
		}
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("redirect to %s: %w", addr, err)
		}
	}
	if w.side == nil {
		w.side = map[string]*sideConn{}
	}
	w.side[addr] = sc
	return sc, nil
}

func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = resp.ErrLineTooLong
	}
	return line, err
}

// sideRoundTrip writes head (after ASKING when asked) and reads its reply.
func (c *rconn) sideRoundTrip(sc *sideConn, head *req, asking bool) (kind errIdx, miss bool, again []byte, err error) {
	w := c.wk
	sc.out = sc.out[:0]
	if asking {
		sc.out = append(sc.out, askingCmd...)
	}
	slot := w.route.slotOf(head.key)
	bufs := net.Buffers{}
	if head.op == opGet {
		sc.out = appendGetIn(sc.out, head.key, w.w.KeySize, slot)
		bufs = append(bufs, sc.out)
	} else {
		sc.out = appendSetHeaderIn(sc.out, head.key, w.w.KeySize, slot, head.size)
		l := c.pattern.Prefix(head.size)
		c.gen++
		gen := uint64(c.index)<<40 | c.gen
		bufs = append(bufs, sc.out)
		if head.size >= lab.MinVerifiableSize {
			l.PutHeader(sc.hdr[:], head.key, gen)
			l.PutTrailer(sc.tail[:lab.ValueTrailerLen], head.key, gen)
			sc.tail[lab.ValueTrailerLen], sc.tail[lab.ValueTrailerLen+1] = '\r', '\n'
			bufs = append(bufs, sc.hdr[:], l.Body[lab.ValueHeaderLen:head.size-lab.ValueTrailerLen], sc.tail[:])
		} else {
			sc.tail[0], sc.tail[1] = '\r', '\n'
			bufs = append(bufs, l.Body[:head.size], sc.tail[:2])
		}
	}
	n, err := bufs.WriteTo(sc.nc)
	head.wireOut += uint64(n)
	if err != nil {
		return 0, false, nil, err
	}
	if asking {
		line, err := readLine(sc.r)
		if err != nil {
			return 0, false, nil, err
		}
		c.replyIn += uint64(len(line))
		if string(line) != "+OK\r\n" {
			return 0, false, nil, fmt.Errorf("ASKING: %s", resp.Printable(line))
		}
	}
	line, err := readLine(sc.r)
	if err != nil {
		return 0, false, nil, err
	}
	head.firstAt = w.now()
	c.replyIn += uint64(len(line))
	h, err := resp.ParseHeader(line)
	if err != nil {
		return 0, false, nil, err
	}
	switch {
	case h.Kind == resp.Error:
		if _, _, _, ok := parseRedirect(h.Line, c.addr); ok {
			return 0, false, append([]byte(nil), h.Line...), nil
		}
		return eServer, false, nil, nil
	case head.op == opSet && h.Kind == resp.Simple:
		return ok, false, nil, nil
	case head.op == opGet && h.Kind == resp.Bulk && h.N >= 0 && h.N <= int64(lab.MaxValueSize):
		return c.sideValue(sc, head, h.N)
	case head.op == opGet && (h.Kind == resp.Bulk || h.Kind == resp.Null):
		if w.w.Prefill {
			return eNilPrefill, false, nil, nil
		}
		return ok, true, nil, nil
	}
	return 0, false, nil, fmt.Errorf("%w: %c reply to %s", resp.ErrUnexpectedType, h.Kind, opNames[head.op])
}

// sideValue reads a GET's value of n bytes through the same checks as the
// epoll loop's (absorb, bulkResult), using the connection's payload state,
// which is idle while a reply line is being handled.
func (c *rconn) sideValue(sc *sideConn, head *req, n int64) (errIdx, bool, []byte, error) {
	c.valLen, c.pos, c.failKind = n, 0, ok
	if n != head.size {
		c.failKind = eWrongLength
	}
	scratch := c.wk.scratch
	for end := n + 2; c.pos < end; {
		k, err := io.ReadFull(sc.r, scratch[:min(end-c.pos, int64(len(scratch)))])
		c.replyIn += uint64(k)
		c.absorb(scratch[:k])
		c.pos += int64(k)
		if err != nil {
			return 0, false, nil, err
		}
	}
	kind, framed := c.bulkResult(head)
	if !framed {
		return 0, false, nil, fmt.Errorf("%w: bulk reply not closed by CRLF", resp.ErrMalformed)
	}
	return kind, false, nil, nil
}

// closeSide closes the worker's side connections.
func (w *worker) closeSide() {
	for addr, sc := range w.side {
		sc.nc.Close()
		delete(w.side, addr)
	}
}
