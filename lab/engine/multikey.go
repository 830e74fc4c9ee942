package engine

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/resp"
)

// Multi-key commands (--command mget|mset): one request names
// --keys-per-op distinct keys. An MGET's reply is an array of that many
// bulk strings, each read and verified as a GET's reply is (the same
// discard and check of the value's ends), and the request completes once,
// with the first failure among its keys as its one error; its payload is
// the sum of its values. An MSET goes out as four pieces per key (the
// key's text, the value's header, the shared body, the trailer and CRLF),
// nothing copied. Every buffer is made with the connection.

// opName is the record's name of operation op in phase ph: MGET or MSET
// in a multi-key run, bar the prefill's single-key SETs.
func (e *engine) opName(ph, op int) lab.Op {
	if ph == phPrefill {
		return opNames[op]
	}
	switch {
	case e.w.Command == lab.CommandMGet && op == opGet:
		return lab.OpMGet
	case e.w.Command == lab.CommandMSet && op == opSet:
		return lab.OpMSet
	}
	return opNames[op]
}

// maxIov is the kernel's limit on the pieces of one writev (UIO_MAXIOV).
const maxIov = 1024

// multiState is a connection's multi-key state; n is 0 for single-key runs.
type multiState struct {
	n    int
	keys []uint32 // n per queue slot: the keys of the requests in flight

	// MSET send side: the text before each value (offs[i]:offs[i+1] of
	// text is key i's), each value's header, and each value's trailer
	// with its closing CRLF.
	text  []byte
	offs  []int
	hdrs  []byte
	tails []byte

	// MGET receive side: the element being read of how many (0: no array
	// is being read), and what the reply comes to so far.
	elem, elems int
	verdict     errIdx
	miss        bool
}

// initMulti sizes c's buffers for n keys per request of keySize-byte keys.
func (c *rconn) initMulti(n, keySize int) {
	c.m.n = n
	c.m.keys = make([]uint32, len(c.q)*n)
	perKey := keySize + 2*len("$\r\n") + 2*20 // two bulk headers with their lengths
	c.cmd = make([]byte, 0, 32+n*perKey)
	c.m.text = make([]byte, 0, 32+n*perKey)
	c.m.offs = make([]int, n+1)
	c.m.hdrs = make([]byte, n*lab.ValueHeaderLen)
	c.m.tails = make([]byte, n*(lab.ValueTrailerLen+2))
	c.iov = make([]unix.Iovec, max(len(c.iov), 4*n))
}

// slotKeys are the keys of the request in queue slot i.
func (c *rconn) slotKeys(i int) []uint32 { return c.m.keys[i*c.m.n : (i+1)*c.m.n] }

// issueMulti builds the multi-key request r into the send buffers; its
// first key is r.key, the others are drawn here, distinct.
func (c *rconn) issueMulti(r *req, slot int) {
	keys := c.slotKeys(slot)
	keys[0] = r.key
	c.ch.moreKeys(keys)
	r.multi = true
	r.size = 0
	for _, k := range keys {
		r.size += sizeFor(c.pattern, c.mix, k)
	}
	ks := c.wk.w.KeySize
	if r.op == opGet {
		c.cmd = appendMGet(c.cmd[:0], keys, ks)
		rawsock.SetIov(&c.iov[0], c.cmd)
		c.iovLo, c.iovHi, c.ref = 0, 1, -1
		r.wireOut = uint64(len(c.cmd))
		return
	}
	m := &c.m
	m.text = append(m.text[:0], '*')
	m.text = strconv.AppendInt(m.text, int64(1+2*len(keys)), 10)
	m.text = append(m.text, "\r\n$4\r\nMSET\r\n"...)
	for i, k := range keys {
		m.offs[i] = len(m.text)
		m.text = appendBulkKey(m.text, k, ks)
		m.text = append(m.text, '$')
		m.text = strconv.AppendInt(m.text, sizeFor(c.pattern, c.mix, k), 10)
		m.text = append(m.text, "\r\n"...)
	}
	m.offs[0] = 0 // key 0's piece starts with the array header
	m.offs[len(keys)] = len(m.text)
	iov := 0
	for i, k := range keys {
		size := sizeFor(c.pattern, c.mix, k)
		l := c.pattern.Prefix(size)
		c.gen++
		gen := uint64(c.index)<<40 | c.gen
		rawsock.SetIov(&c.iov[iov], m.text[m.offs[i]:m.offs[i+1]])
		tail := m.tails[i*(lab.ValueTrailerLen+2) : (i+1)*(lab.ValueTrailerLen+2)]
		if size >= lab.MinVerifiableSize {
			hdr := m.hdrs[i*lab.ValueHeaderLen : (i+1)*lab.ValueHeaderLen]
			l.PutHeader(hdr, k, gen)
			l.PutTrailer(tail, k, gen)
			tail[lab.ValueTrailerLen], tail[lab.ValueTrailerLen+1] = '\r', '\n'
			rawsock.SetIov(&c.iov[iov+1], hdr)
			rawsock.SetIov(&c.iov[iov+2], l.Body[lab.ValueHeaderLen:size-lab.ValueTrailerLen])
			rawsock.SetIov(&c.iov[iov+3], tail)
			iov += 4
			continue
		}
		tail[0], tail[1] = '\r', '\n'
		rawsock.SetIov(&c.iov[iov+1], l.Body[:size])
		rawsock.SetIov(&c.iov[iov+2], tail[:2])
		iov += 3
	}
	c.iovLo, c.iovHi, c.ref = 0, iov, -1
	r.wireOut = uint64(len(m.text)) + uint64(r.size) + 2*uint64(len(keys))
}

// appendMGet appends "MGET key..." as a RESP array.
func appendMGet(dst []byte, keys []uint32, keySize int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(1+len(keys)), 10)
	dst = append(dst, "\r\n$4\r\nMGET\r\n"...)
	for _, k := range keys {
		dst = appendBulkKey(dst, k, keySize)
	}
	return dst
}

// appendBulkKey appends a key as a RESP bulk string.
func appendBulkKey(dst []byte, key uint32, keySize int) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = lab.AppendKey(dst, key, keySize)
	return append(dst, "\r\n"...)
}

// onMGetHeader handles a reply line of an MGET: the array's header, then
// one line per element.
func (c *rconn) onMGetHeader(head *req, h resp.Header) error {
	m := &c.m
	if m.elems == 0 {
		switch {
		case h.Kind == resp.Error:
			c.complete(eServer, false)
		case h.Kind == resp.Array && h.N == int64(m.n):
			m.elem, m.elems, m.verdict, m.miss = 0, m.n, ok, false
		default:
			return fmt.Errorf("%w: %c%d reply to an MGET of %d keys", resp.ErrUnexpectedType, h.Kind, h.N, m.n)
		}
		return nil
	}
	switch {
	case h.Kind == resp.Bulk && h.N > int64(lab.MaxValueSize):
		return fmt.Errorf("%w: bulk length %d is beyond any value this client writes", resp.ErrMalformed, h.N)
	case h.Kind == resp.Bulk && h.N >= 0:
		c.st, c.valLen, c.pos, c.failKind = stPayload, h.N, 0, ok
		if h.N != sizeFor(c.pattern, c.mix, c.elemKey()) {
			c.failKind = eWrongLength
		}
	case h.Kind == resp.Bulk || h.Kind == resp.Null:
		if c.wk.w.Prefill {
			c.elementDone(eNilPrefill, false)
		} else {
			c.elementDone(ok, true)
		}
	default:
		return fmt.Errorf("%w: %c element in the reply to an MGET", resp.ErrUnexpectedType, h.Kind)
	}
	return nil
}

// elemKey is the key of the MGET element being read.
func (c *rconn) elemKey() uint32 { return c.m.keys[c.qHead*c.m.n+c.m.elem] }

// elementDone files one element's verdict; the last one completes the
// request, once: its first failure is its error, a nil among its keys
// (without --prefill) makes it a miss.
func (c *rconn) elementDone(kind errIdx, miss bool) {
	m := &c.m
	if m.verdict == ok && kind != ok {
		m.verdict = kind
	}
	m.miss = m.miss || miss
	m.elem++
	if m.elem < m.elems {
		return
	}
	m.elems = 0
	c.complete(m.verdict, m.verdict == ok && m.miss)
}

// moreKeys fills keys[1:] with draws distinct from each other and from
// keys[0]. A key drawn again is drawn anew a few times, then (a skewed
// distribution's hot keys) the next free key is taken, so an op ends in
// bounded time; the workload holds keys-per-op to at most the keyspace.
func (c *chooser) moreKeys(keys []uint32) {
	for i := 1; i < len(keys); i++ {
		k := c.base + c.keys.Next()
		for try := 0; try < 4 && taken(keys[:i], k); try++ {
			k = c.base + c.keys.Next()
		}
		for taken(keys[:i], k) {
			k = c.base + (k-c.base+1)%c.keyspace
		}
		keys[i] = k
	}
}

func taken(keys []uint32, k uint32) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
