package lab

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/resp"
)

// The raw engine: each worker is one OS thread, optionally pinned, running
// its own epoll loop over its share of the connections. Everything a worker
// touches on the hot path is its own; the coordinator reads the workers'
// state only after they stop (plus its live counters, live.go).

const (
	recvBufSize    = 8 << 10   // reply headers, value headers and trailers
	scratchSize    = 256 << 10 // --verify full, and the no-MSG_TRUNC fallback
	maxDiscardCall = 1 << 30
	epollTick      = 50 * time.Millisecond
	stopGrace      = 2 * time.Second
)

// schedule is the run's timeline, fixed before the workers start.
type schedule struct {
	base        time.Time // every timestamp is nanoseconds since base
	warmupEnd   int64
	measureEnd  int64
	drainEnd    int64 // in-flight requests still open then are abandoned
	seconds     int   // length of the per-second series
	prefillMode bool
}

// Phase indexes, in the order of phaseOrder.
const (
	phPrefill = iota
	phWarmup
	phMeasure
	phDrain
)

var phaseOrder = [4]Phase{PhasePrefill, PhaseWarmup, PhaseMeasure, PhaseDrain}

// phaseAt is the phase a request completing at t belongs to.
func (s *schedule) phaseAt(t int64) int {
	switch {
	case s.prefillMode:
		return phPrefill
	case t < s.warmupEnd:
		return phWarmup
	case t < s.measureEnd:
		return phMeasure
	}
	return phDrain
}

const (
	opGet = 0
	opSet = 1
)

var opNames = [2]Op{OpGet, OpSet}

var errorKinds = []ErrorKind{ErrWrongLength, ErrBadContent, ErrNilPrefill, ErrServer, ErrProtocol, ErrTimeout, ErrConnReset}

type errIdx int8

const (
	ok errIdx = iota - 1
	eWrongLength
	eBadContent
	eNilPrefill
	eServer
	eProtocol
	eTimeout
	eConn
	numErrKinds
)

type secStat struct{ ops, bytes, errors uint64 }

// Per-second latency is kept in a small log histogram per second: latBuckets
// buckets from 1 µs to an hour, each ~9% wide, so a second's p99 is within
// ±5%. The window's own percentiles come from the HDR histograms.
const latBuckets = 256

var latStep = math.Log(histHighestUs) / latBuckets

func latBucket(us int64) int {
	if us <= 1 {
		return 0
	}
	return min(int(math.Log(float64(us))/latStep), latBuckets-1)
}

// latBucketValue is a bucket's geometric middle, in microseconds.
func latBucketValue(i int) float64 { return math.Exp((float64(i) + 0.5) * latStep) }

// opStats is one operation's figures in the measured window, per worker.
type opStats struct {
	lat, ttfb      *hdr.Histogram
	clamped        uint64
	ops, payload   uint64
	wireOut        uint64
	wireIn         uint64
	misses         uint64
	checked, fails uint64
	errs           [numErrKinds]uint64
	series         []secStat
	secLat         []uint32 // len(series) x latBuckets counts
}

type phaseStats struct {
	ops             [2]uint64
	wireOut, wireIn uint64
	errs            [numErrKinds]uint64
}

// worker owns a thread, an epoll instance and its connections.
type worker struct {
	id      int
	cpu     int // -1 when not pinned
	w       *Workload
	layout  *ValueLayout
	sched   *schedule
	stop    *atomic.Bool // set by the coordinator on Ctrl-C
	addr    string
	auth    []byte // AUTH command to replay after a reconnect, or nil
	epfd    int
	conns   []*rconn
	scratch []byte
	noTrunc bool

	measure   [2]opStats
	phases    [4]phaseStats
	abandoned uint64
	dead      int

	// Live counts, read by the coordinator's tick while the run goes on.
	live liveWorker

	vk *vkState // the valkey-go engine's state; nil for the raw engine

	usageStart, usageEnd threadUsage
	usageState           int // 0 before the window, 1 inside, 2 after
	stopSeen             int64
	err                  error
}

// req is one request in flight.
type req struct {
	op      int
	key     uint32
	issued  int64
	sentAt  int64
	firstAt int64
	wireOut uint64
}

type recvState int8

const (
	stHeader recvState = iota
	stPayload
)

// rconn is one connection's state machine.
type rconn struct {
	fd    int
	index int
	wk    *worker
	rng   *rand.Rand
	zipf  *rand.Zipf

	gen        uint64
	seqNext    uint32
	prefillEnd uint32 // prefill: keys [seqNext, prefillEnd)

	// send side
	cmd      []byte // request header (GET command, or SET up to the value)
	valHdr   [valueHeaderLen]byte
	tail     [valueTrailerLen + 2]byte // value trailer and the closing CRLF
	iov      [4]unix.Iovec
	iovLo    int
	iovHi    int
	sending  bool
	sendLeft int

	// in flight, oldest first
	q     []req
	qHead int
	qLen  int

	// receive side
	rbuf     []byte
	rlo, rhi int
	st       recvState
	lastRead int64
	valLen   int64 // bulk length of the reply being read
	pos      int64 // bytes of value+CRLF consumed
	replyIn  uint64
	failKind errIdx
	vhdr     [valueHeaderLen]byte
	vtail    [valueTrailerLen + 2]byte
	dead     bool
}

func (w *worker) now() int64 { return int64(time.Since(w.sched.base)) }

// run is the worker's loop. It returns when every connection has drained
// or died, or the drain deadline passed.
func (w *worker) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if w.cpu >= 0 {
		if err := pinThread(w.cpu); err != nil {
			w.err = err
			return
		}
	}
	events := make([]unix.EpollEvent, len(w.conns)+1)
	for _, c := range w.conns {
		c.fill(w.now())
	}
	for {
		t := w.now()
		w.trackUsage(t)
		if w.finished(t) {
			break
		}
		w.checkTimeouts(t)
		n, err := unix.EpollWait(w.epfd, events, int(epollTick/time.Millisecond))
		if err != nil && err != unix.EINTR {
			w.err = fmt.Errorf("epoll wait: %w", err)
			break
		}
		for i := 0; i < n; i++ {
			c := w.conns[events[i].Pad]
			if c.dead {
				continue
			}
			ev := events[i].Events
			if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
				if err := c.onReadable(); err != nil {
					c.fail(err)
					continue
				}
			}
			if ev&unix.EPOLLOUT != 0 && c.sending {
				if err := c.flush(w.now()); err != nil {
					c.fail(err)
					continue
				}
			}
			c.fill(w.now())
		}
	}
	if w.usageState == 1 {
		w.usageEnd = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 2
	}
	// Requests still open now were cut off by the end of the run, not
	// failed by the server: count them apart. Their connections carry
	// half-read replies, so they cannot serve another stage.
	for _, c := range w.conns {
		if !c.dead && (c.qLen > 0 || c.sending) {
			w.abandoned += uint64(c.qLen)
			c.qLen, c.sending = 0, false
			c.close()
			c.dead = true
			w.dead++
		}
	}
}

// shutdown closes the worker's sockets and epoll instance.
func (w *worker) shutdown() {
	for _, c := range w.conns {
		c.close()
	}
	if w.epfd >= 0 {
		unix.Close(w.epfd)
		w.epfd = -1
	}
}

func (w *worker) trackUsage(t int64) {
	if w.sched.prefillMode {
		return
	}
	if w.usageState == 0 && t >= w.sched.warmupEnd {
		w.usageStart = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 1
	}
	if w.usageState == 1 && t >= w.sched.measureEnd {
		w.usageEnd = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 2
	}
}

// issuing says whether new requests may start at t.
func (w *worker) issuing(t int64) bool {
	if w.stop.Load() {
		return false
	}
	return w.sched.prefillMode || t < w.sched.measureEnd
}

func (w *worker) finished(t int64) bool {
	if t >= w.sched.drainEnd {
		return true
	}
	if w.stop.Load() {
		// Interrupted: give replies in flight a short grace, not the
		// whole request timeout.
		if w.stopSeen == 0 {
			w.stopSeen = t
		}
		if t-w.stopSeen > int64(stopGrace) {
			return true
		}
	}
	for _, c := range w.conns {
		if c.dead {
			continue
		}
		if c.qLen > 0 || c.sending {
			return false
		}
		if w.issuing(t) && c.wantsMore() {
			return false
		}
	}
	return true
}

func (w *worker) checkTimeouts(t int64) {
	limit := int64(w.w.RequestTimeout)
	for _, c := range w.conns {
		if c.dead || c.qLen == 0 {
			continue
		}
		if t-c.q[c.qHead].issued > limit {
			c.failAll(eTimeout, t)
			c.reconnect()
		}
	}
}

// wantsMore is false once a prefill connection has written its keys.
func (c *rconn) wantsMore() bool {
	if c.wk.sched.prefillMode {
		return c.seqNext < c.prefillEnd
	}
	return true
}

// fill starts requests until the pipeline is full.
func (c *rconn) fill(t int64) {
	for !c.dead && !c.sending && c.qLen < len(c.q) && c.wk.issuing(t) && c.wantsMore() {
		c.issue(t)
		if err := c.flush(t); err != nil {
			c.fail(err)
			return
		}
	}
}

func (c *rconn) pickKey() uint32 {
	w := c.wk.w
	switch {
	case c.wk.sched.prefillMode, w.KeyDist.Kind == KeySequential:
		k := c.seqNext
		c.seqNext++
		return k % uint32(w.Keyspace)
	case c.zipf != nil:
		return uint32(c.zipf.Uint64())
	}
	return uint32(c.rng.Intn(w.Keyspace))
}

// issue builds the next request into the connection's send buffers.
func (c *rconn) issue(t int64) {
	w := c.wk.w
	op := opGet
	if c.wk.sched.prefillMode || (w.Ratio.Sets > 0 && c.rng.Intn(w.Ratio.Gets+w.Ratio.Sets) >= w.Ratio.Gets) {
		op = opSet
	}
	key := c.pickKey()
	r := req{op: op, key: key, issued: t}
	if op == opGet {
		c.cmd = appendGet(c.cmd[:0], key, w.KeySize)
		setIov(&c.iov[0], c.cmd)
		c.iovLo, c.iovHi = 0, 1
		r.wireOut = uint64(len(c.cmd))
	} else {
		size := c.wk.layout.Size
		c.gen++
		gen := uint64(c.index)<<40 | c.gen
		c.cmd = appendSetHeader(c.cmd[:0], key, w.KeySize, size)
		setIov(&c.iov[0], c.cmd)
		if size >= MinVerifiableSize {
			c.wk.layout.PutHeader(c.valHdr[:], key, gen)
			c.wk.layout.PutTrailer(c.tail[:valueTrailerLen], key, gen)
			c.tail[valueTrailerLen], c.tail[valueTrailerLen+1] = '\r', '\n'
			setIov(&c.iov[1], c.valHdr[:])
			setIov(&c.iov[2], c.wk.layout.Body[valueHeaderLen:size-valueTrailerLen])
			setIov(&c.iov[3], c.tail[:])
			c.iovHi = 4
		} else {
			setIov(&c.iov[1], c.wk.layout.Body[:size])
			c.tail[0], c.tail[1] = '\r', '\n'
			setIov(&c.iov[2], c.tail[:2])
			c.iovHi = 3
		}
		c.iovLo = 0
		r.wireOut = uint64(len(c.cmd)) + uint64(size) + 2
	}
	c.sendLeft = int(r.wireOut)
	c.sending = true
	idx := (c.qHead + c.qLen) % len(c.q)
	c.q[idx] = r
	c.qLen++
}

// flush writes as much of the current request as the socket takes.
func (c *rconn) flush(t int64) error {
	for c.sending {
		n, err := writeIov(c.fd, c.iov[c.iovLo:c.iovHi])
		if err != nil {
			if isAgain(err) {
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
		for n > 0 {
			l := int(c.iov[c.iovLo].Len)
			if n < l {
				c.iov[c.iovLo].Base = (*byte)(unsafe.Add(unsafe.Pointer(c.iov[c.iovLo].Base), n))
				c.iov[c.iovLo].SetLen(l - n)
				break
			}
			n -= l
			c.iovLo++
		}
	}
	return nil
}

// onReadable consumes everything the socket has.
func (c *rconn) onReadable() error {
	for {
		if err := c.process(); err != nil {
			return err
		}
		n, err := c.readMore()
		if err != nil {
			if isAgain(err) {
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
			if c.failKind != ok || w.w.Verify != VerifyFull {
				if !w.noTrunc {
					n, err := recvDiscard(c.fd, int(min(want, maxDiscardCall)))
					if err == unix.EINVAL || err == unix.EOPNOTSUPP {
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
			n, err := recvInto(c.fd, w.scratch[:min(want, int64(len(w.scratch)))])
			if n > 0 {
				c.gotBytes(n)
				if c.failKind == ok && w.w.Verify == VerifyFull && !w.layout.CheckBody(c.pos, w.scratch[:n]) {
					c.failKind = eBadContent
				}
				c.pos += int64(n)
			}
			return n, err
		}
	}
	if c.rlo == c.rhi {
		c.rlo, c.rhi = 0, 0
	} else if c.rhi == len(c.rbuf) {
		if c.rlo == 0 {
			return 0, resp.ErrLineTooLong
		}
		c.rhi = copy(c.rbuf, c.rbuf[c.rlo:c.rhi])
		c.rlo = 0
	}
	n, err := recvInto(c.fd, c.rbuf[c.rhi:])
	if n > 0 {
		c.gotBytes(n)
		c.rhi += n
	}
	return n, err
}

// checkedRange is the part of the value that is not looked at in the small
// buffer: the body for --verify header and full, everything but the CRLF
// for none, and all of it for a reply already known to be wrong.
func (c *rconn) checkedRange() (lo, hi int64) {
	if c.failKind != ok || c.wk.w.Verify == VerifyNone || c.valLen < MinVerifiableSize {
		return 0, c.valLen
	}
	return valueHeaderLen, c.valLen - valueTrailerLen
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
	prefilled := c.wk.w.Prefill
	switch {
	case h.Kind == resp.Error:
		c.complete(eServer, false)
	case head.op == opSet && h.Kind == resp.Simple:
		c.complete(ok, false)
	case h.Kind == resp.Bulk && h.N > int64(MaxValueSize):
		return fmt.Errorf("%w: bulk length %d is beyond any value this client writes", resp.ErrMalformed, h.N)
	case head.op == opGet && h.Kind == resp.Bulk && h.N >= 0:
		c.st, c.valLen, c.pos, c.failKind = stPayload, h.N, 0, ok
		if h.N != c.wk.layout.Size {
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
	if off < valueHeaderLen {
		copy(c.vhdr[off:], p)
	}
	tailLo := c.valLen - valueTrailerLen
	if c.valLen < MinVerifiableSize {
		tailLo = c.valLen
	}
	if end := off + int64(len(p)); end > tailLo {
		s := max(off, tailLo)
		copy(c.vtail[s-tailLo:], p[s-off:])
	}
	if c.failKind == ok && c.wk.w.Verify == VerifyFull && !c.wk.layout.CheckBody(off, p) {
		c.failKind = eBadContent
	}
}

func (c *rconn) finishBulk(head *req) {
	c.st = stHeader
	kind := c.failKind
	n := c.valLen
	crlf := c.vtail[valueTrailerLen:]
	if n < MinVerifiableSize {
		crlf = c.vtail[:2]
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		// The framing itself is off; the connection cannot be trusted.
		c.complete(eProtocol, false)
		c.fail(fmt.Errorf("%w: bulk reply not closed by CRLF", resp.ErrMalformed))
		return
	}
	if kind == ok && c.wk.w.Verify != VerifyNone && n >= MinVerifiableSize {
		if _, good := c.wk.layout.CheckEnds(c.vhdr[:], c.vtail[:valueTrailerLen], head.key); !good {
			kind = eBadContent
		}
	}
	c.complete(kind, false)
}

// complete retires the oldest request and records it.
func (c *rconn) complete(kind errIdx, miss bool) {
	r := c.q[c.qHead]
	c.qHead = (c.qHead + 1) % len(c.q)
	c.qLen--
	in := c.replyIn
	c.replyIn = 0
	c.wk.record(&r, kind, miss, c.lastRead, in)
}

// record files one finished request under the phase it finished in. Only
// requests that complete inside the measured window count as throughput,
// and their bytes are counted once, here.
func (w *worker) record(r *req, kind errIdx, miss bool, t int64, wireIn uint64) {
	phase := w.sched.phaseAt(t)
	ps := &w.phases[phase]
	ps.ops[r.op]++
	ps.wireOut += r.wireOut
	ps.wireIn += wireIn
	if kind != ok {
		ps.errs[kind]++
	}
	sent := r.sentAt
	if sent == 0 {
		sent = r.issued
	}
	w.live.add(phase, r.op, kind, miss, t-sent)
	if phase != phMeasure {
		return
	}
	st := &w.measure[r.op]
	st.wireOut += r.wireOut
	st.wireIn += wireIn
	sec := min(int((t-w.sched.warmupEnd)/int64(time.Second)), len(st.series)-1)
	if r.op == opGet {
		st.checked++
		if kind == eWrongLength || kind == eBadContent {
			st.fails++
		}
	}
	if kind != ok {
		st.errs[kind]++
		st.series[sec].errors++
		return
	}
	if miss {
		st.misses++
		return
	}
	if recordUs(st.lat, t-sent) {
		st.clamped++
	}
	st.secLat[sec*latBuckets+latBucket((t-sent)/1000)]++
	if r.op == opGet && r.firstAt > 0 {
		recordUs(st.ttfb, r.firstAt-sent)
	}
	size := uint64(w.layout.Size)
	st.ops++
	st.payload += size
	st.series[sec].ops++
	st.series[sec].bytes += size
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
	c.failAll(kind, c.wk.now())
	c.reconnect()
}

func (c *rconn) close() {
	if c.fd >= 0 {
		_ = unix.EpollCtl(c.wk.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
		unix.Close(c.fd)
		c.fd = -1
	}
}

// reconnect replaces the socket. A server that refuses is gone: the
// connection is dead for the rest of the run.
func (c *rconn) reconnect() {
	c.close()
	c.rlo, c.rhi, c.st, c.replyIn = 0, 0, stHeader, 0
	if !c.wk.issuing(c.wk.now()) {
		c.dead = true
		c.wk.dead++
		return
	}
	fd, err := dialRaw(c.wk.addr, 2*time.Second)
	if err == nil && c.wk.auth != nil {
		err = authRaw(fd, c.wk.auth)
	}
	if err == nil {
		err = c.wk.register(c, fd)
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		c.dead = true
		c.wk.dead++
		if c.wk.err == nil {
			c.wk.err = fmt.Errorf("reconnect to %s: %w", c.wk.addr, err)
		}
	}
}

func (w *worker) register(c *rconn, fd int) error {
	c.fd = fd
	// MSG_TRUNC drops payload without copying only on TCP; on any other
	// socket the kernel would copy into the small discard buffer.
	if proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || proto != unix.IPPROTO_TCP {
		w.noTrunc = true
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
