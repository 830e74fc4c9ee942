package engine

import (
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
)

// sizeFor is key's value size: the pattern's, or the one mix gives it.
func sizeFor(pattern *lab.ValueLayout, mix *lab.SizeMix, key uint32) int64 {
	if mix == nil {
		return pattern.Size
	}
	return int64(mix.SizeFor(pattern.Seed, key))
}

// classFor is size's class in mix; -1 for one size.
func classFor(mix *lab.SizeMix, size int64) int16 {
	if mix == nil {
		return -1
	}
	return int16(mix.Class(lab.Size(size)))
}

// wantsMore is false once a prefill connection has written its keys.
func (c *rconn) wantsMore() bool {
	if c.wk.sched.prefillMode {
		return !c.ch.prefilled()
	}
	return true
}

// fill starts requests until the pipeline is full or the pacer says wait.
func (c *rconn) fill(t int64) {
	for !c.dead && !c.sending && c.qLen < len(c.q) && !c.stopped && c.wk.issuing(t) && c.wantsMore() && c.due(c.wk, t) {
		c.issue(t)
		if err := c.flush(t); err != nil {
			c.fail(err)
			return
		}
	}
}

// issue builds the next request into the connection's send buffers.
func (c *rconn) issue(t int64) {
	w := c.wk.w
	prefill := c.wk.sched.prefillMode
	op, key := c.ch.next(prefill)
	slot := -1
	if rt := c.wk.route; rt != nil {
		// Past the prefill (which writes every key), a key whose slot
		// left this node is drawn again rather than asked of it.
		for i := 0; !prefill && i < maxRedraw && c.wk.owner[rt.slotOf(key)] != int16(c.node); i++ {
			op, key = c.ch.next(false)
		}
		slot = rt.slotOf(key)
	}
	size := sizeFor(c.pattern, c.mix, key)
	r := req{op: op, key: key, issued: t, size: size, probe: c.probe, class: classFor(c.mix, size)}
	if r.intended, r.paced = c.started(); r.paced {
		c.wk.issuedPaced(r.intended, t, c.probe)
	}
	idx := (c.qHead + c.qLen) % len(c.q)
	if c.m.n > 0 && !c.wk.sched.prefillMode { // the prefill writes one key a SET
		c.issueMulti(&r, idx)
	} else if op == opGet {
		c.cmd = appendGetIn(c.cmd[:0], key, w.KeySize, slot)
		rawsock.SetIov(&c.iov[0], c.cmd)
		c.iovLo, c.iovHi, c.ref = 0, 1, -1
		r.wireOut = uint64(len(c.cmd))
	} else {
		l := c.pattern.Prefix(size)
		c.gen++
		gen := uint64(c.index)<<40 | c.gen
		c.ref = -1
		c.cmd = appendSetHeaderIn(c.cmd[:0], key, w.KeySize, slot, size)
		rawsock.SetIov(&c.iov[0], c.cmd)
		if size >= lab.MinVerifiableSize {
			l.PutHeader(c.valHdr[:], key, gen)
			l.PutTrailer(c.tail[:lab.ValueTrailerLen], key, gen)
			c.tail[lab.ValueTrailerLen], c.tail[lab.ValueTrailerLen+1] = '\r', '\n'
			rawsock.SetIov(&c.iov[1], c.valHdr[:])
			body := l.Body[lab.ValueHeaderLen : size-lab.ValueTrailerLen]
			rawsock.SetIov(&c.iov[2], body)
			rawsock.SetIov(&c.iov[3], c.tail[:])
			c.iovHi = 4
			if c.bs.byRef(body) {
				c.ref = 2
			}
		} else {
			rawsock.SetIov(&c.iov[1], l.Body[:size])
			c.tail[0], c.tail[1] = '\r', '\n'
			rawsock.SetIov(&c.iov[2], c.tail[:2])
			c.iovHi = 3
		}
		c.iovLo = 0
		r.wireOut = uint64(len(c.cmd)) + uint64(size) + 2
	}
	c.sendLeft = int(r.wireOut)
	c.sending = true
	c.q[idx] = r
	c.qLen++
}

// flush writes as much of the current request as the socket takes.
func (c *rconn) flush(t int64) error {
	for c.sending {
		n, err := c.sendStep()
		if err != nil {
			if rawsock.IsAgain(err) {
				return nil
			}
			if err == unix.EINTR {
				continue
			}
			return err
		}
		tail := &c.q[(c.qHead+c.qLen-1)%len(c.q)]
		if tail.sentAt == 0 && n > 0 {
			tail.sentAt = t
		}
		c.sendLeft -= n
		if c.sendLeft == 0 {
			c.sending = false
			return nil
		}
	}
	return nil
}
